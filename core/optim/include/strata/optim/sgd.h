// SGD with momentum, dampening, Nesterov and (coupled) weight decay: torch.optim.SGD.
#pragma once

#include "strata/optim/optimizer.h"

namespace strata::optim {

class SGDOptions : public OptimizerOptionsBase<SGDOptions> {
 public:
  explicit SGDOptions(double lr) : OptimizerOptionsBase(lr, 0.0) {}
  SGDOptions& momentum(double v) { momentum_ = v; return *this; }
  SGDOptions& dampening(double v) { dampening_ = v; return *this; }
  SGDOptions& nesterov(bool v) { nesterov_ = v; return *this; }
  double momentum() const { return momentum_; }
  double dampening() const { return dampening_; }
  bool nesterov() const { return nesterov_; }
  void validate(const char* optimizer) const override;

 private:
  double momentum_ = 0.0;
  double dampening_ = 0.0;
  bool nesterov_ = false;
};

// The update, in torch.optim.SGD's order (_single_tensor_sgd):
//   d = g + weight_decay * p
//   buf = d on the first step, else momentum * buf + (1 - dampening) * d
//   d = nesterov ? d + momentum * buf : buf          (when momentum != 0)
//   p = p - lr * d
// State per parameter: "momentum_buffer" (only with momentum != 0).
class SGD final : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, const SGDOptions& options);
  SGD(std::vector<ParamGroup> groups, const SGDOptions& defaults);
  void step() override;

 protected:
  std::vector<std::string> state_names() const override { return {"momentum_buffer"}; }
  std::vector<std::string> buffer_names(const OptimizerOptions& options) const override;
  void update_host_chunk(const OptimizerOptions& options, const TensorDict& scalars,
                         const HostChunk& chunk) const override;
};

}  // namespace strata::optim
