// ScopeStack: the thread-local module path ("h.3.attn") and phase that saved tensors carry.
#pragma once

#include <string>
#include <vector>

namespace strata::autograd {

// Forward: the model's forward; Backward: the engine running nodes; Recompute: a checkpoint
// segment re-running its forward during backward (autograd/checkpoint.h).
enum class Phase : unsigned char { Forward, Backward, Recompute };
const char* phase_name(Phase p);

// The phase scope events of this thread report (Forward unless a PhaseGuard says otherwise).
Phase current_phase();
class PhaseGuard {
 public:
  explicit PhaseGuard(Phase p);
  ~PhaseGuard();
  PhaseGuard(const PhaseGuard&) = delete;
  PhaseGuard& operator=(const PhaseGuard&) = delete;

 private:
  Phase prev_;
};

// Pushed by Module::operator() (and by anything else that wants to name a region).
class ScopeGuard {
 public:
  // `name` is the child's name in its parent (e.g. "attn"); `is_block` marks a planner block.
  ScopeGuard(const std::string& name, bool is_block = false);
  // Re-enters a recorded absolute position (a recompute runs with the path its forward had).
  struct Absolute {};
  ScopeGuard(Absolute, const std::string& path, const std::string& block);
  ~ScopeGuard();
  ScopeGuard(const ScopeGuard&) = delete;
  ScopeGuard& operator=(const ScopeGuard&) = delete;
};

// Current dotted path, e.g. "h.3.attn" ("" at top level).
std::string current_scope_path();
// Innermost enclosing block's path ("" when none).
std::string current_block_path();
// The path a child scope named `name` would get if pushed now.
std::string child_scope_path(const std::string& name);

}  // namespace strata::autograd
