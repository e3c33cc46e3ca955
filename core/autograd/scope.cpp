#include "strata/autograd/scope.h"

#include "strata/autograd/saved_tensor.h"

namespace strata::autograd {

namespace {
struct ScopeEntry {
  std::string path;  // full dotted path of this entry
  std::string block;  // innermost block path at this entry
};
thread_local std::vector<ScopeEntry> tl_scopes;
}  // namespace

ScopeGuard::ScopeGuard(const std::string& name, bool is_block) {
  const std::string parent = tl_scopes.empty() ? std::string() : tl_scopes.back().path;
  std::string path = parent.empty() ? name : (name.empty() ? parent : parent + "." + name);
  std::string block = is_block ? path : (tl_scopes.empty() ? std::string() : tl_scopes.back().block);
  tl_scopes.push_back({std::move(path), std::move(block)});
  current_save_policy().on_scope(ScopeEvent::Enter, Phase::Forward, tl_scopes.back().path);
}

ScopeGuard::~ScopeGuard() {
  current_save_policy().on_scope(ScopeEvent::Exit, Phase::Forward, tl_scopes.back().path);
  tl_scopes.pop_back();
}

std::string current_scope_path() { return tl_scopes.empty() ? std::string() : tl_scopes.back().path; }
std::string current_block_path() { return tl_scopes.empty() ? std::string() : tl_scopes.back().block; }

}  // namespace strata::autograd
