// Sizes whose product does not fit: a ShapeError naming the shape, never a wrapped count that
// allocates a few bytes and is written past (train_gnn --hidden 9223372036854775807 segfaulted so).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "strata/core/error.h"
#include "strata/core/factory.h"
#include "strata/core/shape.h"
#include "strata/core/tensor.h"
#include "support/error_of.h"

namespace strata {
namespace {

template <class F>
std::string shape_error(F&& f) {
  return testing::error_of<ShapeError>(std::forward<F>(f));
}

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

TEST(ShapeOverflow, ACountPastInt64IsRefusedByName) {
  const std::string m = shape_error([] { shape_numel({kMax, 128}); });
  EXPECT_NE(m.find("shape [9223372036854775807, 128] has more elements than a 64-bit count holds"),
            std::string::npos)
      << m;
  EXPECT_EQ(shape_numel({int64_t(1) << 31, int64_t(1) << 31}), int64_t(1) << 62);
  EXPECT_EQ(shape_numel({kMax, 1}), kMax);
  EXPECT_EQ(shape_numel({kMax, 0}), 0);
}

TEST(ShapeOverflow, BytesPastInt64AreRefusedByName) {
  EXPECT_EQ(shape_nbytes({3, 5}, 4, "empty"), 60u);
  const std::string m = shape_error([] { shape_nbytes({int64_t(1) << 61, 1}, 8, "empty"); });
  EXPECT_NE(m.find("empty: [2305843009213693952, 1] of 8-byte elements needs more bytes"), std::string::npos)
      << m;
  const std::string neg = shape_error([] { shape_nbytes({2, -3}, 4, "empty"); });
  EXPECT_NE(neg.find("empty: negative size in [2, -3]"), std::string::npos) << neg;
}

TEST(ShapeOverflow, FactoriesRefuseBeforeAllocating) {
  const std::string e = shape_error([] { Tensor::empty({kMax, 64}, DType::f32, kCPU); });
  EXPECT_NE(e.find("[9223372036854775807, 64]"), std::string::npos) << e;
  const std::string z = shape_error([] { zeros({int64_t(1) << 62, 4}); });
  EXPECT_NE(z.find("more elements than a 64-bit count holds"), std::string::npos) << z;
  const std::string f = shape_error([] { full({int64_t(1) << 61, 2}, 1.0); });
  EXPECT_NE(f.find("needs more bytes than a 64-bit size holds"), std::string::npos) << f;
}

}  // namespace
}  // namespace strata
