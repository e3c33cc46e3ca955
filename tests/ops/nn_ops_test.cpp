// ops/nn_ops.cpp beyond the conformance harness: what the ops report to the cost observers.
#include <gtest/gtest.h>

#include "strata/autograd/engine.h"
#include "strata/core/op_observer.h"
#include "strata/ops.h"

using namespace strata;

TEST(LayerNorm, BackwardReportsAMemoryBoundRowPassOnMeta) {
  // The planner's shape-only traces cost each backward node from what its ops report: a layer
  // norm's backward reads dy and x and writes dx, as many bytes as its forward moves and more.
  const int64_t B = 4, T = 32, C = 64;
  auto meta = [](Shape s) { return ops::empty(s, TensorOptions(DType::f32).device(kMeta).requires_grad(true)); };
  Tensor x = meta({B, T, C}), w = meta({C}), b = meta({C});
  Tensor y = ops::layer_norm(x, {C}, w, b, 1e-5);
  Tensor dy = ops::empty({B, T, C}, TensorOptions(DType::f32).device(kMeta));
  CostCounter backward;
  {
    OpObserverGuard g(&backward);
    std::vector<Tensor> grads = autograd::grad({y}, {x, w, b}, {dy});
    ASSERT_EQ(grads[0].shape(), x.shape());
  }
  const double rows = double(B * T * C) * 4.0;
  EXPECT_GE(backward.total.bytes_read, 2.0 * rows);
  EXPECT_GE(backward.total.bytes_written, rows);
  EXPECT_GT(backward.total.flops, 0.0);
}
