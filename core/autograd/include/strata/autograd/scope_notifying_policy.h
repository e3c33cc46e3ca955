// ScopeNotifyingPolicy: a SavePolicy that is another one (keep-all when none) and also tells a
// callback of every module scope: how paging and sharding of weights learn where forward and
// backward are without deciding what is saved.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "strata/autograd/saved_tensor.h"
#include "strata/autograd/scope.h"

namespace strata::autograd {

class ScopeNotifyingPolicy final : public SavePolicy {
 public:
  using OnScope = std::function<void(ScopeEvent, Phase, const std::string& path)>;
  // `on_scope` runs before `inner` hears of each scope; what it captures lives as long as the policy.
  ScopeNotifyingPolicy(std::shared_ptr<SavePolicy> inner, OnScope on_scope)
      : inner_(inner ? std::move(inner) : std::make_shared<KeepAllPolicy>()),
        on_scope_(std::move(on_scope)) {}
  Packed pack(const Tensor& t, const SaveInfo& info) override { return inner_->pack(t, info); }
  Tensor unpack(Packed& p, const SaveInfo& info) override { return inner_->unpack(p, info); }
  void on_scope(ScopeEvent event, Phase phase, const std::string& path) override {
    on_scope_(event, phase, path);
    inner_->on_scope(event, phase, path);
  }
  bool wants_segment(const std::string& block_path) override { return inner_->wants_segment(block_path); }
  void observe_recompute(const Tensor& t, const SaveInfo& info) override {
    inner_->observe_recompute(t, info);
  }
  bool prefers_lean(const char* op) override { return inner_->prefers_lean(op); }

 private:
  std::shared_ptr<SavePolicy> inner_;
  OnScope on_scope_;
};

}  // namespace strata::autograd
