// Vector and Frobenius norms, composed of differentiable ops.
#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include "strata/core/error.h"
#include "strata/ops/elementwise.h"
#include "strata/ops/reduction.h"
#include "strata/ops/shape_ops.h"

namespace strata::ops {

Tensor norm(const Tensor& x, double p, const std::vector<int64_t>& dims, bool keepdim) {
  STRATA_CHECK(p > 0, ValueError, "norm: p ", p, " must be positive (or infinity), for x ", x.str());
  STRATA_CHECK(is_floating(x.dtype()), ValueError, "norm: x ", x.str(), " is not floating point");
  std::vector<int64_t> over = dims;
  if (over.empty()) {
    over.resize(size_t(x.dim()));
    std::iota(over.begin(), over.end(), 0);
  }
  const Tensor a = abs(x);
  if (std::isinf(p)) {  // the largest |x|, one dim at a time from the last (so the others keep their place)
    if (x.dim() == 0) return a;
    for (int64_t& d : over) d = d < 0 ? d + x.dim() : d;
    std::sort(over.begin(), over.end(), std::greater<>());
    Tensor m = a;
    for (int64_t d : over) m = max(m, d, /*keepdim=*/keepdim).values;
    return m;
  }
  const Tensor terms = p == 1 ? a : p == 2 ? square(x) : pow(a, p);
  const Tensor s = x.dim() == 0 ? terms : sum(terms, over, keepdim);
  if (p == 1) return s;
  // A zero sum takes the power of 1 and gives back 0: the value is 0 and so is its gradient, where
  // d/ds s^(1/p) would be infinite and x / |x|_p would be 0 / 0.
  const Tensor zero = eq(s, 0.0);
  const Tensor safe = masked_fill(s, zero, 1.0);
  return masked_fill(p == 2 ? sqrt(safe) : pow(safe, 1.0 / p), zero, 0.0);
}

Tensor frobenius_norm(const Tensor& x, bool keepdim) {
  STRATA_CHECK(x.dim() >= 2, ShapeError, "frobenius_norm: x ", x.str(), " has fewer than 2 dims");
  return norm(x, 2, {-2, -1}, keepdim);
}

}  // namespace strata::ops
