// Layers: PyTorch layouts, names, default inits, modes, and the containers' names and scopes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numbers>
#include <string>
#include <vector>

#include "strata/autograd/saved_tensor.h"
#include "strata/models/layers/activation.h"
#include "strata/models/layers/container.h"
#include "strata/models/layers/dropout.h"
#include "strata/models/layers/embedding.h"
#include "strata/models/layers/layer_norm.h"
#include "strata/models/layers/linear.h"
#include "strata/ops.h"
#include "support/save_recorder.h"

using namespace strata;

namespace {

TEST(Linear, UsesPyTorchLayoutAndComputesXWTransposePlusB) {
  nn::Linear fc(nn::LinearOptions(3, 2).dtype(DType::f64));
  EXPECT_EQ(fc.weight.shape(), (Shape{2, 3}));
  EXPECT_EQ(fc.bias.shape(), (Shape{2}));
  EXPECT_EQ(fc.named_parameters().keys(), (std::vector<std::string>{"weight", "bias"}));
  Tensor x = ops::from_vector(std::vector<double>{1, 2, 3, -1, 0, 4}, {2, 3}, DType::f64);
  std::vector<double> w = fc.weight.to_double_vector(), b = fc.bias.to_double_vector(), xv = x.to_double_vector();
  std::vector<double> y = fc(x).to_double_vector();
  for (int n = 0; n < 2; ++n)
    for (int o = 0; o < 2; ++o) {
      double want = b[o];
      for (int i = 0; i < 3; ++i) want += xv[n * 3 + i] * w[o * 3 + i];
      EXPECT_NEAR(y[n * 2 + o], want, 1e-12);
    }
}

TEST(Linear, DefaultInitIsUniformWithinOneOverSqrtFanInFromTheCurrentGenerator) {
  manual_seed(7);
  nn::Linear a(nn::LinearOptions(64, 128));
  manual_seed(7);
  nn::Linear b(64, 128);
  EXPECT_EQ(a.weight.to_double_vector(), b.weight.to_double_vector());
  EXPECT_EQ(a.bias.to_double_vector(), b.bias.to_double_vector());
  const double bound = 1.0 / std::sqrt(64.0);
  double lo = 1, hi = -1, mean = 0;
  std::vector<double> w = a.weight.to_double_vector();
  for (double v : w) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    mean += v / double(w.size());
  }
  EXPECT_GE(lo, -bound);
  EXPECT_LE(hi, bound);
  EXPECT_LT(lo, -0.95 * bound);  // spans the range
  EXPECT_GT(hi, 0.95 * bound);
  EXPECT_NEAR(mean, 0.0, 0.01);
  for (double v : a.bias.to_double_vector()) EXPECT_LE(std::abs(v), bound);
  EXPECT_TRUE(a.weight.is_parameter());
  EXPECT_EQ(a.weight.storage()->category(), MemoryCategory::Parameter);
}

TEST(Linear, WithoutBiasHasOnlyAWeight) {
  nn::Linear fc(nn::LinearOptions(4, 5).bias(false));
  EXPECT_FALSE(fc.bias.defined());
  EXPECT_EQ(fc.named_parameters().keys(), std::vector<std::string>{"weight"});
  EXPECT_EQ(fc(ops::zeros({2, 4})).shape(), (Shape{2, 5}));
}

TEST(Embedding, PicksRowsOfTheWeight) {
  nn::Embedding emb(nn::EmbeddingOptions(10, 3).dtype(DType::f64));
  EXPECT_EQ(emb.weight.shape(), (Shape{10, 3}));
  Tensor idx = ops::from_vector(std::vector<int64_t>{7, 2, 7, 0}, {2, 2});
  Tensor y = emb(idx);
  EXPECT_EQ(y.shape(), (Shape{2, 2, 3}));
  std::vector<double> w = emb.weight.to_double_vector(), yv = y.to_double_vector();
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(yv[0 * 3 + c], w[7 * 3 + c]);
    EXPECT_EQ(yv[1 * 3 + c], w[2 * 3 + c]);
    EXPECT_EQ(yv[3 * 3 + c], w[0 * 3 + c]);
  }
}

TEST(LayerNorm, StartsAsPlainNormalizationWithPyTorchNames) {
  nn::LayerNorm ln(nn::LayerNormOptions({4}).dtype(DType::f64));
  EXPECT_EQ(ln.named_parameters().keys(), (std::vector<std::string>{"weight", "bias"}));
  EXPECT_EQ(ln.weight.to_double_vector(), (std::vector<double>{1, 1, 1, 1}));
  EXPECT_EQ(ln.bias.to_double_vector(), (std::vector<double>{0, 0, 0, 0}));
  std::vector<double> y = ln(ops::from_vector(std::vector<double>{1, 2, 3, 4}, {1, 4}, DType::f64)).to_double_vector();
  const double var = 1.25, rstd = 1.0 / std::sqrt(var + 1e-5);
  EXPECT_NEAR(y[0], -1.5 * rstd, 1e-12);
  EXPECT_NEAR(y[3], 1.5 * rstd, 1e-12);
  nn::LayerNorm plain(nn::LayerNormOptions({4}).elementwise_affine(false));
  EXPECT_TRUE(plain.parameters().empty());
}

TEST(Dropout, ZeroesAndScalesWhileTrainingAndIsIdentityInEval) {
  nn::Dropout drop(0.25);
  Tensor x = ops::ones({1000});
  std::vector<double> y = drop(x).to_double_vector();
  int zeros = 0;
  for (double v : y) {
    if (v == 0.0)
      ++zeros;
    else
      EXPECT_FLOAT_EQ(v, 1.0 / 0.75);
  }
  EXPECT_GT(zeros, 180);
  EXPECT_LT(zeros, 320);
  drop.eval();
  EXPECT_EQ(drop(x).to_double_vector(), x.to_double_vector());
  EXPECT_THROW(nn::Dropout(1.5), ValueError);
}

TEST(Activations, MatchTheirFormulas) {
  Tensor x = ops::from_vector(std::vector<double>{-1.0, 0.5}, {2}, DType::f64);
  std::vector<double> relu = nn::ReLU()(x).to_double_vector();
  EXPECT_EQ(relu, (std::vector<double>{0.0, 0.5}));
  std::vector<double> t = nn::Tanh()(x).to_double_vector();
  EXPECT_NEAR(t[0], std::tanh(-1.0), 1e-12);
  std::vector<double> g = nn::GELU()(x).to_double_vector();
  EXPECT_NEAR(g[1], 0.5 * 0.5 * (1 + std::erf(0.5 / std::sqrt(2.0))), 1e-12);
  std::vector<double> gt = nn::GELU("tanh")(x).to_double_vector();
  const double k = std::sqrt(2.0 / std::numbers::pi);
  EXPECT_NEAR(gt[0], -0.5 * (1 + std::tanh(k * (-1.0 - 0.044715))), 1e-12);
  EXPECT_THROW(nn::GELU("fast"), ValueError);
}

TEST(Sequential, ChainsChildrenNamedByIndex) {
  auto mlp = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(4, 8), std::make_shared<nn::GELU>(), std::make_shared<nn::Linear>(8, 4)});
  EXPECT_EQ(mlp->size(), 3u);
  EXPECT_EQ(mlp->named_parameters().keys(), (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  Tensor x = ops::randn({2, 4});
  Tensor want = (*mlp->at<nn::Linear>(2))(ops::gelu((*mlp->at<nn::Linear>(0))(x)));
  EXPECT_EQ((*mlp)(x).to_double_vector(), want.to_double_vector());
  EXPECT_THROW(mlp->at<nn::Linear>(1), TypeError);
  EXPECT_THROW((*mlp)[3], IndexError);
}

// A GPT-shaped stack: h (ModuleList) of blocks, each with an mlp Sequential.
class Stack : public nn::Module {
 public:
  Stack() {
    h = register_module("h", std::make_shared<nn::ModuleList>());
    for (int i = 0; i < 2; ++i) {
      auto block = h->push_back(std::make_shared<nn::Sequential>());
      block->push_back(std::make_shared<nn::LayerNorm>(4));
      block->push_back(std::make_shared<nn::Linear>(4, 4));
      block->mark_as_block();
    }
  }
  Tensor forward(const Tensor& x) override {
    Tensor y = x;
    for (const auto& b : *h) y = (*b)(y);
    return y;
  }
  std::shared_ptr<nn::ModuleList> h;
};

TEST(ModuleList, ItemsRunInTheListsScopeWithoutTheListBeingCalled) {
  Stack s;
  EXPECT_EQ(s.named_parameters().keys(),
            (std::vector<std::string>{"h.0.0.weight", "h.0.0.bias", "h.0.1.weight", "h.0.1.bias", "h.1.0.weight",
                                      "h.1.0.bias", "h.1.1.weight", "h.1.1.bias"}));
  auto rec = std::make_shared<strata::testing::SaveRecorder>();
  Tensor x = ops::randn({3, 4});
  x.set_requires_grad(true);
  {
    autograd::SavePolicyGuard guard(rec);
    s(x).sum().backward();
  }
  std::vector<std::string> scopes;  // "scope|block" of each save
  for (const auto& save : rec->saves) scopes.push_back(save.scope + "|" + save.block);
  EXPECT_NE(std::find(scopes.begin(), scopes.end(), "h.1.1|h.1"), scopes.end());
  EXPECT_NE(std::find(scopes.begin(), scopes.end(), "h.0.0|h.0"), scopes.end());
  for (const std::string& sc : scopes) EXPECT_EQ(sc.rfind("h.", 0), 0u) << sc;
}

}  // namespace
