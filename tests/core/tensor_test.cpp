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
