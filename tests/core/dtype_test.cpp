#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "strata/core/backend.h"
#include "strata/core/op_observer.h"
#include "strata/ops.h"

using namespace strata;

namespace {
float bits_to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace

TEST(DType, Bf16RoundsToNearestEven) {
  EXPECT_EQ(bf16(1.0f).bits, 0x3f80);
  // 1 + 2^-8 is exactly halfway between two bf16 values: ties go to even (1.0).
  EXPECT_EQ(bf16(bits_to_float(0x3f808000u)).bits, 0x3f80);
  EXPECT_EQ(bf16(bits_to_float(0x3f818000u)).bits, 0x3f82);
  EXPECT_EQ(bf16(bits_to_float(0x3f808001u)).bits, 0x3f81);
  EXPECT_TRUE(std::isnan(float(bf16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(float(bf16(-2.5f)), -2.5f);
}

TEST(DType, F16HandlesNormalsSubnormalsAndOverflow) {
  EXPECT_EQ(f16(1.0f).bits, 0x3c00);
  EXPECT_EQ(f16(-2.0f).bits, 0xc000);
  EXPECT_EQ(f16(65504.0f).bits, 0x7bff);            // max finite
  EXPECT_EQ(f16(70000.0f).bits, 0x7c00);            // overflow to inf
  EXPECT_EQ(f16(std::ldexp(1.0f, -24)).bits, 0x0001);  // smallest subnormal
  EXPECT_EQ(f16(std::ldexp(1.0f, -26)).bits, 0x0000);  // rounds to zero
  EXPECT_EQ(float(f16(std::ldexp(3.0f, -20))), std::ldexp(3.0f, -20));
  EXPECT_EQ(f16(1.0f + std::ldexp(1.0f, -11)).bits, 0x3c00);  // tie to even
  for (uint32_t h = 0; h < 0x7c00; ++h) EXPECT_EQ(f16(f16::to_float(uint16_t(h))).bits, h) << h;
}

TEST(DType, PromotionFollowsPyTorch) {
  EXPECT_EQ(promote_types(DType::f32, DType::i64), DType::f32);
  EXPECT_EQ(promote_types(DType::bf16, DType::f32), DType::f32);
  EXPECT_EQ(promote_types(DType::bf16, DType::f16), DType::f32);
  EXPECT_EQ(promote_types(DType::i32, DType::i64), DType::i64);
  EXPECT_EQ(promote_types(DType::boolean, DType::u8), DType::u8);
  EXPECT_EQ(parse_dtype("bfloat16"), DType::bf16);
  EXPECT_THROW(parse_dtype("float8"), ValueError);
}

TEST(DType, ConversionsThroughTensorsRoundTrip) {
  Tensor x = ops::from_vector(std::vector<double>{-3.75, 0.5, 1.0, 250.0, 1e-3}, {5}, DType::f64);
  for (DType t : {DType::f32, DType::bf16, DType::f16}) {
    std::vector<double> back = x.to(t).to(DType::f64).to_double_vector();
    for (size_t i = 0; i < 5; ++i) EXPECT_NEAR(back[i], x.to_double_vector()[i], 4e-3 * std::abs(x.to_double_vector()[i])) << dtype_name(t);
  }
  Tensor i = x.to(DType::i64);
  EXPECT_EQ(i.to_double_vector(), (std::vector<double>{-3, 0, 1, 250, 0}));
  Tensor b = x.to(DType::boolean);
  EXPECT_EQ(b.to_double_vector(), (std::vector<double>{1, 1, 1, 1, 1}));
  Tensor u = ops::from_vector(std::vector<double>{0, 1, 255}, {3}, DType::u8);
  EXPECT_EQ(u.to(DType::f32).to_double_vector(), (std::vector<double>{0, 1, 255}));
}

TEST(DType, Bf16ArithmeticComputesInF32) {
  Tensor a = ops::from_vector(std::vector<double>{1.5, -2.0, 3.25}, {3}, DType::bf16);
  Tensor b = ops::from_vector(std::vector<double>{0.5, 4.0, -1.0}, {3}, DType::bf16);
  Tensor c = a * b + a;
  EXPECT_EQ(c.dtype(), DType::bf16);
  EXPECT_EQ(c.to_double_vector(), (std::vector<double>{2.25, -10.0, 0.0}));
  Tensor m = ops::matmul(a.reshape({1, 3}), b.reshape({3, 1}));
  EXPECT_EQ(m.dtype(), DType::bf16);
  EXPECT_DOUBLE_EQ(m.item(), 1.5 * 0.5 - 8.0 - 3.25);
}

TEST(Device, ParsesAndPrints) {
  EXPECT_EQ(Device::parse("cuda:3"), cuda(3));
  EXPECT_EQ(Device::parse("cpu"), kCPU);
  EXPECT_EQ(cuda(1).str(), "cuda:1");
  EXPECT_THROW(Device::parse("cuda:x"), DeviceError);
  EXPECT_THROW(Device::parse("tpu"), DeviceError);
}

TEST(Errors, BadShapesNameTheOpAndTheShapes) {
  Tensor a = ops::zeros({2, 3}), b = ops::zeros({4, 5});
  try {
    ops::matmul(a, b);
    FAIL();
  } catch (const ShapeError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("matmul"), std::string::npos) << m;
    EXPECT_NE(m.find("[2, 3]"), std::string::npos) << m;
    EXPECT_NE(m.find("[4, 5]"), std::string::npos) << m;
  }
  EXPECT_THROW(ops::add(ops::zeros({2, 3}), ops::zeros({3, 2})), ShapeError);
  EXPECT_THROW(ops::zeros({6}).view({4, -1}), ShapeError);
  EXPECT_THROW(ops::zeros({2, 3}).transpose(0, 1).view({6}), ShapeError);
  EXPECT_THROW(ops::cross_entropy(ops::zeros({2, 3}), ops::from_vector(std::vector<int64_t>{0, 3}, {2})), IndexError);
  EXPECT_THROW(ops::index_select(ops::zeros({2, 3}), 0, ops::from_vector(std::vector<int64_t>{5}, {1})), IndexError);
  EXPECT_THROW(ops::zeros({2}).data<double>(), TypeError);
}

TEST(MetaDevice, OpsRunOnShapesAloneAndReportCost) {
  Tensor a = ops::empty({64, 128}, kMeta), b = ops::empty({128, 32}, kMeta);
  CostCounter cost;
  Tensor c;
  {
    OpObserverGuard g(&cost);
    c = ops::gelu(ops::matmul(a, b));
  }
  EXPECT_EQ(c.shape(), (Shape{64, 32}));
  EXPECT_TRUE(c.device().is_meta());
  EXPECT_GE(cost.total.flops, 2.0 * 64 * 128 * 32);
  EXPECT_EQ(cost.num_ops, 2);
  EXPECT_THROW(c.data_ptr(), DeviceError);
}

TEST(Matmul, SizeOneAndEmptyLayoutsAreHandled) {
  // M = 1 output viewed through a transpose, and K = 0.
  Tensor a = ops::from_vector(std::vector<double>{1, 2, 3}, {1, 3}), b = ops::from_vector(std::vector<double>{1, 0, 2, 1, 0, 3}, {3, 2});
  EXPECT_EQ(ops::matmul(a, b).to_double_vector(), (std::vector<double>{5, 11}));
  // The backend writing into a [1, 2] output that is a transposed [2, 1] buffer (strides 1, 1).
  Tensor buf = ops::zeros({2, 1});
  Tensor out = buf.transpose(0, 1).unsqueeze(0);
  backend_for(kCPU).bmm(out, a.unsqueeze(0), b.unsqueeze(0), 1.0, 0.0);
  EXPECT_EQ(buf.to_double_vector(), (std::vector<double>{5, 11}));
  Tensor e = ops::matmul(ops::zeros({2, 0}), ops::zeros({0, 3}));
  EXPECT_EQ(e.shape(), (Shape{2, 3}));
  EXPECT_EQ(e.to_double_vector(), std::vector<double>(6, 0.0));
  EXPECT_TRUE(ops::zeros({2, 0}).transpose(0, 1).is_contiguous());
  EXPECT_EQ(ops::sum(ops::zeros({3, 0}), {1}).to_double_vector(), std::vector<double>(3, 0.0));
}
