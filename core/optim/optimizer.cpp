#include "strata/optim/optimizer.h"

#include <cmath>
#include <sstream>
#include <typeinfo>
#include <unordered_map>
#include <unordered_set>

#include "core/optim/cpu_update.h"
#include "strata/autograd/grad_mode.h"
#include "strata/core/factory.h"
#include "strata/core/memory_stats.h"
#include "strata/core/storage_pager.h"
#include "strata/nn/module.h"

namespace strata::optim {

void OptimizerOptions::validate(const char* optimizer) const {
  STRATA_CHECK(lr_ >= 0.0, ValueError, optimizer, ": invalid learning rate: ", lr_);
  STRATA_CHECK(weight_decay_ >= 0.0, ValueError, optimizer, ": invalid weight_decay value: ", weight_decay_);
}

// ---- ParamGroup ----

ParamGroup::ParamGroup(const ParamGroup& other)
    : params_(other.params_), options_(other.options_ ? other.options_->clone() : nullptr),
      initial_lr_(other.initial_lr_) {}

ParamGroup& ParamGroup::operator=(const ParamGroup& other) {
  if (this != &other) {
    params_ = other.params_;
    options_ = other.options_ ? other.options_->clone() : nullptr;
    initial_lr_ = other.initial_lr_;
  }
  return *this;
}

OptimizerOptions& ParamGroup::options() {
  STRATA_CHECK(options_ != nullptr, ValueError, "ParamGroup: no options (the group was not added to an optimizer)");
  return *options_;
}

const OptimizerOptions& ParamGroup::options() const {
  STRATA_CHECK(options_ != nullptr, ValueError, "ParamGroup: no options (the group was not added to an optimizer)");
  return *options_;
}

// ---- Optimizer ----

Optimizer::Optimizer(std::vector<ParamGroup> groups, const OptimizerOptions& defaults, const char* name)
    : name_(name), defaults_(defaults.clone()) {
  defaults_->validate(name_);
  for (ParamGroup& g : groups) add_param_group(std::move(g));
  STRATA_CHECK(!state_.empty(), ValueError, name_, ": optimizer got an empty parameter list");
}

void Optimizer::add_param_group(ParamGroup group) {
  if (!group.options_) group.options_ = defaults_->clone();
  const OptimizerOptions& opts = *group.options_;
  STRATA_CHECK(typeid(opts) == typeid(*defaults_), TypeError, name_, ": parameter group ", groups_.size(),
               " has options of another optimizer");
  opts.validate(name_);
  std::unordered_set<const TensorImpl*> existing;
  for (const ParamGroup& g : groups_)
    for (const Tensor& p : g.params_) existing.insert(p.impl());
  std::unordered_set<const TensorImpl*> in_group;
  for (size_t i = 0; i < group.params_.size(); ++i) {
    const Tensor& p = group.params_[i];
    STRATA_CHECK(p.defined(), ValueError, name_, ": parameter ", i, " of group ", groups_.size(), " is undefined");
    STRATA_CHECK(p.is_leaf() && is_floating(p.dtype()), ValueError, name_,
                 ": can't optimize a non-leaf or non-floating tensor ", p.str(), " (parameter ", i,
                 " of group ", groups_.size(), ")");
    STRATA_CHECK(!existing.count(p.impl()), ValueError, name_,
                 ": some parameters appear in more than one parameter group");
    STRATA_CHECK(in_group.insert(p.impl()).second, ValueError, name_, ": parameter ", i, " of group ",
                 groups_.size(), " appears twice in the group");
  }
  group.initial_lr_ = opts.lr();
  state_.resize(state_.size() + group.params_.size());
  if (store_) placed_.resize(state_.size(), false);
  groups_.push_back(std::move(group));
}

void Optimizer::zero_grad(bool set_to_none) { nn::zero_grad(parameters(), set_to_none); }

void Optimizer::for_each_update(
    const std::function<void(const OptimizerOptions&, Tensor&, const Tensor&, TensorDict&)>& fn) {
  NoGradGuard no_grad;
  const std::string op = std::string(name_) + ".step";
  // The parameters that update (those with a gradient), in order.
  struct Update {
    ParamGroup* group;
    Tensor* param;
    size_t index;
  };
  std::vector<Update> updates;
  size_t index = 0;
  for (ParamGroup& group : groups_)
    for (Tensor& p : group.params_) {
      if (p.grad().defined()) updates.push_back({&group, &p, index});
      ++index;
    }
  // A placed parameter's update reads the next placed one's state ahead.
  constexpr size_t kNone = size_t(-1);
  std::vector<size_t> next_placed(updates.size(), kNone);
  for (size_t u = updates.size(), next = kNone; u-- > 0;) {
    next_placed[u] = next;
    if (state_placed(updates[u].index)) next = u;
  }
  for (size_t u = 0; u < updates.size(); ++u) {
    ParamGroup& group = *updates[u].group;
    Tensor& p = *updates[u].param;
    const size_t i = updates[u].index;
    if (u + 1 < updates.size()) {  // a paged parameter's next one loads during its update
      prefetch_paged(*updates[u + 1].param);
      prefetch_paged(updates[u + 1].param->grad());
    }
    detail::check_updatable(op.c_str(), "parameter", p);
    Tensor g = detail::dense_grad(op.c_str(), p);
    if (state_placed(i)) {
      const size_t n = next_placed[u];
      update_placed(i, *group.options_, p, g, n == kNone ? kNoParameter : updates[n].index,
                    n == kNone ? 0 : updates[n].param->numel());
    } else {
      fn(*group.options_, p, g, state_[i]);
    }
    p.bump_version();
    // A paged weight or gradient goes back where it lives (the weight written there).
    release_paged(g);
    release_paged(p);
  }
}

std::vector<Tensor> Optimizer::parameters() const {
  std::vector<Tensor> out;
  out.reserve(state_.size());
  for (const ParamGroup& g : groups_) out.insert(out.end(), g.params_.begin(), g.params_.end());
  return out;
}

const TensorDict* Optimizer::state_of(const Tensor& param) const {
  size_t i = 0;
  for (const ParamGroup& g : groups_)
    for (const Tensor& p : g.params_) {
      if (p.impl() == param.impl()) return state_[i].empty() ? nullptr : &state_[i];
      ++i;
    }
  return nullptr;
}

TensorDict Optimizer::state_dict() const { return state_dict_impl(nullptr); }

TensorDict Optimizer::state_dict(TensorSources& sources) const { return state_dict_impl(&sources); }

TensorDict Optimizer::state_dict_impl(TensorSources* sources) const {
  TensorDict out;
  const std::vector<Tensor> params = parameters();
  for (size_t i = 0; i < state_.size(); ++i) {
    if (state_placed(i)) {
      add_placed_state(i, params[i], out, sources);
      continue;
    }
    for (const auto& [name, t] : state_[i])
      out.insert("state." + std::to_string(i) + "." + name, sources ? t.detach() : t.detach().clone());
  }
  for (size_t g = 0; g < groups_.size(); ++g)
    out.insert("param_groups." + std::to_string(g) + ".lr", strata::scalar_tensor(groups_[g].lr(), DType::f64));
  return out;
}

namespace {

// Parses "<prefix><index>.<rest>"; false when the key does not have that form.
bool parse_indexed(const std::string& key, const std::string& prefix, size_t& index, std::string& rest) {
  if (key.compare(0, prefix.size(), prefix) != 0) return false;
  size_t dot = key.find('.', prefix.size());
  if (dot == std::string::npos || dot == prefix.size()) return false;
  std::string digits = key.substr(prefix.size(), dot - prefix.size());
  for (char c : digits)
    if (c < '0' || c > '9') return false;
  index = std::stoull(digits);
  rest = key.substr(dot + 1);
  return true;
}

}  // namespace

void Optimizer::load_state_dict(const TensorDict& state) {
  const std::vector<Tensor> params = parameters();
  const std::vector<std::string> names = state_names();
  std::vector<std::string> problems;
  std::unordered_map<size_t, size_t> found_per_param;  // index -> number of state names found
  std::vector<std::pair<size_t, double>> lrs;
  for (const auto& [key, t] : state) {
    size_t index = 0;
    std::string rest;
    if (!t.defined()) {
      problems.push_back("\"" + key + "\" is an undefined tensor");
    } else if (parse_indexed(key, "state.", index, rest)) {
      bool known = false;
      for (const std::string& n : names) known = known || n == rest;
      if (!known) {
        problems.push_back("unexpected key \"" + key + "\" (" + name_ + " keeps no state named '" + rest + "')");
      } else if (index >= params.size()) {
        problems.push_back("\"" + key + "\" refers to parameter " + std::to_string(index) + " but the optimizer has " +
                           std::to_string(params.size()) + " parameters");
      } else if (rest == "step" ? t.numel() != 1 : t.shape() != params[index].shape()) {
        problems.push_back("size mismatch for \"" + key + "\": shape " + shape_str(t.shape()) +
                           " in the state dict, " +
                           (rest == "step" ? std::string("expected one element")
                                           : "the parameter's shape is " + shape_str(params[index].shape())));
      } else {
        ++found_per_param[index];
      }
    } else if (parse_indexed(key, "param_groups.", index, rest) && rest == "lr") {
      if (index >= groups_.size())
        problems.push_back("\"" + key + "\" refers to group " + std::to_string(index) + " but the optimizer has " +
                           std::to_string(groups_.size()) + " groups");
      else if (t.numel() != 1)
        problems.push_back("\"" + key + "\" must have one element, got " + shape_str(t.shape()));
      else
        lrs.emplace_back(index, t.item());
    } else {
      problems.push_back("unexpected key \"" + key + "\"");
    }
  }
  for (const auto& [index, found] : found_per_param)
    if (found != names.size()) {
      std::string expected;
      for (const std::string& n : names) expected += (expected.empty() ? "" : ", ") + n;
      problems.push_back("incomplete state for parameter " + std::to_string(index) + ": expected all of {" +
                         expected + "}");
    }
  if (!problems.empty()) {
    std::ostringstream msg;
    msg << "Error(s) in loading the " << name_ << " state_dict:";
    for (const std::string& p : problems) msg << "\n\t" << p;
    throw ValueError(msg.str());
  }

  NoGradGuard no_grad;
  MemoryCategoryGuard category(MemoryCategory::OptimizerState);
  std::vector<TensorDict> loaded(params.size());
  std::vector<TensorDict> to_place(params.size());  // placed parameters' state, as given
  for (size_t i = 0; i < params.size(); ++i) {
    if (!found_per_param.count(i)) continue;
    if (state_placed(i)) {
      for (const std::string& n : names)
        to_place[i].insert(n, state.at("state." + std::to_string(i) + "." + n));
      continue;
    }
    for (const std::string& n : names) {
      const Tensor& src = state.at("state." + std::to_string(i) + "." + n);
      Tensor dst = n == "step" ? Tensor::empty({}, DType::f64, kCPU)
                               : Tensor::empty(params[i].shape(), params[i].dtype(), params[i].device());
      dst.copy_(n == "step" ? src.reshape({}) : src);
      loaded[i].insert(n, std::move(dst));
    }
  }
  state_ = std::move(loaded);
  for (size_t i = 0; i < params.size(); ++i)
    if (state_placed(i)) load_placed(i, options_of(i), params[i], to_place[i]);
  for (const auto& [g, lr] : lrs) groups_[g].set_lr(lr);
}

}  // namespace strata::optim
