// BERT against PyTorch (tools/goldens/bert_goldens.py, Hugging Face's layout in plain torch):
// hidden states, MLM logits at the masked positions, loss, every gradient, AdamW steps; the
// classification head; names, scopes and the padding row.
#include "strata/models/bert.h"

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

std::string fixture_path(const std::string& name) {
  return std::string(STRATA_TEST_DATA_DIR) + "/goldens/bert/bert_" + name + ".safetensors";
}

models::BertConfig config_of(const FixtureFile& f) {
  nlohmann::json c = nlohmann::json::parse(f.metadata("config"));
  models::BertConfig b;
  b.vocab_size = c["vocab_size"], b.hidden_size = c["hidden_size"], b.num_hidden_layers = c["num_hidden_layers"];
  b.num_attention_heads = c["num_attention_heads"], b.intermediate_size = c["intermediate_size"];
  b.max_position_embeddings = c["max_position_embeddings"], b.type_vocab_size = c["type_vocab_size"];
  b.pad_token_id = c["pad_token_id"];
  if (c.contains("num_labels")) b.num_labels = c["num_labels"];
  b.hidden_dropout_prob = 0.0;
  return b;
}

nn::StateDict state_of(const FixtureFile& f, const std::string& prefix, DType dtype) {
  nn::StateDict sd;
  for (const std::string& n : f.names(prefix)) sd.insert(n, f.tensor(prefix + n, dtype));
  return sd;
}

std::shared_ptr<models::BertForMaskedLM> load_mlm(const FixtureFile& f, DType dtype) {
  auto m = std::make_shared<models::BertForMaskedLM>(config_of(f));
  m->to(dtype);
  m->load_state_dict(state_of(f, "param.", dtype));
  return m;
}

struct Batch {
  Tensor ids, types, mask, labels;
};
Batch batch_of(const FixtureFile& f) {
  return {f.tensor("input_ids", DType::i64), f.tensor("token_type_ids", DType::i64),
          f.tensor("attention_mask", DType::i64), f.tensor("labels", DType::i64)};
}

// Max abs error over the largest magnitude of `want`, floored at 1e-4: the key biases' true
// gradient is zero (softmax ignores a per-row constant), so both sides hold rounding noise there.

}  // namespace

class BertParity : public ::testing::TestWithParam<const char*> {};

// Hidden states, masked-position logits, loss and every parameter gradient equal PyTorch's
// (computed in float64, stored in f32).
TEST_P(BertParity, OutputsLossAndAllGradientsMatchPyTorch) {
  FixtureFile f(fixture_path(GetParam()));
  auto model = load_mlm(f, DType::f64);
  Batch b = batch_of(f);
  {
    NoGradGuard ng;
    EXPECT_LT(max_rel_err(model->hidden_states(b.ids, b.types, b.mask), f.tensor("hidden_states"), 1e-4),
              1e-6);
    EXPECT_LT(max_rel_err(model->mlm_logits(b.ids, b.types, b.mask, b.labels), f.tensor("mlm_logits"), 1e-4),
              1e-6);
  }
  Tensor loss = model->loss(b.ids, b.types, b.mask, b.labels);
  EXPECT_NEAR(loss.item(), std::stod(f.metadata("loss")), 1e-12);
  loss.backward();
  int checked = 0;
  for (const auto& [name, p] : model->named_parameters()) {
    ASSERT_TRUE(f.has("grad." + name)) << "PyTorch has no parameter " << name;
    ASSERT_TRUE(p.grad().defined()) << name;
    EXPECT_LT(max_rel_err(p.grad(), f.tensor("grad." + name), 1e-4), 1e-6) << name;
    ++checked;
  }
  EXPECT_EQ(checked, int(f.names("grad.").size()));
}

// Five AdamW steps (weight decay on >= 2-D parameters, clipping at 1.0) give PyTorch's losses.
TEST_P(BertParity, FiveAdamWStepsMatchPyTorchLosses) {
  FixtureFile f(fixture_path(GetParam()));
  auto model = load_mlm(f, DType::f64);
  Batch b = batch_of(f);
  std::vector<Tensor> decay, no_decay;
  for (const Tensor& p : model->parameters()) (p.dim() >= 2 ? decay : no_decay).push_back(p);
  optim::AdamWOptions o = optim::AdamWOptions(1e-3).betas(0.9, 0.999).eps(1e-6);
  optim::AdamW opt({optim::ParamGroup(decay, optim::AdamWOptions(o).weight_decay(0.01)),
                    optim::ParamGroup(no_decay, optim::AdamWOptions(o).weight_decay(0.0))},
                   o);
  std::vector<double> want = nlohmann::json::parse(f.metadata("adamw_losses")).get<std::vector<double>>();
  for (size_t step = 0; step < want.size(); ++step) {
    Tensor loss = model->loss(b.ids, b.types, b.mask, b.labels);
    EXPECT_NEAR(loss.item(), want[step], 1e-9 * std::abs(want[step])) << "step " << step;
    opt.zero_grad();
    loss.backward();
    optim::clip_grad_norm_(model->parameters(), 1.0);
    opt.step();
  }
}

// In f32 the same model agrees with the float64 reference to f32 accuracy.
TEST_P(BertParity, F32ForwardAndBackwardAgreeWithReference) {
  FixtureFile f(fixture_path(GetParam()));
  auto model = load_mlm(f, DType::f32);
  Batch b = batch_of(f);
  Tensor loss = model->loss(b.ids, b.types, b.mask, b.labels);
  EXPECT_NEAR(loss.item(), std::stod(f.metadata("loss")), 2e-5);
  loss.backward();
  for (const auto& [name, p] : model->named_parameters())
    EXPECT_LT(max_rel_err(p.grad(), f.tensor("grad." + name), 1e-4), 2e-3) << name;
}

INSTANTIATE_TEST_SUITE_P(Configs, BertParity, ::testing::Values("pow2", "odd"));

// The pooler + classifier head (Hugging Face's BertForSequenceClassification) on the padded,
// odd-sized batch: logits, loss and every gradient.
TEST(BertClassifier, LogitsLossAndGradientsMatchPyTorch) {
  FixtureFile f(fixture_path("odd"));
  auto model = std::make_shared<models::BertForSequenceClassification>(config_of(f));
  model->to(DType::f64);
  model->load_state_dict(state_of(f, "seqcls.param.", DType::f64));
  Batch b = batch_of(f);
  Tensor labels = f.tensor("seqcls.labels", DType::i64);
  EXPECT_LT(max_rel_err((*model).forward(b.ids, b.types, b.mask), f.tensor("seqcls.logits"), 1e-4), 1e-6);
  Tensor loss = model->loss(b.ids, b.types, b.mask, labels);
  EXPECT_NEAR(loss.item(), std::stod(f.metadata("seqcls.loss")), 1e-12);
  loss.backward();
  int checked = 0;
  for (const auto& [name, p] : model->named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
    EXPECT_LT(max_rel_err(p.grad(), f.tensor("seqcls.grad." + name), 1e-4), 1e-6) << name;
    ++checked;
  }
  EXPECT_EQ(checked, int(f.names("seqcls.grad.").size()));
}

TEST(Bert, HuggingFaceNamesTiedDecoderAndBlocks) {
  models::BertForMaskedLM m(models::BertConfig::preset("tiny"));
  nn::StateDict sd = m.state_dict();
  for (const char* k : {"bert.embeddings.word_embeddings.weight", "bert.embeddings.token_type_embeddings.weight",
                        "bert.embeddings.LayerNorm.bias", "bert.encoder.layer.1.attention.self.query.weight",
                        "bert.encoder.layer.1.attention.output.LayerNorm.weight",
                        "bert.encoder.layer.0.intermediate.dense.weight", "bert.encoder.layer.0.output.dense.bias",
                        "cls.predictions.bias", "cls.predictions.transform.dense.weight",
                        "cls.predictions.transform.LayerNorm.weight", "cls.predictions.decoder.weight",
                        "cls.predictions.decoder.bias"})
    EXPECT_TRUE(sd.contains(k)) << k;
  EXPECT_EQ(sd.at("cls.predictions.decoder.weight").data_ptr(), sd.at("bert.embeddings.word_embeddings.weight").data_ptr());
  EXPECT_EQ(sd.at("cls.predictions.decoder.bias").data_ptr(), sd.at("cls.predictions.bias").data_ptr());
  EXPECT_FALSE(sd.contains("bert.pooler.dense.weight")) << "BertForMaskedLM has no pooler";
  const models::BertConfig& c = m.config();
  EXPECT_EQ(m.num_parameters(), c.num_parameters() + c.vocab_size + c.hidden_size * c.hidden_size + 3 * c.hidden_size);
  // The padding row starts at zero (Hugging Face's _init_weights).
  Tensor pad = ops::select(m.bert->embeddings->word_embeddings->weight, 0, c.pad_token_id);
  EXPECT_EQ(ops::sum(ops::abs(pad)).item(), 0.0);

  auto s = std::make_shared<strata::testing::SaveRecorder>();
  {
    autograd::SavePolicyGuard g(s);
    Tensor ids = ops::full({2, 8}, 7.0, DType::i64), labels = ops::full({2, 8}, -100.0, DType::i64);
    labels.data<int64_t>()[3] = 5;
    m.loss(ids, Tensor(), Tensor(), labels);
  }
  // The scopes are the named_modules() paths, as the state_dict names are.
  for (const char* scope : {"bert.embeddings.LayerNorm", "bert.encoder.layer.1.attention.self",
                            "bert.encoder.layer.0.intermediate", "bert.encoder.layer.0.output.dense",
                            "cls.predictions.transform.dense", "cls.predictions.decoder"})
    EXPECT_TRUE(s->scopes().count(scope)) << scope;
  EXPECT_TRUE(s->blocks().count("bert.encoder.layer.0"));
  EXPECT_TRUE(s->blocks().count("bert.encoder.layer.1"));
}

TEST(Bert, PresetsAndConfigErrors) {
  models::BertConfig base = models::BertConfig::preset("bert-base");
  EXPECT_EQ(base.num_parameters(/*with_pooler=*/true), 109482240);  // bert-base-uncased's BertModel
  EXPECT_EQ(models::BertConfig::preset("bert-large").num_parameters(true), 335141888);
  EXPECT_THROW(models::BertConfig::preset("bert-huge"), ValueError);
  models::BertConfig c = models::BertConfig::preset("tiny");
  c.attention_probs_dropout_prob = 0.1;
  EXPECT_THROW(c.validate(), NotImplementedError);
  c = models::BertConfig::preset("tiny");
  c.num_attention_heads = 3;
  EXPECT_THROW(models::BertModel m(c), ValueError);
  models::BertModel m(models::BertConfig::preset("tiny"));
  EXPECT_THROW(m.forward(ops::zeros({1, 129}, DType::i64)), ValueError);  // longer than the positions
}

// Padding changes nothing for the real tokens: a sequence padded with [PAD] + mask gives the
// hidden states of the same sequence alone, whatever the padded positions hold.
TEST(Bert, PaddedPositionsDoNotLeakIntoRealTokens) {
  manual_seed(5);
  models::BertModel m(models::BertConfig::preset("tiny"), false);
  m.eval();
  NoGradGuard ng;
  const std::vector<int64_t> ids = {257, 10, 20, 30, 258};
  std::vector<int64_t> keep(8, 1);
  keep[5] = keep[6] = keep[7] = 0;
  Tensor alone = m.forward(ops::from_vector(ids, {1, 5}), Tensor(), Tensor());
  for (int64_t filler : {int64_t(256), int64_t(7)}) {
    std::vector<int64_t> padded = ids;
    padded.insert(padded.end(), 3, filler);
    Tensor out = m.forward(ops::from_vector(padded, {1, 8}), Tensor(), ops::from_vector(keep, {1, 8}));
    EXPECT_LT(max_rel_err(ops::narrow(out, 1, 0, 5).contiguous(), alone, 1e-4), 1e-5) << "filler " << filler;
  }
}

// A config made from a state dict's shapes equals the model's that wrote it.
TEST(BertConfig, FromAStateDictsShapes) {
  models::BertConfig c = models::BertConfig::preset("tiny");
  c.num_hidden_layers = 3, c.intermediate_size = 96, c.max_position_embeddings = 40, c.vocab_size = 300;
  const models::BertConfig back =
      models::BertConfig::from_state_dict(models::BertForMaskedLM(c).state_dict(), c.num_attention_heads);
  EXPECT_EQ(back.vocab_size, c.vocab_size);
  EXPECT_EQ(back.hidden_size, c.hidden_size);
  EXPECT_EQ(back.num_hidden_layers, 3);
  EXPECT_EQ(back.intermediate_size, 96);
  EXPECT_EQ(back.max_position_embeddings, 40);
  EXPECT_EQ(back.type_vocab_size, c.type_vocab_size);
  EXPECT_EQ(back.num_attention_heads, c.num_attention_heads);
}
