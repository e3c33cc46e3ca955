#include "strata/nn/module.h"

#include <cxxabi.h>

#include <cstdlib>
#include <sstream>
#include <typeinfo>
#include <unordered_set>

#include "strata/autograd/checkpoint.h"
#include "strata/autograd/grad_mode.h"
#include "strata/autograd/saved_tensor.h"
#include "strata/core/memory_stats.h"
#include "strata/core/storage_pager.h"
#include "strata/nn/meta_init.h"

namespace strata::nn {

namespace {

std::string quoted_list(const std::vector<std::string>& keys) {
  std::string out;
  for (size_t i = 0; i < keys.size(); ++i) out += (i ? ", \"" : "\"") + keys[i] + "\"";
  return out;
}

}  // namespace

ModuleScope::ModuleScope(const Module& module) {
  const std::string& path = module.path();
  if (path.empty() || autograd::current_scope_path() == path) return;
  guard_.emplace(autograd::ScopeGuard::Absolute{}, path,
                 module.is_block() ? path : autograd::current_block_path());
}

// ---- registration ----

void Module::check_new_name(const std::string& name, const char* what) const {
  STRATA_CHECK(!name.empty(), ValueError, type_name(), ": ", what, " name must not be empty");
  STRATA_CHECK(name.find('.') == std::string::npos, ValueError, type_name(), ": ", what, " name '",
               name, "' must not contain '.'");
  STRATA_CHECK(!parameters_.contains(name) && !buffers_.contains(name) && !children_.contains(name),
               ValueError, type_name(), ": cannot register ", what, " '", name,
               "': the name is already taken by a parameter, buffer or module");
}

Tensor Module::register_parameter(const std::string& name, Tensor tensor, bool requires_grad) {
  check_new_name(name, "parameter");
  STRATA_CHECK(tensor.defined(), ValueError, type_name(), ": parameter '", name, "' is undefined");
  if (!tensor.is_leaf()) tensor = tensor.detach();
  if (MetaInitGuard::active() && !tensor.device().is_meta()) tensor = Tensor::empty(tensor.shape(), tensor.dtype(), kMeta);
  tensor.set_requires_grad(requires_grad);
  tensor.set_is_parameter(true);
  tensor.storage()->set_category(MemoryCategory::Parameter);
  return parameters_.insert(name, std::move(tensor));
}

Tensor Module::register_buffer(const std::string& name, Tensor tensor, bool persistent) {
  check_new_name(name, "buffer");
  STRATA_CHECK(tensor.defined(), ValueError, type_name(), ": buffer '", name, "' is undefined");
  if (MetaInitGuard::active() && !tensor.device().is_meta()) tensor = Tensor::empty(tensor.shape(), tensor.dtype(), kMeta);
  return buffers_.insert(name, TensorSlot{std::move(tensor), persistent}).tensor;
}

void Module::attach_child(const std::string& name, std::shared_ptr<Module> child) {
  check_new_name(name, "module");
  STRATA_CHECK(child != nullptr, ValueError, type_name(), ": module '", name, "' is null");
  STRATA_CHECK(child.get() != this, ValueError, type_name(), ": cannot register a module as its own child");
  child->name_ = name;
  child->set_path(path_.empty() ? name : path_ + "." + name);
  children_.insert(name, std::move(child));
}

void Module::set_path(std::string path) {
  path_ = std::move(path);
  for (auto& [name, child] : children_) child->set_path(path_.empty() ? name : path_ + "." + name);
}

// ---- traversal ----

void Module::visit(const std::string& prefix,
                   const std::function<void(const std::string&, const Module&)>& fn) const {
  fn(prefix, *this);
  for (const auto& [name, child] : children_)
    child->visit(prefix.empty() ? name : prefix + "." + name, fn);
}

StateDict Module::named_parameters(bool recurse) const {
  StateDict out;
  std::unordered_set<const Module*> seen_modules;
  std::unordered_set<const TensorImpl*> seen;
  auto add_own = [&](const std::string& prefix, const Module& m) {
    if (!seen_modules.insert(&m).second) return;
    for (const auto& [name, t] : m.parameters_)
      if (seen.insert(t.impl()).second) out.insert(prefix.empty() ? name : prefix + "." + name, t);
  };
  if (recurse)
    visit("", add_own);
  else
    add_own("", *this);
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const { return named_parameters(recurse).values(); }

StateDict Module::named_buffers(bool recurse) const {
  StateDict out;
  std::unordered_set<const Module*> seen_modules;
  std::unordered_set<const TensorImpl*> seen;
  auto add_own = [&](const std::string& prefix, const Module& m) {
    if (!seen_modules.insert(&m).second) return;
    for (const auto& [name, slot] : m.buffers_)
      if (seen.insert(slot.tensor.impl()).second)
        out.insert(prefix.empty() ? name : prefix + "." + name, slot.tensor);
  };
  if (recurse)
    visit("", add_own);
  else
    add_own("", *this);
  return out;
}

std::vector<Tensor> Module::buffers(bool recurse) const { return named_buffers(recurse).values(); }

OrderedDict<std::shared_ptr<Module>> Module::named_children() const { return children_; }

std::vector<std::shared_ptr<Module>> Module::children() const { return children_.values(); }

OrderedDict<std::shared_ptr<Module>> Module::named_modules() const {
  OrderedDict<std::shared_ptr<Module>> out;
  std::shared_ptr<Module> self = std::const_pointer_cast<Module>(weak_from_this().lock());
  // Not shared-owned: a non-owning pointer (aliasing constructor with an empty owner).
  if (!self) self = std::shared_ptr<Module>(std::shared_ptr<Module>(), const_cast<Module*>(this));
  out.insert("", self);
  std::unordered_set<const Module*> seen{this};
  std::function<void(const std::string&, const Module&)> walk = [&](const std::string& prefix,
                                                                     const Module& m) {
    for (const auto& [name, child] : m.children_) {
      if (!seen.insert(child.get()).second) continue;
      std::string path = prefix.empty() ? name : prefix + "." + name;
      out.insert(path, child);
      walk(path, *child);
    }
  };
  walk("", *this);
  return out;
}

std::vector<std::shared_ptr<Module>> Module::modules() const { return named_modules().values(); }

int64_t Module::num_parameters(bool trainable_only) const {
  int64_t n = 0;
  for (const Tensor& p : parameters())
    if (!trainable_only || p.requires_grad()) n += p.numel();
  return n;
}

// ---- modes and gradients ----

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

void zero_grad(const std::vector<Tensor>& tensors, bool set_to_none) {
  for (Tensor t : tensors) {
    if (!t.grad().defined()) continue;
    if (set_to_none) {
      t.set_grad(Tensor());
    } else {
      Tensor g = t.grad();
      g.zero_();
    }
  }
}

void Module::zero_grad(bool set_to_none) { nn::zero_grad(parameters(), set_to_none); }

// ---- state ----

StateDict Module::state_dict() const {
  StateDict out;
  visit("", [&](const std::string& prefix, const Module& m) {
    auto key = [&](const std::string& name) { return prefix.empty() ? name : prefix + "." + name; };
    for (const auto& [name, t] : m.parameters_) out.insert(key(name), t.detach());
    for (const auto& [name, slot] : m.buffers_)
      if (slot.persistent) out.insert(key(name), slot.tensor.detach());
  });
  return out;
}

void Module::register_absent_state(const std::string& name) {
  check_new_name(name, "absent state");
  absent_state_.push_back(name);
}

void Module::load_state_dict(const StateDict& state, bool strict) {
  StateDict own = state_dict();
  std::unordered_set<std::string> absent;  // keys another framework's layers hold and these do not
  visit("", [&](const std::string& prefix, const Module& m) {
    for (const std::string& name : m.absent_state_)
      absent.insert(prefix.empty() ? name : prefix + "." + name);
  });
  std::vector<std::string> missing, unexpected, problems;
  for (const auto& [key, dst] : own) {
    const Tensor* src = state.find(key);
    if (src == nullptr) {
      missing.push_back(key);
    } else if (!src->defined()) {
      problems.push_back("value for " + key + " is an undefined tensor.");
    } else if (src->shape() != dst.shape()) {
      problems.push_back("size mismatch for " + key + ": copying a param with shape " +
                         shape_str(src->shape()) + " from checkpoint, the shape in current model is " +
                         shape_str(dst.shape()) + ".");
    }
  }
  for (const auto& [key, src] : state)
    if (!own.contains(key) && !absent.count(key)) unexpected.push_back(key);
  if (!strict) {
    missing.clear();
    unexpected.clear();
  }
  if (!missing.empty() || !unexpected.empty() || !problems.empty()) {
    std::ostringstream msg;
    msg << "Error(s) in loading state_dict for " << type_name() << ":";
    if (!missing.empty()) msg << "\n\tMissing key(s) in state_dict: " << quoted_list(missing) << ".";
    if (!unexpected.empty()) msg << "\n\tUnexpected key(s) in state_dict: " << quoted_list(unexpected) << ".";
    for (const std::string& p : problems) msg << "\n\t" << p;
    throw ValueError(msg.str());
  }
  NoGradGuard no_grad;
  for (auto& [key, dst] : own)
    if (const Tensor* src = state.find(key)) {
      dst.copy_(*src);
      release_paged(dst);  // a paged parameter goes home written: one on the device at a time
    }
}

// Core's TensorImpl has no set_data: this relies on TensorImpl being move-assignable.
void set_data(Tensor& dst, const Tensor& src) {
  static_assert(std::is_move_assignable_v<TensorImpl>,
                "Module::to needs to swap a TensorImpl's data in place");
  std::optional<AutogradMeta> meta;
  if (AutogradMeta* m = dst.autograd_meta_if_exists()) meta.emplace(std::move(*m));
  *dst.impl() = TensorImpl(src.storage(), src.shape(), src.strides(), src.storage_offset(), src.dtype());
  if (meta) dst.impl()->ensure_autograd() = std::move(*meta);
}

void Module::convert_tensors(const std::function<Tensor(const Tensor&)>& fn) {
  NoGradGuard no_grad;
  std::unordered_set<const TensorImpl*> seen;
  auto convert = [&](Tensor& t, MemoryCategory category) {
    if (!seen.insert(t.impl()).second) return;
    Tensor converted;
    {
      MemoryCategoryGuard cat(category);
      converted = fn(t.detach());
    }
    if (converted.storage() != t.storage()) set_data(t, converted);
    if (Tensor g = t.grad(); g.defined()) {
      MemoryCategoryGuard cat(MemoryCategory::Gradient);
      Tensor cg = fn(g.detach());
      if (cg.storage() != g.storage()) t.set_grad(cg);
    }
  };
  std::function<void(Module&)> walk = [&](Module& m) {
    for (auto& [name, p] : m.parameters_) convert(p, MemoryCategory::Parameter);
    for (auto& [name, slot] : m.buffers_) convert(slot.tensor, slot.tensor.storage()->category());
    for (auto& [name, child] : m.children_) walk(*child);
  };
  walk(*this);
}

void Module::to(Device device) {
  convert_tensors([device](const Tensor& t) { return t.to(device); });
}

void Module::to(DType dtype) {
  STRATA_CHECK(is_floating(dtype), TypeError, type_name(), ".to(", dtype_name(dtype),
               "): modules convert to floating dtypes only");
  convert_tensors([dtype](const Tensor& t) { return is_floating(t.dtype()) ? t.to(dtype) : t; });
}

// ---- names and calling ----

std::string Module::type_name() const {
  const char* mangled = typeid(*this).name();
  int status = 0;
  char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string name = status == 0 && demangled ? demangled : mangled;
  std::free(demangled);
  size_t template_open = name.find('<');
  size_t cut = name.rfind("::", template_open);
  return cut == std::string::npos ? name : name.substr(cut + 2);
}

Tensor Module::forward(const Tensor&) {
  throw NotImplementedError(type_name() +
                            " has no single-tensor forward(const Tensor&); call its own forward overload");
}

Tensor Module::operator()(const Tensor& x) {
  if (wants_segment()) {
    return run_segment(
        [this](const std::vector<Tensor>& in) {
          ModuleScope scope(*this);
          return std::vector<Tensor>{forward(in.at(0))};
        },
        {x});
  }
  ModuleScope scope(*this);
  return forward(x);
}

Tensor Module::call_with(std::function<Tensor(const std::vector<Tensor>&)> fn,
                         const std::vector<Tensor>& inputs) {
  if (wants_segment()) {
    return run_segment(
        [this, fn](const std::vector<Tensor>& in) {
          ModuleScope scope(*this);
          return std::vector<Tensor>{fn(in)};
        },
        inputs);
  }
  ModuleScope scope(*this);
  return fn(inputs);
}

bool Module::wants_segment() const {
  return is_block_ && !path_.empty() && autograd::GradMode::is_enabled() &&
         !autograd::in_recompute() &&
         autograd::current_save_policy().wants_segment(path_);
}

Tensor Module::run_segment(std::function<std::vector<Tensor>(const std::vector<Tensor>&)> fn,
                           const std::vector<Tensor>& inputs) {
  std::vector<Tensor> out =
      autograd::checkpoint(std::move(fn), inputs, path_);
  STRATA_CHECK(out.size() == 1, ValueError, type_name(), ": a recompute segment returned ",
               out.size(), " tensors");
  return out[0];
}

}  // namespace strata::nn
