// AdamW (Adam with decoupled weight decay): torch.optim.AdamW, non-amsgrad, single-tensor.
#pragma once

#include <utility>

#include "strata/optim/optimizer.h"

namespace strata::optim {

class AdamWOptions : public OptimizerOptionsBase<AdamWOptions> {
 public:
  explicit AdamWOptions(double lr = 1e-3) : OptimizerOptionsBase(lr, 1e-2) {}
  AdamWOptions& betas(std::pair<double, double> b) { betas_ = b; return *this; }
  AdamWOptions& betas(double beta1, double beta2) { betas_ = {beta1, beta2}; return *this; }
  AdamWOptions& eps(double v) { eps_ = v; return *this; }
  std::pair<double, double> betas() const { return betas_; }
  double eps() const { return eps_; }
  void validate(const char* optimizer) const override;

 private:
  std::pair<double, double> betas_{0.9, 0.999};
  double eps_ = 1e-8;
};

// The update, in torch.optim.AdamW's order (_single_tensor_adamw, amsgrad=False):
//   step += 1
//   p = p * (1 - lr * weight_decay)
//   m = beta1 * m + (1 - beta1) * g
//   v = beta2 * v + (1 - beta2) * g * g
//   p = p - lr / (1 - beta1^step) * m / (sqrt(v) / sqrt(1 - beta2^step) + eps)
// State per parameter: "step" (f64 CPU scalar), "exp_avg", "exp_avg_sq".
class AdamW final : public Optimizer {
 public:
  AdamW(std::vector<Tensor> params, const AdamWOptions& options = AdamWOptions());
  AdamW(std::vector<ParamGroup> groups, const AdamWOptions& defaults);
  void step() override;

 protected:
  std::vector<std::string> state_names() const override { return {"step", "exp_avg", "exp_avg_sq"}; }
  std::vector<std::string> buffer_names(const OptimizerOptions&) const override {
    return {"exp_avg", "exp_avg_sq"};
  }
  void advance_scalars(TensorDict& scalars) const override;
  void update_host_chunk(const OptimizerOptions& options, const TensorDict& scalars,
                         const HostChunk& chunk) const override;
};

}  // namespace strata::optim
