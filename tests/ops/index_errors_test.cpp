// Indexing ops reject out-of-range indices with IndexError on every code path, including the
// parallel one (an exception escaping an OpenMP region would terminate the process).
#include <gtest/gtest.h>

#include "strata/ops.h"

namespace strata {
namespace {

TEST(ConformanceErrors, OutOfRangeIndexThrowsOnTheParallelPathToo) {
  for (int64_t n : {int64_t(12), int64_t(200)}) {  // 200 x 200 indices pass the parallel grain
    SCOPED_TRACE(n);
    Tensor x = ops::zeros({n, n});
    std::vector<int64_t> iv(size_t(n * n), 0);
    iv.back() = n;  // one past the end
    Tensor index = ops::from_vector(iv, {n, n});
    EXPECT_THROW(ops::gather(x, 1, index), IndexError);
    EXPECT_THROW(ops::scatter_add(x, 1, index, x), IndexError);
    Tensor flat = ops::from_vector(std::vector<int64_t>{0, n}, {2});
    EXPECT_THROW(ops::index_select(x, 0, flat), IndexError);
    EXPECT_THROW(ops::index_add(x, 0, flat, ops::zeros({2, n})), IndexError);
  }
}

}  // namespace
}  // namespace strata
