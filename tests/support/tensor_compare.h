// Comparing tensors in tests: expect_close (element-wise, relative and absolute tolerance, NaN
// where NaN is wanted), max_rel_err (largest difference over the largest magnitude), element_bits
// (for bit-for-bit equality) and central_differences (numerical gradients for finite-difference
// checks).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "strata/core/tensor.h"

namespace strata::testing {

// Every element of `got` within atol + rtol * |want| of `want`'s (NaN matches NaN); a failure per
// element that is not, the first five at most, naming `what` and the element.
inline void expect_close(const Tensor& got, const Tensor& want, double rtol, double atol = 0,
                         const std::string& what = "") {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const std::vector<double> g = got.to_double_vector(), w = want.to_double_vector();
  int misses = 0;
  for (size_t i = 0; i < w.size() && misses < 5; ++i) {
    const bool ok = std::isnan(w[i])
                        ? std::isnan(g[i])
                        : (g[i] == w[i] || std::fabs(g[i] - w[i]) <= atol + rtol * std::fabs(w[i]));
    if (!ok) {
      ++misses;
      ADD_FAILURE() << what << (what.empty() ? "" : ": ") << "element " << i << " is " << g[i] << ", want "
                    << w[i];
    }
  }
}

// max |got - want| / max(max |want|, floor); a failure and infinity when the sizes differ.
inline double max_rel_err(const Tensor& got, const Tensor& want, double floor = 1e-30) {
  const std::vector<double> a = got.to_double_vector(), b = want.to_double_vector();
  EXPECT_EQ(a.size(), b.size());
  if (a.size() != b.size()) return INFINITY;
  double scale = 0, err = 0;
  for (double v : b) scale = std::max(scale, std::abs(v));
  for (size_t i = 0; i < a.size(); ++i) err = std::max(err, std::abs(a[i] - b[i]));
  return err / std::max(scale, floor);
}

// Each element's bits as a double (f32 and bf16 widen exactly), for bit-for-bit comparisons.
inline std::vector<uint64_t> element_bits(const Tensor& t) {
  std::vector<uint64_t> out;
  for (double v : t.to_double_vector()) {
    uint64_t b;
    std::memcpy(&b, &v, sizeof b);
    out.push_back(b);
  }
  return out;
}

// The derivative of a loss with respect to each of `n` inputs by central differences:
// (loss_with(e, +h) - loss_with(e, -h)) / 2h, where loss_with(e, d) is the loss with input e moved
// by d (and put back after).
inline std::vector<double> central_differences(size_t n, double h,
                                               const std::function<double(size_t e, double d)>& loss_with) {
  std::vector<double> out(n);
  for (size_t e = 0; e < n; ++e) out[e] = (loss_with(e, h) - loss_with(e, -h)) / (2 * h);
  return out;
}

}  // namespace strata::testing
