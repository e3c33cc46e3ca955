// ScopeStack: the thread-local module path ("h.3.attn") and phase that saved tensors carry.
#pragma once

#include <string>
#include <vector>

namespace strata::autograd {

enum class Phase : unsigned char { Forward, Backward };

// Pushed by Module::operator() (and by anything else that wants to name a region).
class ScopeGuard {
 public:
  // `name` is the child's name in its parent (e.g. "attn"); `is_block` marks a planner block.
  ScopeGuard(const std::string& name, bool is_block = false);
  ~ScopeGuard();
  ScopeGuard(const ScopeGuard&) = delete;
  ScopeGuard& operator=(const ScopeGuard&) = delete;
};

// Current dotted path, e.g. "h.3.attn" ("" at top level).
std::string current_scope_path();
// Innermost enclosing block's path ("" when none).
std::string current_block_path();

}  // namespace strata::autograd
