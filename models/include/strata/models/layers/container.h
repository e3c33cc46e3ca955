// Sequential (calls its children in order) and ModuleList (holds them for a parent's
// forward); both name their children "0", "1", ... as PyTorch does.
#pragma once

#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "strata/nn/module.h"

namespace strata::nn {

// The indexed-children part shared by Sequential and ModuleList.
class ModuleSequence : public Module {
 public:
  // Appends `module` as child "<size()>" and returns it, typed.
  template <class M>
  std::shared_ptr<M> push_back(std::shared_ptr<M> module) {
    register_module(std::to_string(items_.size()), module);
    items_.push_back(module);
    return module;
  }
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  // Throws IndexError when out of range.
  const std::shared_ptr<Module>& operator[](size_t i) const;
  // The child at `i` as an M; throws TypeError if it is not one.
  template <class M>
  std::shared_ptr<M> at(size_t i) const {
    auto typed = std::dynamic_pointer_cast<M>((*this)[i]);
    STRATA_CHECK(typed != nullptr, TypeError, type_name(), "[", i, "] is a ", (*this)[i]->type_name());
    return typed;
  }
  std::vector<std::shared_ptr<Module>>::const_iterator begin() const { return items_.begin(); }
  std::vector<std::shared_ptr<Module>>::const_iterator end() const { return items_.end(); }

 protected:
  ModuleSequence() = default;
  ModuleSequence(std::initializer_list<std::shared_ptr<Module>> modules);

 private:
  std::vector<std::shared_ptr<Module>> items_;
};

// forward(x) = item_{n-1}(...item_0(x)), each call inside its child's scope ("mlp.0").
class Sequential final : public ModuleSequence {
 public:
  Sequential() = default;
  Sequential(std::initializer_list<std::shared_ptr<Module>> modules) : ModuleSequence(modules) {}
  Tensor forward(const Tensor& x) override;
};

// A list that is never called itself: the parent's forward calls the items, each in its own
// path's scope (item 3 of a list registered as "h" runs in scope "h.3").
class ModuleList final : public ModuleSequence {
 public:
  ModuleList() = default;
  ModuleList(std::initializer_list<std::shared_ptr<Module>> modules) : ModuleSequence(modules) {}
};

}  // namespace strata::nn
