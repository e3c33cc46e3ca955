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
#include "strata/core/tensor_source.h"
#include "strata/nn/ordered_dict.h"
#include "strata/optim/state_store.h"

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
  // update or if it is not in this optimizer. For a parameter placed in a StateStore, only the
  // scalars the optimizer keeps itself ("step"); state_dict() has the rest.
  const TensorDict* state_of(const Tensor& param) const;

  // PyTorch's optimizer state as a flat map: "state.<i>.<name>" for parameter i (in
  // parameters() order) and "param_groups.<g>.lr" per group. Tensors are detached copies.
  TensorDict state_dict() const;
  // state_dict() for a checkpoint that streams placed state: each placed buffer is an undefined
  // tensor in the dict, with its reader in `sources` under the same key, so no placed state is
  // gathered in memory (io::save_checkpoint writes it a chunk at a time), and state beside the
  // parameters is the optimizer's own tensors, not copies (no second copy on the device): write
  // the dict before the next step.
  TensorDict state_dict(TensorSources& sources) const;
  // Replaces all state with `state` (copied onto each parameter's device and dtype) and
  // restores each group's lr. Validates everything first and throws ValueError naming each
  // bad key: unknown keys, indices out of range, shape mismatches, incomplete states.
  void load_state_dict(const TensorDict& state);

  // ---- Where per-element state lives (AdamW's moments, SGD's momentum) ----
  // Selects parameters by their index in parameters() order.
  using ParamFilter = std::function<bool(size_t index, const Tensor& param)>;
  // Keeps the per-element state of the parameters `which` selects (all when empty) in `store`.
  // Their updates run on the host a chunk at a time: the gradient (and the parameter, when it
  // is on a device) come to host memory, each chunk of state is acquired, updated as the
  // all-in-memory optimizer updates it (the same bits), and released, and the parameter goes
  // back to its device. State they already have moves into the store; state_dict() gives it
  // back on the CPU. Throws NotImplementedError for an optimizer without host chunk updates.
  void place_state(std::shared_ptr<StateStore> store, const ParamFilter& which = {});
  // Bytes of per-element state the selected parameters carry once updated.
  uint64_t state_bytes(const ParamFilter& which = {}) const;
  const StateStore* state_store() const { return store_.get(); }
  bool state_placed(size_t index) const { return index < placed_.size() && placed_[index]; }
  // Waits for the store's write-backs (its failures surface here).
  void flush_state();

 protected:
  // One chunk of a parameter's update on the host: `numel` elements of the parameter, its
  // gradient and its buffers (buffer_names() order), all of `dtype`; `first` on the parameter's
  // first update (its buffers were zero-filled).
  struct HostChunk {
    DType dtype = DType::f32;
    void* param = nullptr;
    const void* grad = nullptr;
    std::vector<void*> buffers;
    int64_t numel = 0;
    bool first = false;
  };
  // An optimizer that supports a StateStore overrides these three. The per-element state a
  // group's parameters carry (in state_names() order); the rest of state_names() are scalars the
  // optimizer keeps itself.
  virtual std::vector<std::string> buffer_names(const OptimizerOptions& options) const;
  // Advances a parameter's scalar state once per update, before its chunks (AdamW: "step").
  virtual void advance_scalars(TensorDict& scalars) const;
  virtual void update_host_chunk(const OptimizerOptions& options, const TensorDict& scalars,
                                 const HostChunk& chunk) const;

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
  static constexpr size_t kNoParameter = ~size_t(0);
  // The update of a parameter whose state is in store_; the next placed parameter to update
  // (kNoParameter: none) is read ahead.
  void update_placed(size_t index, const OptimizerOptions& options, Tensor& param, const Tensor& grad,
                     size_t next_index, int64_t next_numel);
  TensorDict state_dict_impl(TensorSources* sources) const;
  // Adds placed parameter `index`'s state to `out` as "state.<index>.<name>", in state_names()
  // order: scalars cloned, buffers gathered on the CPU or, with `sources`, left undefined with
  // a reader each.
  void add_placed_state(size_t index, const Tensor& param, TensorDict& out, TensorSources* sources) const;
  // Copies elements [begin, end) of placed buffer `buffer` (buffer_names() order) of parameter
  // `index` to `dst`, a store chunk at a time.
  void read_placed(size_t index, size_t buffer, int64_t numel, DType dtype, int64_t begin, int64_t end,
                   void* dst) const;
  // Writes `state` (state_names() -> tensors) as placed parameter `index`'s state.
  void load_placed(size_t index, const OptimizerOptions& options, const Tensor& param,
                   const TensorDict& state);
  const OptimizerOptions& options_of(size_t index) const;

  std::vector<TensorDict> state_;  // one per parameter, in parameters() order
  std::shared_ptr<StateStore> store_;
  std::vector<bool> placed_;  // per parameter: its per-element state is in store_
};

}  // namespace strata::optim
