#include "examples/common/adamw_groups.h"

#include "examples/common/trainer_common.pb.h"

namespace strata::examples {

AdamWGroups adamw_groups(const std::vector<Tensor>& params, const LrScheduleConfig& schedule,
                         const OptimizerConfig& settings, double eps) {
  std::vector<Tensor> decay, no_decay;
  for (const Tensor& p : params) (p.dim() >= 2 ? decay : no_decay).push_back(p);
  const optim::AdamWOptions ao =
      optim::AdamWOptions(schedule.lr()).betas(settings.beta1(), settings.beta2()).eps(eps);
  return {{optim::ParamGroup(decay, optim::AdamWOptions(ao).weight_decay(settings.weight_decay())),
           optim::ParamGroup(no_decay, optim::AdamWOptions(ao).weight_decay(0.0))},
          ao};
}

std::unique_ptr<optim::AdamW> make_adamw(const std::vector<Tensor>& params, const LrScheduleConfig& schedule,
                                         const OptimizerConfig& settings, double eps) {
  AdamWGroups g = adamw_groups(params, schedule, settings, eps);
  return std::make_unique<optim::AdamW>(std::move(g.groups), g.defaults);
}

}  // namespace strata::examples
