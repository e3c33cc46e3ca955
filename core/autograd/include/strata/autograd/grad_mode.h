// GradMode (thread-local switch for graph recording) and NoGradGuard.
#pragma once

namespace strata::autograd {

class GradMode {
 public:
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

// Disables graph recording for the current thread, RAII (torch::NoGradGuard).
class NoGradGuard {
 public:
  NoGradGuard() : prev_(GradMode::is_enabled()) { GradMode::set_enabled(false); }
  ~NoGradGuard() { GradMode::set_enabled(prev_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

}  // namespace strata::autograd

namespace strata {
using autograd::NoGradGuard;
}
