#include "strata/models/gpt.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "strata/strata.h"
#include "support/fixture_file.h"
#include "support/save_recorder.h"
#include "support/tensor_compare.h"

using namespace strata;
using strata::testing::FixtureFile;
using strata::testing::max_rel_err;

namespace {

models::GPTConfig config_of(const FixtureFile& f) {
  nlohmann::json c = nlohmann::json::parse(f.metadata("config"));
  models::GPTConfig g;
  g.n_layer = c["n_layer"], g.n_head = c["n_head"], g.n_embd = c["n_embd"];
  g.block_size = c["block_size"], g.vocab_size = c["vocab_size"];
  return g;
}

// A GPT in `dtype` holding the fixture's initial parameters.
std::shared_ptr<models::GPT> load_model(const FixtureFile& f, DType dtype) {
  auto m = std::make_shared<models::GPT>(config_of(f));
  m->to(dtype);
  nn::StateDict sd;
  for (const std::string& n : f.names("param.")) sd.insert(n, f.tensor("param." + n, dtype));
  m->load_state_dict(sd);
  return m;
}

}  // namespace

class GptParity : public ::testing::TestWithParam<const char*> {};

// Logits, loss and every parameter gradient equal PyTorch's (computed in float64, stored in f32).
TEST_P(GptParity, LogitsLossAndAllGradientsMatchPyTorch) {
  FixtureFile f(std::string(STRATA_TEST_DATA_DIR) + "/goldens/gpt/gpt_" + GetParam() + ".safetensors");
  auto model = load_model(f, DType::f64);
  Tensor idx = f.tensor("idx", DType::i64), targets = f.tensor("targets", DType::i64);
  Tensor logits = (*model)(idx);
  EXPECT_LT(max_rel_err(logits, f.tensor("logits")), 1e-6);
  Tensor loss = model->loss(idx, targets);
  EXPECT_NEAR(loss.item(), std::stod(f.metadata("loss")), 1e-12);
  loss.backward();
  int checked = 0;
  for (const auto& [name, p] : model->named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
    EXPECT_LT(max_rel_err(p.grad(), f.tensor("grad." + name)), 1e-6) << name;
    ++checked;
  }
  EXPECT_EQ(checked, int(f.names("grad.").size()));
}

// Ten AdamW steps (weight decay on >= 2-D parameters, clipping at 1.0) give PyTorch's losses.
TEST_P(GptParity, TenAdamWStepsMatchPyTorchLosses) {
  FixtureFile f(std::string(STRATA_TEST_DATA_DIR) + "/goldens/gpt/gpt_" + GetParam() + ".safetensors");
  auto model = load_model(f, DType::f64);
  Tensor idx = f.tensor("idx", DType::i64), targets = f.tensor("targets", DType::i64);
  std::vector<Tensor> decay, no_decay;
  for (const Tensor& p : model->parameters()) (p.dim() >= 2 ? decay : no_decay).push_back(p);
  optim::AdamWOptions o = optim::AdamWOptions(1e-3).betas(0.9, 0.95).eps(1e-8);
  optim::AdamW opt({optim::ParamGroup(decay, optim::AdamWOptions(o).weight_decay(0.1)),
                    optim::ParamGroup(no_decay, optim::AdamWOptions(o).weight_decay(0.0))},
                   o);
  std::vector<double> want = nlohmann::json::parse(f.metadata("adamw_losses")).get<std::vector<double>>();
  for (size_t step = 0; step < want.size(); ++step) {
    Tensor loss = model->loss(idx, targets);
    EXPECT_NEAR(loss.item(), want[step], 1e-9 * std::abs(want[step])) << "step " << step;
    opt.zero_grad();
    loss.backward();
    optim::clip_grad_norm_(model->parameters(), 1.0);
    opt.step();
  }
}

// In f32 the same model agrees with the float64 reference to f32 accuracy.
TEST_P(GptParity, F32ForwardAndBackwardAgreeWithReference) {
  FixtureFile f(std::string(STRATA_TEST_DATA_DIR) + "/goldens/gpt/gpt_" + GetParam() + ".safetensors");
  auto model = load_model(f, DType::f32);
  Tensor idx = f.tensor("idx", DType::i64), targets = f.tensor("targets", DType::i64);
  Tensor loss = model->loss(idx, targets);
  EXPECT_NEAR(loss.item(), std::stod(f.metadata("loss")), 2e-5);
  loss.backward();
  for (const auto& [name, p] : model->named_parameters())
    EXPECT_LT(max_rel_err(p.grad(), f.tensor("grad." + name)), 2e-3) << name;
}

INSTANTIATE_TEST_SUITE_P(Configs, GptParity, ::testing::Values("pow2", "odd"));

TEST(Gpt, ParameterNamesFollowNanoGptAndScopesAreBlocks) {
  models::GPT m(models::GPTConfig::preset("tiny"));
  nn::StateDict sd = m.state_dict();
  EXPECT_TRUE(sd.contains("transformer.h.1.attn.c_attn.weight"));
  EXPECT_TRUE(sd.contains("lm_head.weight"));
  EXPECT_EQ(sd.at("lm_head.weight").data_ptr(), sd.at("transformer.wte.weight").data_ptr()) << "tied";
  EXPECT_EQ(m.num_parameters(), m.config().num_parameters());
  auto s = std::make_shared<strata::testing::SaveRecorder>();
  {
    autograd::SavePolicyGuard g(s);
    m.loss(ops::zeros({1, 8}, DType::i64), ops::zeros({1, 8}, DType::i64));
  }
  EXPECT_TRUE(s->scopes().count("transformer.h.1.attn")) << "scopes seen: " << s->scopes().size();
  EXPECT_TRUE(s->scopes().count("transformer.h.0.mlp.c_fc"));
  EXPECT_TRUE(s->scopes().count("lm_head"));
  EXPECT_TRUE(s->blocks().count("transformer.h.0"));
  EXPECT_TRUE(s->blocks().count("transformer.h.1"));
}

TEST(Gpt, GenerationWithKvCacheMatchesFullRecompute) {
  manual_seed(3);
  models::GPT m(models::GPTConfig::preset("tiny"));
  m.eval();
  Tensor prompt = ops::from_vector(std::vector<int64_t>{1, 5, 9, 2, 7, 3}, {2, 3});
  Generator g(11);
  Tensor out = m.generate(prompt, {.max_new_tokens = 55, .temperature = 0.0}, g);
  ASSERT_EQ(out.shape(), (Shape{2, 58}));
  // Greedy decoding by recomputing the whole sequence each step must agree.
  std::vector<int64_t> toks = out.to_vector<int64_t>();
  NoGradGuard ng;
  for (int64_t t = 3; t < 58; ++t) {
    Tensor ctx = ops::narrow(out, 1, 0, t).contiguous();
    Tensor logits = m(ctx);
    Tensor last = ops::argmax(ops::select(logits, 1, t - 1), -1);
    std::vector<int64_t> want = last.to_vector<int64_t>();
    EXPECT_EQ(toks[size_t(t)], want[0]) << "position " << t;
    EXPECT_EQ(toks[size_t(58 + t)], want[1]) << "position " << t;
  }
  // Sampling is reproducible from the generator state.
  Generator g1(5), g2(5);
  EXPECT_EQ(m.generate(prompt, {.max_new_tokens = 20, .temperature = 0.9, .top_k = 10}, g1).to_vector<int64_t>(),
            m.generate(prompt, {.max_new_tokens = 20, .temperature = 0.9, .top_k = 10}, g2).to_vector<int64_t>());
  // Longer than block_size: the cache slides.
  Tensor long_out = m.generate(prompt, {.max_new_tokens = 70, .temperature = 1.0}, g1);
  EXPECT_EQ(long_out.size(1), 73);
}

// A config made from a state dict's shapes equals the model's that wrote it; a missing tensor is named.
TEST(GPTConfig, FromAStateDictsShapes) {
  models::GPTConfig c = models::GPTConfig::preset("tiny");
  c.n_layer = 3, c.block_size = 48, c.vocab_size = 300;
  const models::GPTConfig back = models::GPTConfig::from_state_dict(models::GPT(c).state_dict(), c.n_head);
  EXPECT_EQ(back.str(), c.str());
  nn::StateDict partial = models::GPT(c).state_dict();
  partial.erase("transformer.wpe.weight");
  try {
    models::GPTConfig::from_state_dict(partial, c.n_head);
    ADD_FAILURE() << "a state dict without transformer.wpe.weight was taken";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("transformer.wpe.weight is not in the state dict"),
              std::string::npos);
  }
}
