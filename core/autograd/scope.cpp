#include "strata/autograd/scope.h"

#include "strata/autograd/saved_tensor.h"

namespace strata::autograd {

namespace {
struct ScopeEntry {
  std::string path;  // full dotted path of this entry
  std::string block;  // innermost block path at this entry
};
thread_local std::vector<ScopeEntry> tl_scopes;
thread_local Phase tl_phase = Phase::Forward;
}  // namespace

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::Forward: return "forward";
    case Phase::Backward: return "backward";
    case Phase::Recompute: return "recompute";
  }
  return "?";
}

Phase current_phase() { return tl_phase; }
PhaseGuard::PhaseGuard(Phase p) : prev_(tl_phase) { tl_phase = p; }
PhaseGuard::~PhaseGuard() { tl_phase = prev_; }

std::string child_scope_path(const std::string& name) {
  const std::string parent = tl_scopes.empty() ? std::string() : tl_scopes.back().path;
  return parent.empty() ? name : (name.empty() ? parent : parent + "." + name);
}

ScopeGuard::ScopeGuard(const std::string& name, bool is_block) {
  std::string path = child_scope_path(name);
  std::string block = is_block ? path : (tl_scopes.empty() ? std::string() : tl_scopes.back().block);
  tl_scopes.push_back({std::move(path), std::move(block)});
  current_save_policy().on_scope(ScopeEvent::Enter, tl_phase, tl_scopes.back().path);
}

ScopeGuard::ScopeGuard(Absolute, const std::string& path, const std::string& block) {
  tl_scopes.push_back({path, block});
  current_save_policy().on_scope(ScopeEvent::Enter, tl_phase, tl_scopes.back().path);
}

ScopeGuard::~ScopeGuard() {
  current_save_policy().on_scope(ScopeEvent::Exit, tl_phase, tl_scopes.back().path);
  tl_scopes.pop_back();
}

std::string current_scope_path() { return tl_scopes.empty() ? std::string() : tl_scopes.back().path; }
std::string current_block_path() { return tl_scopes.empty() ? std::string() : tl_scopes.back().block; }

}  // namespace strata::autograd
