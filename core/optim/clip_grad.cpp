#include "strata/optim/clip_grad.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/optim/cpu_update.h"
#include "strata/autograd/grad_mode.h"

namespace strata::optim {

namespace {

// Fixed-size blocks reduced in parallel, then combined in block order: the same bits for any
// thread count or schedule (docs/design.md, "Invariants": deterministic reductions).
constexpr int64_t kBlock = 1 << 14;

// sum |g|^p (or max |g| for p = inf) over one gradient.
template <class T>
double power_sum(const T* g, int64_t n, double p) {
  const bool inf = std::isinf(p);
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<double> partial(size_t(std::max<int64_t>(blocks, 1)), 0.0);
#pragma omp parallel for schedule(static) if (n >= detail::kParallelMinElements)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t end = std::min(n, (b + 1) * kBlock);
    double acc = 0.0;
    for (int64_t i = b * kBlock; i < end; ++i) {
      const double a = std::abs(double(g[i]));
      if (inf)
        acc = std::max(acc, a);
      else
        acc += p == 2.0 ? a * a : std::pow(a, p);
    }
    partial[size_t(b)] = acc;
  }
  double total = 0.0;
  for (double v : partial) total = inf ? std::max(total, v) : total + v;
  return total;
}

template <class T>
void scale(T* g, int64_t n, T coef) {
#pragma omp parallel for schedule(static) if (n >= detail::kParallelMinElements)
  for (int64_t i = 0; i < n; ++i) g[i] = g[i] * coef;
}

}  // namespace

double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type) {
  STRATA_CHECK(norm_type > 0.0, ValueError, "clip_grad_norm_: norm_type must be positive, got ", norm_type);
  NoGradGuard no_grad;
  std::vector<Tensor> grads;
  for (const Tensor& p : params)
    if (p.defined() && p.grad().defined()) {
      const Tensor& g = p.grad();
      detail::check_updatable("clip_grad_norm_", "gradient", g);
      grads.push_back(g);
    }
  if (grads.empty()) return 0.0;
  const bool inf = std::isinf(norm_type);
  double acc = 0.0;
  for (const Tensor& g : grads) {
    double s = 0;
    if (g.device().is_host_memory()) {
      detail::dispatch_floating(g.dtype(), [&](auto t) {
        using T = decltype(t);
        s = power_sum<T>(g.data<T>(), g.numel(), norm_type);
      });
    } else {
      s = backend_for(g.device()).norm_power_sum(g, norm_type);
    }
    acc = inf ? std::max(acc, s) : acc + s;
  }
  const double total_norm = inf ? acc : norm_type == 2.0 ? std::sqrt(acc) : std::pow(acc, 1.0 / norm_type);
  // PyTorch multiplies by min(coef, 1) unconditionally; multiplying by 1 changes nothing, so
  // only the clipping case touches the gradients. A NaN norm propagates, as in PyTorch.
  const double coef = max_norm / (total_norm + 1e-6);
  if (!(coef < 1.0) && !std::isnan(coef)) return total_norm;
  for (const Tensor& g : grads) {
    if (g.device().is_host_memory()) {
      detail::dispatch_floating(g.dtype(), [&](auto t) {
        using T = decltype(t);
        scale<T>(g.data<T>(), g.numel(), T(coef));
      });
    } else {
      const Tensor in[] = {g};
      backend_for(g.device()).elementwise(EwOp::MulScalar, g, in, EwParams{coef, 0});
    }
    g.bump_version();
  }
  return total_norm;
}

}  // namespace strata::optim
