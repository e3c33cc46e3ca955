// Optimizer base (torch.optim.Optimizer in C++): parameter groups with per-group options,
// per-parameter state, zero_grad, and a state dict of that state for checkpoints.
//
//   std::vector<ParamGroup> groups = {
//       ParamGroup(decay_params, AdamWOptions(6e-4).weight_decay(0.1)),
//       ParamGroup(no_decay_params, AdamWOptions(6e-4).weight_decay(0.0))};
//   AdamW opt(groups, AdamWOptions(6e-4));
//   opt.zero_grad(); loss.backward(); opt.step();
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "strata/core/tensor.h"
#include "strata/nn/ordered_dict.h"

namespace strata::optim {

// One optimizer's per-parameter state or its checkpoint form: ordered name -> tensor.
using TensorDict = nn::OrderedDict<Tensor>;

// Options every optimizer has; each optimizer's options class derives from
// OptimizerOptionsBase<Its>, which adds chaining setters (AdamWOptions(1e-3).weight_decay(0)).
class OptimizerOptions {
 public:
  virtual ~OptimizerOptions() = default;
  virtual std::unique_ptr<OptimizerOptions> clone() const = 0;
  // Throws ValueError naming `optimizer` and the bad option (PyTorch's checks).
  virtual void validate(const char* optimizer) const;
  double lr() const { return lr_; }
  double weight_decay() const { return weight_decay_; }
  void set_lr(double lr) { lr_ = lr; }
  void set_weight_decay(double weight_decay) { weight_decay_ = weight_decay; }

 protected:
  OptimizerOptions(double lr, double weight_decay) : lr_(lr), weight_decay_(weight_decay) {}
  OptimizerOptions(const OptimizerOptions&) = default;
  OptimizerOptions& operator=(const OptimizerOptions&) = default;
  double lr_;
  double weight_decay_;
};

template <class Derived>
class OptimizerOptionsBase : public OptimizerOptions {
 public:
  using OptimizerOptions::lr;
  using OptimizerOptions::weight_decay;
  Derived& lr(double v) {
    lr_ = v;
    return static_cast<Derived&>(*this);
  }
  Derived& weight_decay(double v) {
    weight_decay_ = v;
    return static_cast<Derived&>(*this);
  }
  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<Derived>(static_cast<const Derived&>(*this));
  }

 protected:
  using OptimizerOptions::OptimizerOptions;
};

// Parameters that share options. A group built without options takes the optimizer's
// defaults when the optimizer adopts it.
class ParamGroup {
 public:
  ParamGroup(std::vector<Tensor> params) : params_(std::move(params)) {}
  ParamGroup(std::vector<Tensor> params, const OptimizerOptions& options)
      : params_(std::move(params)), options_(options.clone()) {}
  ParamGroup(const ParamGroup& other);
  ParamGroup& operator=(const ParamGroup& other);
  ParamGroup(ParamGroup&&) = default;
  ParamGroup& operator=(ParamGroup&&) = default;

  std::vector<Tensor>& params() { return params_; }
  const std::vector<Tensor>& params() const { return params_; }
  bool has_options() const { return options_ != nullptr; }
  OptimizerOptions& options();
  const OptimizerOptions& options() const;
  double lr() const { return options().lr(); }
  void set_lr(double lr) { options().set_lr(lr); }
  // The lr the group was adopted with; LR schedules scale it (PyTorch's 'initial_lr').
  double initial_lr() const { return initial_lr_; }

 private:
  friend class Optimizer;
  std::vector<Tensor> params_;
  std::unique_ptr<OptimizerOptions> options_;
  double initial_lr_ = 0.0;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter that has a gradient (parameters without one are skipped).
  virtual void step() = 0;
  // Drops (set_to_none) or zero-fills the gradients of every parameter.
  void zero_grad(bool set_to_none = true);

  // Adopts a group: fills in default options, checks its options' type and values, and
  // rejects parameters already in another group or that are not floating leaves.
  void add_param_group(ParamGroup group);
  std::vector<ParamGroup>& param_groups() { return groups_; }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  const OptimizerOptions& defaults() const { return *defaults_; }
  // Parameters in group order; a parameter's index here is its index in state_dict().
  std::vector<Tensor> parameters() const;
  size_t num_parameters() const { return state_.size(); }

  // The state of `param` ("step", "exp_avg", "momentum_buffer", ...); null before its first
  // update or if it is not in this optimizer.
  const TensorDict* state_of(const Tensor& param) const;

  // PyTorch's optimizer state as a flat map: "state.<i>.<name>" for parameter i (in
  // parameters() order) and "param_groups.<g>.lr" per group. Tensors are detached copies.
  TensorDict state_dict() const;
  // Replaces all state with `state` (copied onto each parameter's device and dtype) and
  // restores each group's lr. Validates everything first and throws ValueError naming each
  // bad key: unknown keys, indices out of range, shape mismatches, incomplete states.
  void load_state_dict(const TensorDict& state);

 protected:
  Optimizer(std::vector<ParamGroup> groups, const OptimizerOptions& defaults, const char* name);
  // Names of the state one parameter carries (all present or all absent), e.g.
  // {"step", "exp_avg", "exp_avg_sq"}; "step" is a one-element f64 CPU tensor.
  virtual std::vector<std::string> state_names() const = 0;
  // For step(): calls fn(options of its group, parameter, gradient, state) for every
  // parameter that has a gradient, in parameters() order, under NoGradGuard, and bumps the
  // parameter's version afterwards. Checks that both are dense CPU f32/f64 tensors of one
  // dtype and shape (NotImplementedError otherwise: the update loops index them directly).
  void for_each_update(
      const std::function<void(const OptimizerOptions&, Tensor& param, const Tensor& grad, TensorDict& state)>& fn);
  const char* name() const { return name_; }

 private:
  const char* name_;
  std::unique_ptr<OptimizerOptions> defaults_;
  std::vector<ParamGroup> groups_;
  std::vector<TensorDict> state_;  // one per parameter, in parameters() order
};

}  // namespace strata::optim
