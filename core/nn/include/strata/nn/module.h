// Module: the base of every layer and model. Parameters, buffers and child modules with
// libtorch's vocabulary and PyTorch's dotted names, train/eval, state_dict, and the module
// scope that every forward runs in: the module's path as named_modules() gives it
// ("transformer.h.3.attn"), so a saved tensor, a cache rule, a plan key and a state_dict name
// all say the same thing.
//
//   class Block : public strata::nn::Module {
//    public:
//     Block() {
//       fc = register_module("fc", std::make_shared<Linear>(LinearOptions(4, 4)));
//       mark_as_block();
//     }
//     Tensor forward(const Tensor& x) override { return (*fc)(x); }  // (*block)(x) scopes it
//     std::shared_ptr<Linear> fc;
//   };
//
// Multi-input forwards: define `Tensor forward(const Tensor& x, const Tensor& mask)` and call it
// as `block->call(&Block::forward, x, mask)` (which also runs a block as a recompute segment when
// the policy asks), or open the scope with `ModuleScope scope(*this);` at the top of any public
// member function: a public entry point that does so runs in the same scope however it is called.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "strata/autograd/scope.h"
#include "strata/core/tensor.h"
#include "strata/nn/ordered_dict.h"

namespace strata::nn {

// Ordered name -> tensor map with PyTorch's state_dict names ("h.0.attn.c_attn.weight").
using StateDict = OrderedDict<Tensor>;

class Module;

// Drops (set_to_none) or zero-fills the .grad() of each tensor (Module::zero_grad and
// Optimizer::zero_grad).
void zero_grad(const std::vector<Tensor>& tensors, bool set_to_none = true);

// Points `param` at `data`'s storage and view, keeping its autograd state (requires_grad, grad,
// hooks), so every handle on the parameter sees the new data: PyTorch's `param.data = data`
// (Module::to; a pager placing a parameter straight into its store).
void set_data(Tensor& param, const Tensor& data);

// Pushes `module`'s scope (its path and block flag) for the lifetime of this object; pushes
// nothing for a module without a path (a root model, or one never registered) or one whose scope
// is already the innermost (a public forward that opens its own scope, called through call()).
class ModuleScope {
 public:
  explicit ModuleScope(const Module& module);
  ModuleScope(const ModuleScope&) = delete;
  ModuleScope& operator=(const ModuleScope&) = delete;

 private:
  std::optional<autograd::ScopeGuard> guard_;
};

class Module : public std::enable_shared_from_this<Module> {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // ---- registration (names: non-empty, no '.', unique within this module) ----

  // Makes `tensor` (detached first if it is not a leaf) a parameter of this module: sets
  // requires_grad, marks it is_parameter, and re-tags its storage MemoryCategory::Parameter.
  // Returns the registered handle (the same tensor object the caller passed).
  Tensor register_parameter(const std::string& name, Tensor tensor, bool requires_grad = true);
  // A tensor that is state but not trained (running stats, masks). Non-persistent buffers
  // are left out of state_dict(), as in PyTorch.
  Tensor register_buffer(const std::string& name, Tensor tensor, bool persistent = true);
  // State that another framework's layer of the same kind registers and this one does not hold (PyG's
  // RGATConv registers w, l1, b1, l2, b2, which its default path never reads): load_state_dict passes
  // over those keys, strict or not, instead of calling them unexpected.
  void register_absent_state(const std::string& name);
  // Adopts `module` as a child named `name` and returns it, typed.
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    static_assert(std::is_base_of_v<Module, M>, "register_module: M must derive from strata::nn::Module");
    attach_child(name, module);
    return module;
  }

  // ---- traversal (PyTorch order: own entries first, then children depth-first) ----

  // Tied parameters (one tensor registered twice) are listed once, under their first name.
  StateDict named_parameters(bool recurse = true) const;
  std::vector<Tensor> parameters(bool recurse = true) const;
  StateDict named_buffers(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  OrderedDict<std::shared_ptr<Module>> named_children() const;
  std::vector<std::shared_ptr<Module>> children() const;
  // This module (under "") and every descendant, preorder, each once. The entry for this
  // module does not own it when it is not held by a shared_ptr.
  OrderedDict<std::shared_ptr<Module>> named_modules() const;
  std::vector<std::shared_ptr<Module>> modules() const;
  // Elements of the unique parameters (trainable_only: those that require grad).
  int64_t num_parameters(bool trainable_only = false) const;

  // ---- modes and gradients ----

  // Sets training mode on this module and every descendant (Dropout reads it).
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  // Drops (set_to_none) or zero-fills the .grad() of every parameter.
  void zero_grad(bool set_to_none = true);

  // ---- state ----

  // Parameters and persistent buffers, detached, sharing storage with the module.
  StateDict state_dict() const;
  // Copies `state` into the parameters and buffers (dtype converted, shape must match).
  // Checks everything before copying anything, and throws ValueError naming every missing
  // key, unexpected key (strict only) and shape mismatch (always), as PyTorch does.
  void load_state_dict(const StateDict& state, bool strict = true);
  // Moves/converts every parameter, buffer and gradient in place: the tensor objects the
  // module, its subclasses' members and optimizers hold stay the same and see the new data
  // (PyTorch's `param.data = fn(param)`). to(DType) converts floating tensors only.
  // Optimizer state is not converted: convert before the optimizer's first step.
  void to(Device device);
  void to(DType dtype);

  // ---- names and scopes ----

  // Name in the parent ("" for a root or an unregistered module).
  const std::string& name() const { return name_; }
  // The dotted path from the root of the module tree, as named_modules() names this module
  // ("transformer.h.3"; "" for the root): the scope forward runs in. Registering a module (or
  // an ancestor) under a new parent renames its subtree.
  const std::string& path() const { return path_; }
  // Marks this module as a planner block (its scope is a checkpointing/offload unit).
  void mark_as_block(bool block = true) { is_block_ = block; }
  bool is_block() const { return is_block_; }
  // Class name without namespaces, e.g. "Linear" (for messages and printing).
  std::string type_name() const;

  // ---- calling ----

  // The single-tensor forward; modules with other signatures define their own overloads.
  virtual Tensor forward(const Tensor& x);
  // Runs forward(x) inside this module's scope.
  Tensor operator()(const Tensor& x);
  // Runs (this->*fn)(args...) inside this module's scope: `call(&Attn::forward, x, mask)`.
  // A block the current SavePolicy asks to recompute runs as a checkpoint segment (when fn
  // returns a Tensor and its arguments are copyable); its Tensor arguments are its inputs.
  template <class Self, class R, class... Params, class... Args>
  R call(R (Self::*fn)(Params...), Args&&... args) {
    static_assert(std::is_base_of_v<Module, Self>, "call: fn must be a member of a Module");
    Self& self = dynamic_cast<Self&>(*this);
    if constexpr (std::is_same_v<R, Tensor> &&
                  std::conjunction_v<std::is_copy_constructible<std::decay_t<Args>>...>) {
      if (wants_segment()) {
        auto stored = std::make_shared<std::tuple<std::decay_t<Args>...>>(std::forward<Args>(args)...);
        std::vector<Tensor> inputs;
        std::apply([&](auto&... a) { (take_tensor(a, inputs), ...); }, *stored);
        auto rerun = [&self, fn, stored](const std::vector<Tensor>& in) {
          auto local = *stored;
          size_t next = 0;
          std::apply([&](auto&... a) { (put_tensor(a, in, next), ...); }, local);
          ModuleScope scope(self);
          return std::vector<Tensor>{std::apply([&](auto&... a) { return (self.*fn)(a...); }, local)};
        };
        return run_segment(std::move(rerun), inputs);
      }
    }
    ModuleScope scope(*this);
    return (self.*fn)(std::forward<Args>(args)...);
  }
  // Runs fn(inputs) inside this module's scope, as a recompute segment when the current
  // SavePolicy asks (a block): what a parent does around a child's forward (dropout before it, an
  // activation after) then belongs to the child's block. fn may run again in backward from
  // `inputs`: it must capture no tensors, only what outlives the step (modules, graphs, scalars).
  Tensor call_with(std::function<Tensor(const std::vector<Tensor>&)> fn, const std::vector<Tensor>& inputs);
  template <class Self, class R, class... Params, class... Args>
  R call(R (Self::*fn)(Params...) const, Args&&... args) const {
    static_assert(std::is_base_of_v<Module, Self>, "call: fn must be a member of a Module");
    ModuleScope scope(*this);
    return (dynamic_cast<const Self&>(*this).*fn)(std::forward<Args>(args)...);
  }

 protected:
  // Whether this call should run as a recompute segment: a named block, grad mode on, not
  // already recomputing, and the current SavePolicy asks for it.
  bool wants_segment() const;
  Tensor run_segment(std::function<std::vector<Tensor>(const std::vector<Tensor>&)> fn,
                     const std::vector<Tensor>& inputs);

 private:
  template <class T>
  static void take_tensor(T& a, std::vector<Tensor>& out) {
    if constexpr (std::is_same_v<T, Tensor>) {
      out.push_back(a);
      a = Tensor();  // the segment saves its inputs; the closure must not keep them alive
    }
  }
  template <class T>
  static void put_tensor(T& a, const std::vector<Tensor>& in, size_t& next) {
    if constexpr (std::is_same_v<T, Tensor>) a = in.at(next++);
  }

  struct TensorSlot {
    Tensor tensor;
    bool persistent = true;
  };
  void attach_child(const std::string& name, std::shared_ptr<Module> child);
  void check_new_name(const std::string& name, const char* what) const;
  void set_path(std::string path);
  // Calls fn(prefixed_name, module) for this module and every descendant, preorder.
  void visit(const std::string& prefix,
             const std::function<void(const std::string&, const Module&)>& fn) const;
  void convert_tensors(const std::function<Tensor(const Tensor&)>& fn);

  std::string name_;
  std::string path_;
  bool is_block_ = false;
  bool training_ = true;
  OrderedDict<Tensor> parameters_;
  OrderedDict<TensorSlot> buffers_;
  std::vector<std::string> absent_state_;
  OrderedDict<std::shared_ptr<Module>> children_;
};

}  // namespace strata::nn
