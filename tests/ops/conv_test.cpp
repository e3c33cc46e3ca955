// conv2d's oneDNN fast path against Strata's im2col oracle on ResNet-shaped problems (forward,
// backward-data, backward-weights, bias), and the ops' argument errors.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/cpu/cpu_backend.h"
#include "strata/config.h"
#include "strata/autograd/engine.h"
#include "strata/autograd/saved_tensor.h"
#include "strata/ops.h"

namespace strata {
namespace {

struct ConvCase {
  const char* name;
  Shape x, w;
  int64_t sh, sw, ph, pw, dh, dw, groups;
  bool bias;
};

Tensor randn(const Shape& s, uint64_t seed) {
  Generator g(seed);
  GeneratorGuard guard(g);
  return ops::randn(s, TensorOptions(DType::f32));
}

// max |a - b| / (max |b| + tiny)
double rel_err(const Tensor& a, const Tensor& b) {
  std::vector<double> x = a.to_double_vector(), y = b.to_double_vector();
  double err = 0, scale = 1e-30;
  for (size_t i = 0; i < x.size(); ++i) err = std::max(err, std::fabs(x[i] - y[i])), scale = std::max(scale, std::fabs(y[i]));
  return err / scale;
}

TEST(Conv2dFastPath, MatchesIm2colOracleForwardAndBackward) {
  const ConvCase cases[] = {
      {"stem7x7_s2", {2, 3, 32, 30}, {16, 3, 7, 7}, 2, 2, 3, 3, 1, 1, 1, false},
      {"3x3_s1", {2, 16, 14, 14}, {16, 16, 3, 3}, 1, 1, 1, 1, 1, 1, 1, false},
      {"3x3_s2_odd", {2, 16, 17, 13}, {32, 16, 3, 3}, 2, 2, 1, 1, 1, 1, 1, true},
      {"1x1_s2_even", {2, 32, 14, 14}, {64, 32, 1, 1}, 2, 2, 0, 0, 1, 1, 1, false},
      {"1x1_s1", {2, 64, 7, 7}, {16, 64, 1, 1}, 1, 1, 0, 0, 1, 1, 1, true},
      {"grouped_dilated", {1, 8, 11, 12}, {12, 2, 3, 3}, 1, 2, 2, 1, 2, 1, 4, true},
      {"odd_channels", {3, 5, 9, 7}, {7, 5, 3, 2}, 1, 1, 1, 0, 1, 1, 1, true},
  };
  for (const ConvCase& c : cases) {
    SCOPED_TRACE(c.name);
    Conv2dParams p;
    p.stride[0] = c.sh, p.stride[1] = c.sw, p.padding[0] = c.ph, p.padding[1] = c.pw;
    p.dilation[0] = c.dh, p.dilation[1] = c.dw, p.groups = c.groups;
    Tensor x = randn(c.x, 1), w = randn(c.w, 2), b = c.bias ? randn({c.w[0]}, 3) : Tensor();
    const int64_t P = (c.x[2] + 2 * c.ph - c.dh * (c.w[2] - 1) - 1) / c.sh + 1;
    const int64_t Q = (c.x[3] + 2 * c.pw - c.dw * (c.w[3] - 1) - 1) / c.sw + 1;
    const Shape ys{c.x[0], c.w[0], P, Q};
    Tensor y_fast = ops::empty(ys), y_ref = ops::empty(ys);
    cpu::conv2d_direct(y_ref, x, w, b, p);
#if STRATA_HAVE_DNNL
    ASSERT_TRUE(cpu::conv2d_dnnl(y_fast, x, w, b, p)) << "oneDNN refused the problem";
#else
    GTEST_SKIP() << "built without oneDNN: the oracle is the only path";
#endif
    EXPECT_LT(rel_err(y_fast, y_ref), 1e-5);

    Tensor gy = randn(ys, 4);
    Tensor gx_fast = ops::empty(c.x), gw_fast = ops::empty(c.w), gb_fast = c.bias ? ops::empty({c.w[0]}) : Tensor();
    Tensor gx_ref = ops::empty(c.x), gw_ref = ops::empty(c.w), gb_ref = c.bias ? ops::empty({c.w[0]}) : Tensor();
    ASSERT_TRUE(cpu::conv2d_backward_dnnl(gx_fast, gw_fast, gb_fast, gy, x, w, p));
    cpu::conv2d_backward_direct(gx_ref, gw_ref, gb_ref, gy, x, w, p);
    EXPECT_LT(rel_err(gx_fast, gx_ref), 1e-5);
    EXPECT_LT(rel_err(gw_fast, gw_ref), 1e-5);
    if (c.bias) {
      EXPECT_LT(rel_err(gb_fast, gb_ref), 1e-5);
    }
    // Only one of the two gradients asked for: the other stays untouched.
    Tensor gx_only = ops::empty(c.x);
    ASSERT_TRUE(cpu::conv2d_backward_dnnl(gx_only, Tensor(), Tensor(), gy, x, w, p));
    EXPECT_EQ(rel_err(gx_only, gx_fast), 0.0);
  }
}

TEST(Conv2dFastPath, RepeatedCallsGiveTheSameBits) {
  Tensor x = randn({2, 8, 15, 15}, 5), w = randn({8, 8, 3, 3}, 6);
  Tensor a = ops::conv2d(x, w, Tensor(), {2, 2}, {1, 1});
  Tensor b = ops::conv2d(x, w, Tensor(), {2, 2}, {1, 1});
  EXPECT_EQ(rel_err(a, b), 0.0);
}

TEST(ConvOps, SavesOnlyWhatBackwardReadsAndGradientsStayTheSame) {
  // An input that needs no gradient (the first convolution's images) is not saved, and a frozen
  // weight neither; the gradients that are asked for do not change (f32 fast path and f64 oracle).
  struct Saved final : autograd::SavePolicy {
    autograd::Packed pack(const Tensor& t, const autograd::SaveInfo& i) override {
      if (t.defined()) shapes.push_back(t.shape());
      return {t, nullptr};
    }
    Tensor unpack(autograd::Packed& p, const autograd::SaveInfo&) override { return p.tensor; }
    std::vector<Shape> shapes;
  };
  for (DType dt : {DType::f32, DType::f64}) {
    const Shape xs{2, 3, 9, 7}, ws{4, 3, 3, 3};
    Tensor x0 = randn(xs, 11).to(dt), w0 = randn(ws, 12).to(dt), gy = randn({2, 4, 5, 4}, 13).to(dt);
    auto run = [&](bool x_grad, bool w_grad, std::vector<Shape>* saved) {
      Tensor x = x0.detach(), w = w0.detach();
      x.set_requires_grad(x_grad);
      w.set_requires_grad(w_grad);
      auto policy = std::make_shared<Saved>();
      Tensor y;
      {
        autograd::SavePolicyGuard g(policy);
        y = ops::conv2d(x, w, Tensor(), {2, 2}, {1, 1});
      }
      *saved = policy->shapes;
      std::vector<Tensor> want;
      if (x_grad) want.push_back(x);
      if (w_grad) want.push_back(w);
      return autograd::grad({ops::sum(y * gy)}, want);
    };
    std::vector<Shape> both, w_only, x_only;
    std::vector<Tensor> g_both = run(true, true, &both);
    std::vector<Tensor> g_w = run(false, true, &w_only);   // saves x, not the weight
    std::vector<Tensor> g_x = run(true, false, &x_only);   // saves the weight, not x
    EXPECT_EQ(both, (std::vector<Shape>{xs, ws}));
    EXPECT_EQ(w_only, (std::vector<Shape>{xs}));
    EXPECT_EQ(x_only, (std::vector<Shape>{ws}));
    EXPECT_EQ(rel_err(g_w[0], g_both[1]), 0.0);
    EXPECT_EQ(rel_err(g_x[0], g_both[0]), 0.0);
  }
}

TEST(ConvOps, BadArgumentsNameTheOpAndShapes) {
  Tensor x = ops::zeros({2, 3, 8, 8}), w = ops::zeros({4, 2, 3, 3});
  try {
    ops::conv2d(x, w);
    FAIL() << "expected a ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("conv2d"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("[4, 2, 3, 3]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ops::conv2d(x, ops::zeros({4, 3, 11, 11})), ShapeError);   // kernel larger than the input
  EXPECT_THROW(ops::conv2d(x, ops::zeros({4, 3, 3, 3}), ops::zeros({5})), ShapeError);
  EXPECT_THROW(ops::conv2d(ops::zeros({3, 8, 8}), ops::zeros({4, 3, 3, 3})), ShapeError);
  EXPECT_THROW(ops::batch_norm(x, ops::zeros({4}), ops::ones({4})), ShapeError);
  EXPECT_THROW(ops::batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), false), ValueError);
  EXPECT_THROW(ops::batch_norm(ops::zeros({1, 3}), Tensor(), Tensor()), ValueError);  // one value per channel
  EXPECT_THROW(ops::max_pool2d(x, {3, 3}, {1, 1}, {2, 2}), ValueError);              // padding > kernel / 2
  EXPECT_THROW(ops::avg_pool2d(ops::zeros({1, 1, 2, 2}), {3, 3}), ShapeError);
  EXPECT_THROW(ops::adaptive_avg_pool2d(x, {0, 1}), ValueError);
}

TEST(BatchNormOp, RunningStatsFollowTorchAndEvalUsesThem) {
  // x: one channel, values 1..4 (mean 2.5, biased var 1.25, unbiased 5/3)
  Tensor x = ops::from_vector(std::vector<double>{1, 2, 3, 4}, {2, 1, 2, 1}, TensorOptions(DType::f32));
  Tensor rm = ops::zeros({1}), rv = ops::ones({1});
  Tensor y = ops::batch_norm(x, rm, rv, Tensor(), Tensor(), true, 0.1, 0.0);
  EXPECT_NEAR(rm.to_double_vector()[0], 0.25, 1e-6);
  EXPECT_NEAR(rv.to_double_vector()[0], 0.9 + 0.1 * 5.0 / 3.0, 1e-6);
  EXPECT_NEAR(y.to_double_vector()[0], (1 - 2.5) / std::sqrt(1.25), 1e-5);
  Tensor ye = ops::batch_norm(x, rm, rv, Tensor(), Tensor(), false, 0.1, 0.0);
  EXPECT_NEAR(ye.to_double_vector()[3], (4 - 0.25) / std::sqrt(rv.to_double_vector()[0]), 1e-5);
  EXPECT_NEAR(rm.to_double_vector()[0], 0.25, 1e-6);  // eval leaves them alone
}

}  // namespace
}  // namespace strata
