// The trainers' AdamW parameter groups: weight decay on matrices only (not on biases and norms).
#pragma once

#include <memory>
#include <vector>

#include "strata/core/tensor.h"
#include "strata/optim/adamw.h"

namespace strata::examples {

class LrScheduleConfig;
class OptimizerConfig;

struct AdamWGroups {
  std::vector<optim::ParamGroup> groups;  // >= 2-D parameters with the weight decay, the rest without
  optim::AdamWOptions defaults;           // lr, betas and `eps` from the settings
};

AdamWGroups adamw_groups(const std::vector<Tensor>& params, const LrScheduleConfig& schedule,
                         const OptimizerConfig& settings, double eps);

// AdamW over adamw_groups(params, schedule, settings, eps).
std::unique_ptr<optim::AdamW> make_adamw(const std::vector<Tensor>& params, const LrScheduleConfig& schedule,
                                         const OptimizerConfig& settings, double eps);

}  // namespace strata::examples
