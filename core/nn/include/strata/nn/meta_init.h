// MetaInitGuard: modules built while one is alive on this thread get their parameters and buffers
// on the Meta device (shapes only: no memory, no initialization cost), for shape-only planning
// of models that do not fit this machine (as torch's `with torch.device("meta")`).
#pragma once

namespace strata::nn {

class MetaInitGuard {
 public:
  MetaInitGuard();
  ~MetaInitGuard();
  MetaInitGuard(const MetaInitGuard&) = delete;
  MetaInitGuard& operator=(const MetaInitGuard&) = delete;
  // Whether one is alive on this thread.
  static bool active();

 private:
  bool prev_;
};

}  // namespace strata::nn
