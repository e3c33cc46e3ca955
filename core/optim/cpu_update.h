// Internal helpers for the optimizers' update loops (host memory) and device updates (the Backend's):
// dtype dispatch and input checks.
#pragma once

#include <cstdint>

#include "strata/core/backend.h"
#include "strata/core/error.h"
#include "strata/core/tensor.h"

namespace strata::optim::detail {

// Loops at least this long run under OpenMP; elementwise updates give the same bits either way.
inline constexpr int64_t kParallelMinElements = int64_t(1) << 15;

// Throws unless `t` is a dense f32/f64 tensor with data (host memory, the CPU's or the sim device's,
// is updated by the loops here; a GPU's by its Backend).
inline void check_updatable(const char* op, const char* what, const Tensor& t) {
  STRATA_CHECK(!t.device().is_meta(), NotImplementedError, op, ": ", what, " ", t.str(), " holds no data");
  STRATA_CHECK(t.dtype() == DType::f32 || t.dtype() == DType::f64, NotImplementedError, op, ": ",
               what, " ", t.str(), " must be f32 or f64");
  STRATA_CHECK(t.is_contiguous(), NotImplementedError, op, ": ", what, " ", t.str(),
               " must be contiguous");
}

// The gradient of `p` as a contiguous tensor of p's dtype and shape.
inline Tensor dense_grad(const char* op, const Tensor& p) {
  Tensor g = p.grad();
  STRATA_CHECK(g.shape() == p.shape(), ShapeError, op, ": gradient ", g.str(),
               " does not match its parameter ", p.str());
  STRATA_CHECK(g.dtype() == p.dtype(), TypeError, op, ": gradient ", g.str(),
               " has a different dtype than its parameter ", p.str());
  if (!g.is_contiguous()) g = g.contiguous();
  check_updatable(op, "gradient", g);
  return g;
}

// Calls fn(T{}) with T = float or double for `dtype`.
template <class Fn>
void dispatch_floating(DType dtype, Fn&& fn) {
  if (dtype == DType::f64)
    fn(double{});
  else
    fn(float{});
}

}  // namespace strata::optim::detail
