// Where the gradient of a NaN-propagating max or min goes (gspmm's max and min, SAGE's aggregators)
// on every backend present: to the NaN that won, not to the finite value it met first. That NaN
// reaches the outputs of relu, clamp, max-pool, gspmm and segment max at all is checked by the
// conformance table's ".nan" rows (tests/ops/conformance_test.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "strata/autograd/engine.h"
#include "strata/ops.h"
#include "strata/ops/graph.h"
#include "strata/ops/graph_ops.h"
#include "strata/ops/segment_ops.h"
#include "support/device_present.h"

namespace strata {
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<Device> devices() {
  std::vector<Device> d{kCPU};
  if (testing::backend_present(DeviceType::Sim)) d.push_back(sim(0));
  if (testing::backend_present(DeviceType::CUDA)) d.push_back(cuda(0));
  return d;
}

std::vector<double> values(const Tensor& t) { return t.to(kCPU).to_double_vector(); }

// Which entries are NaN.
std::vector<bool> nan_at(const Tensor& t) {
  std::vector<bool> r;
  for (double v : values(t)) r.push_back(std::isnan(v));
  return r;
}

// Node 2 receives from 0 and then 1, node 3 from 1; node 1's second feature is NaN, so node 2's
// second feature meets a finite value first and the NaN after it.
TEST(NanPropagation, GraphMaxAndMinKeepNaNAndSendItsGradient) {
  for (Device dev : devices()) {
    SCOPED_TRACE(dev.str());
    Tensor src = ops::from_vector(std::vector<int64_t>{0, 1, 1}, {3});
    Tensor dst = ops::from_vector(std::vector<int64_t>{2, 2, 3}, {3});
    Graph g = Graph::from_edges(4, src, dst).to(dev);
    for (const char* reduce : {"max", "min"}) {
      SCOPED_TRACE(reduce);
      Tensor x = ops::from_vector(std::vector<float>{1.f, 3.f, 2.f, float(kNaN), 0.f, 0.f, 0.f, 0.f}, {4, 2})
                     .to(dev)
                     .detach()
                     .set_requires_grad(true);
      Tensor y = ops::gspmm(g, x, Tensor(), reduce);
      EXPECT_EQ(nan_at(y), (std::vector<bool>{false, false, false, false, false, true, false, true}));
      // The loss is NaN but its gradient is not: each output's goes to the edge that gave it.
      Tensor gy = ops::ones({4, 2}).to(dev);
      std::vector<Tensor> gx = autograd::grad({ops::sum(ops::mul(y, gy))}, {x});
      const std::vector<double> d = values(gx[0]);
      EXPECT_EQ(d[1], 0.0) << "node 0's finite feature lost to the NaN";
      EXPECT_EQ(d[3], 2.0) << "the NaN gave both outputs";
    }
    Tensor rows = ops::from_vector(std::vector<float>{1.f, float(kNaN), 5.f, 2.f}, {4, 1}).to(dev);
    Tensor offsets = ops::from_vector(std::vector<int64_t>{0, 2, 4}, {3}).to(dev);
    EXPECT_EQ(nan_at(ops::segment_reduce(rows, offsets, "max")), (std::vector<bool>{true, false}));
  }
}

}  // namespace
}  // namespace strata
