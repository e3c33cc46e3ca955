#include <gtest/gtest.h>

#include <cmath>

#include "strata/autograd/engine.h"
#include "strata/autograd/grad_mode.h"
#include "strata/autograd/saved_tensor.h"
#include "strata/ops.h"

using namespace strata;

namespace {
Tensor leaf(std::vector<double> v, Shape s) {
  return ops::from_vector(v, s, TensorOptions(DType::f64).requires_grad(true));
}
}  // namespace

TEST(AutogradEngine, DiamondGraphAccumulatesBothPaths) {
  Tensor x = leaf({1, 2, 3}, {3});
  Tensor y = ops::mul(x, x);
  Tensor z = ops::sum(ops::add(ops::mul(y, 2.0), ops::exp(x)));
  z.backward();
  std::vector<double> g = x.grad().to_double_vector();
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(g[size_t(i)], 4.0 * (i + 1) + std::exp(i + 1.0), 1e-12);
}

TEST(AutogradEngine, SecondBackwardNeedsRetainGraph) {
  Tensor x = leaf({0.5, -1.5}, {2});
  Tensor z = ops::sum(ops::tanh(x));
  z.backward(Tensor(), /*retain_graph=*/true);
  std::vector<double> g1 = x.grad().to_double_vector();
  z.backward();  // accumulates into .grad
  std::vector<double> g2 = x.grad().to_double_vector();
  for (size_t i = 0; i < 2; ++i) EXPECT_NEAR(g2[i], 2 * g1[i], 1e-15);
  EXPECT_THROW(z.backward(), AutogradError);
}

TEST(AutogradEngine, InPlaceModificationOfASavedTensorIsRejectedNamingTheOp) {
  Tensor x = leaf({1, 2}, {2});
  Tensor w = ops::from_vector(std::vector<double>{3, 4}, {2}, DType::f64);
  Tensor y = ops::sum(ops::mul(x, w));  // saves w for x's gradient
  ops::add_(w, ops::ones({2}, DType::f64));
  try {
    y.backward();
    FAIL() << "expected an AutogradError";
  } catch (const AutogradError& e) {
    EXPECT_NE(std::string(e.what()).find("MulBackward"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("modified in place"), std::string::npos) << e.what();
  }
}

TEST(AutogradEngine, RetainGradKeepsNonLeafGradients) {
  Tensor x = leaf({1, 2, 3}, {3});
  Tensor h = ops::mul(x, 3.0);
  h.retain_grad();
  Tensor z = ops::sum(ops::square(h));
  z.backward();
  std::vector<double> gh = h.grad().to_double_vector();
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(gh[size_t(i)], 2 * 3.0 * (i + 1), 1e-12);
}

TEST(AutogradEngine, PostAccumulateHookSeesTheReadyGradient) {
  Tensor x = leaf({1, 2}, {2});
  int calls = 0;
  double seen = 0;
  x.register_post_accumulate_grad_hook([&](const Tensor& t) {
    ++calls;
    seen = ops::sum(t.grad()).item();
  });
  ops::sum(ops::mul(x, 5.0)).backward();
  EXPECT_EQ(calls, 1);
  EXPECT_DOUBLE_EQ(seen, 10.0);
}

TEST(AutogradEngine, GradReturnsGradientsWithoutTouchingDotGrad) {
  Tensor x = leaf({1, 2}, {2});
  Tensor y = leaf({3, 4}, {2});
  Tensor z = ops::sum(ops::mul(x, y));
  std::vector<Tensor> g = autograd::grad({z}, {x, y});
  EXPECT_EQ(g[0].to_double_vector(), (std::vector<double>{3, 4}));
  EXPECT_EQ(g[1].to_double_vector(), (std::vector<double>{1, 2}));
  EXPECT_FALSE(x.grad().defined());
}

TEST(AutogradEngine, NoGradGuardRecordsNothing) {
  Tensor x = leaf({1, 2}, {2});
  NoGradGuard ng;
  Tensor y = ops::mul(x, 2.0);
  EXPECT_FALSE(y.requires_grad());
  EXPECT_EQ(y.grad_fn(), nullptr);
}

TEST(AutogradEngine, BackwardOnANonScalarNeedsAGradient) {
  Tensor x = leaf({1, 2}, {2});
  Tensor y = ops::mul(x, 2.0);
  EXPECT_THROW(y.backward(), AutogradError);
  y.backward(ops::ones({2}, DType::f64));
  EXPECT_EQ(x.grad().to_double_vector(), (std::vector<double>{2, 2}));
}

namespace {
// Copies every saved tensor out and drops the original: gradients must not change.
class CopyOutPolicy final : public autograd::SavePolicy {
 public:
  autograd::Packed pack(const Tensor& t, const autograd::SaveInfo& info) override {
    ++packs;
    ops_seen.push_back(info.op);
    auto copy = std::make_shared<Tensor>(ops::clone(t));
    return {Tensor(), copy};
  }
  Tensor unpack(autograd::Packed& p, const autograd::SaveInfo&) override {
    ++unpacks;
    return *std::static_pointer_cast<Tensor>(p.handle);
  }
  int packs = 0, unpacks = 0;
  std::vector<std::string> ops_seen;
};
}  // namespace

TEST(SavePolicy, EverySavedTensorGoesThroughThePolicyAndGradientsAreUnchanged) {
  auto run = [](bool with_policy, std::shared_ptr<CopyOutPolicy> policy) {
    manual_seed(3);
    Tensor x = ops::randn({4, 5}, TensorOptions(DType::f64).requires_grad(true));
    Tensor w = ops::randn({3, 5}, TensorOptions(DType::f64).requires_grad(true));
    std::unique_ptr<autograd::SavePolicyGuard> guard;
    if (with_policy) guard = std::make_unique<autograd::SavePolicyGuard>(policy);
    Tensor h = ops::gelu(ops::linear(x, w), "tanh");
    Tensor loss = ops::sum(ops::softmax(h, -1) * h);
    guard.reset();
    loss.backward();
    return std::make_pair(x.grad().to_double_vector(), w.grad().to_double_vector());
  };
  auto policy = std::make_shared<CopyOutPolicy>();
  auto ref = run(false, nullptr);
  auto got = run(true, policy);
  EXPECT_EQ(ref.first, got.first);
  EXPECT_EQ(ref.second, got.second);
  EXPECT_GT(policy->packs, 3);
  EXPECT_EQ(policy->unpacks, policy->packs);
}

TEST(AutogradEngine, GradientsHaveTheDtypeOfTheirTensor) {
  Tensor a = ops::from_vector(std::vector<double>{1, 2}, {2}, TensorOptions(DType::f32).requires_grad(true));
  Tensor b = ops::from_vector(std::vector<double>{3, 4}, {2}, TensorOptions(DType::f64).requires_grad(true));
  ops::sum(ops::mul(a, b)).backward();
  EXPECT_EQ(a.grad().dtype(), DType::f32);
  EXPECT_EQ(b.grad().dtype(), DType::f64);
  EXPECT_EQ(a.grad().to_double_vector(), (std::vector<double>{3, 4}));
}
