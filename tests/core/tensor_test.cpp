#include <gtest/gtest.h>

#include "strata/ops.h"

using namespace strata;

TEST(Tensor, ContiguousStridesAndViews) {
  Tensor t = ops::arange(24, DType::f32).reshape({2, 3, 4});
  EXPECT_EQ(t.strides(), (Shape{12, 4, 1}));
  Tensor p = t.permute({2, 0, 1});
  EXPECT_EQ(p.shape(), (Shape{4, 2, 3}));
  EXPECT_FALSE(p.is_contiguous());
  Tensor c = p.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  std::vector<double> v = c.to_double_vector();
  // c[i][j][k] = t[j][k][i] = 12 j + 4 k + i
  EXPECT_EQ(v[0], 0);
  EXPECT_EQ(v[1], 4);
  EXPECT_EQ(v[3], 12);
  EXPECT_EQ(v[6], 1);
}

// Integer tensors read into integers exactly, whatever their dtype and layout: 2^53 + 1 has no
// double, so a read through double would give 2^53.
TEST(Tensor, IntegerElementsReadBackExactly) {
  const int64_t big = (int64_t(1) << 53) + 1;
  Tensor t = ops::from_vector(std::vector<int64_t>{big, -big, 7, INT64_MAX}, {2, 2});
  EXPECT_EQ(t.to_vector<int64_t>(), (std::vector<int64_t>{big, -big, 7, INT64_MAX}));
  EXPECT_EQ(t.t().to_vector<int64_t>(), (std::vector<int64_t>{big, 7, -big, INT64_MAX}));
  EXPECT_EQ(t.to_int64_vector(), t.to_vector<int64_t>());
  Tensor small = ops::from_vector(std::vector<int64_t>{-3, 0, 250}, {3}).to(DType::i32);
  EXPECT_EQ(small.to_vector<int>(), (std::vector<int>{-3, 0, 250}));
  EXPECT_EQ(ops::from_vector(std::vector<double>{2.75, -1.5}, {2}).to_vector<int64_t>(),
            (std::vector<int64_t>{2, -1}));  // a floating tensor truncates, as before
  EXPECT_THROW(ops::from_vector(std::vector<double>{1.0}, {1}).to_int64_vector(), TypeError);
}
