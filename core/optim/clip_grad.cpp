#include "strata/optim/clip_grad.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/optim/cpu_update.h"
#include "strata/autograd/grad_mode.h"
#include "strata/core/norm_power_sum.h"
#include "strata/core/storage_pager.h"

namespace strata::optim {

namespace {

// Fixed-size blocks (kClipBlock) reduced in parallel, then combined in block order: the same bits
// for any thread count or schedule (docs/design.md, "Invariants": deterministic reductions).

// sum |g|^p (or max |g| for p = inf) over each piece of g[0, n) cut at the block boundaries of a
// gradient of which g starts at element `begin`; each piece from 0.0 in element order.
template <class T>
std::vector<double> piece_sums(const T* g, int64_t n, int64_t begin, double p) {
  const bool inf = std::isinf(p);
  std::vector<int64_t> cut{0};  // piece boundaries within g
  for (int64_t at = (begin / kClipBlock + 1) * kClipBlock - begin; at < n; at += kClipBlock)
    cut.push_back(at);
  cut.push_back(n);
  const auto pieces = int64_t(cut.size()) - 1;
  std::vector<double> partial(size_t(pieces), 0.0);
#pragma omp parallel for schedule(static) if (n >= detail::kParallelMinElements)
  for (int64_t b = 0; b < pieces; ++b) {
    double acc = 0.0;
    for (int64_t i = cut[size_t(b)]; i < cut[size_t(b) + 1]; ++i) {
      const double a = std::abs(double(g[i]));
      if (inf)
        acc = std::max(acc, a);
      else
        acc += p == 2.0 ? a * a : std::pow(a, p);
    }
    partial[size_t(b)] = acc;
  }
  return partial;
}

// sum |g|^p (or max |g| for p = inf) over one gradient.
template <class T>
double power_sum(const T* g, int64_t n, double p) {
  const bool inf = std::isinf(p);
  double total = 0.0;
  for (double v : piece_sums(g, n, 0, p)) total = inf ? std::max(total, v) : total + v;
  return total;
}

template <class T>
void scale(T* g, int64_t n, T coef) {
#pragma omp parallel for schedule(static) if (n >= detail::kParallelMinElements)
  for (int64_t i = 0; i < n; ++i) g[i] = g[i] * coef;
}

}  // namespace

namespace {

std::vector<Tensor> grads_of(const std::vector<Tensor>& params, double norm_type) {
  STRATA_CHECK(norm_type > 0.0, ValueError, "clip_grad_norm_: norm_type must be positive, got ", norm_type);
  std::vector<Tensor> grads;
  for (const Tensor& p : params)
    if (p.defined() && p.grad().defined()) {
      const Tensor& g = p.grad();
      detail::check_updatable("clip_grad_norm_", "gradient", g);
      grads.push_back(g);
    }
  return grads;
}

// Host memory (the CPU's, the sim device's): the loops above.
double clip_on_host(const std::vector<Tensor>& grads, double max_norm, double norm_type) {
  const bool inf = std::isinf(norm_type);
  double acc = 0.0;
  for (size_t i = 0; i < grads.size(); ++i) {
    const Tensor& g = grads[i];
    if (i + 1 < grads.size()) prefetch_paged(grads[i + 1]);
    double s = 0;
    detail::dispatch_floating(g.dtype(), [&](auto t) {
      using T = decltype(t);
      s = power_sum<T>(g.data<T>(), g.numel(), norm_type);
    });
    acc = inf ? std::max(acc, s) : acc + s;
    release_paged(g);  // a paged gradient goes back where it lives: one on the device at a time
  }
  const double total_norm = inf ? acc : norm_type == 2.0 ? std::sqrt(acc) : std::pow(acc, 1.0 / norm_type);
  // PyTorch multiplies by min(coef, 1) unconditionally; multiplying by 1 changes nothing, so
  // only the clipping case touches the gradients. A NaN norm propagates, as in PyTorch.
  const double coef = max_norm / (total_norm + 1e-6);
  if (!(coef < 1.0) && !std::isnan(coef)) return total_norm;
  for (size_t i = 0; i < grads.size(); ++i) {
    const Tensor& g = grads[i];
    if (i + 1 < grads.size()) prefetch_paged(grads[i + 1]);
    detail::dispatch_floating(g.dtype(), [&](auto t) {
      using T = decltype(t);
      scale<T>(g.data<T>(), g.numel(), T(coef));
    });
    g.bump_version();
    release_paged(g);
  }
  return total_norm;
}

bool all_host(const std::vector<Tensor>& grads) {
  for (const Tensor& g : grads)
    if (!g.device().is_host_memory()) return false;
  return true;
}

}  // namespace

Tensor detail::clip_grads_on_backend(Backend& be, const std::vector<Tensor>& grads, double max_norm,
                                     double norm_type) {
  STRATA_CHECK(!grads.empty(), ValueError, "clip_grad_norm_: no gradients");
  const Device dev = grads.front().device();
  for (const Tensor& g : grads)
    STRATA_CHECK(g.device() == dev, DeviceError, "clip_grad_norm_: gradients on ", dev.str(), " and ",
                 g.device().str());
  const bool inf = std::isinf(norm_type);
  auto scalar = [&](double v) {
    Tensor t = Tensor::empty({1}, DType::f64, dev);
    be.fill(t, v);
    return t;
  };
  auto apply = [&](EwOp op, const Tensor& out, std::initializer_list<Tensor> in, EwParams p = {}) {
    const std::vector<Tensor> args(in);
    be.elementwise(op, out, args, p);
  };
  // The total, folded in parameter order (the host's order), then its 1/p power.
  Tensor norm = scalar(0.0);
  for (size_t i = 0; i < grads.size(); ++i) {
    if (i + 1 < grads.size()) prefetch_paged(grads[i + 1]);
    apply(inf ? EwOp::Maximum : EwOp::Add, norm,
          {norm, strata::detail::norm_power_sum_on(be, grads[i], norm_type)});
    release_paged(grads[i]);
  }
  if (!inf) {
    if (norm_type == 2.0)
      apply(EwOp::Sqrt, norm, {norm});
    else
      apply(EwOp::PowScalar, norm, {norm}, EwParams{1.0 / norm_type, 0});
  }
  // coef = min(max_norm / (norm + 1e-6), 1), the host's double arithmetic, then each gradient's dtype.
  Tensor coef = scalar(0.0);
  apply(EwOp::AddScalar, coef, {norm}, EwParams{1e-6, 0});
  apply(EwOp::Div, coef, {scalar(max_norm), coef});
  apply(EwOp::Clamp, coef, {coef}, EwParams{-std::numeric_limits<double>::infinity(), 1.0});
  for (const Tensor& g : grads) {
    Tensor c = Tensor::empty({1}, g.dtype(), dev);
    be.copy(c, coef);
    const Tensor spread =
        Tensor::from_storage(c.storage(), g.shape(), Shape(size_t(g.dim()), 0), 0, g.dtype());
    apply(EwOp::Mul, g, {g, spread});
    g.bump_version();
    release_paged(g);
  }
  return norm;
}

std::vector<double> clip_piece_sums(const Tensor& span, int64_t begin, double norm_type) {
  STRATA_CHECK(span.device().is_host_memory() && span.is_contiguous(), ValueError,
               "clip_piece_sums: needs a contiguous gradient span in host memory, got ", span.str());
  STRATA_CHECK(begin >= 0, ValueError, "clip_piece_sums: the span begins at element ", begin);
  std::vector<double> sums;
  detail::dispatch_floating(span.dtype(), [&](auto t) {
    using T = decltype(t);
    sums = piece_sums<T>(span.data<T>(), span.numel(), begin, norm_type);
  });
  if (span.numel() == 0) sums.clear();
  return sums;
}

void scale_gradients_(const std::vector<Tensor>& grads, double coef) {
  NoGradGuard no_grad;
  for (const Tensor& g : grads) {
    if (g.numel() == 0) continue;
    if (g.device().is_host_memory() && g.is_contiguous()) {
      detail::dispatch_floating(g.dtype(), [&](auto t) {
        using T = decltype(t);
        scale<T>(g.data<T>(), g.numel(), T(coef));
      });
    } else {
      const std::vector<Tensor> in{g};
      backend_for(g.device()).elementwise(EwOp::MulScalar, g, in, EwParams{coef, 0});
    }
    g.bump_version();
  }
}

Tensor clip_grad_norm_tensor_(const std::vector<Tensor>& params, double max_norm, double norm_type) {
  NoGradGuard no_grad;
  const std::vector<Tensor> grads = grads_of(params, norm_type);
  if (grads.empty() || all_host(grads)) {
    Tensor out = Tensor::empty({1}, DType::f64, kCPU);
    out.data<double>()[0] = grads.empty() ? 0.0 : clip_on_host(grads, max_norm, norm_type);
    return out;
  }
  return detail::clip_grads_on_backend(backend_for(grads.front().device()), grads, max_norm, norm_type);
}

double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type) {
  return clip_grad_norm_tensor_(params, max_norm, norm_type).item();
}

}  // namespace strata::optim
