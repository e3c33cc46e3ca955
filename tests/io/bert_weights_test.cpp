#include "strata/io/weights/bert_weights.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "strata/io/weights/safetensors.h"
#include "strata/models/bert.h"
#include "strata/strata.h"
#include "support/error_of.h"

using namespace strata;

namespace {

std::string temp_file(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() / ("strata_bert_w_" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return (d / name).string();
}

// `sd` with `name` replaced by `with`, or left out where `with` is undefined.
nn::StateDict edited(const nn::StateDict& sd, const std::string& name, const Tensor& with = Tensor()) {
  nn::StateDict out;
  for (const auto& [n, t] : sd)
    if (n != name)
      out.insert(n, t);
    else if (with.defined())
      out.insert(n, with);
  return out;
}

// The IoError that loading `sd`, written as a safetensors file, throws (and a failure when it loads).
std::string load_error(const nn::StateDict& sd) {
  const std::string path = temp_file("bad.safetensors");
  io::write_safetensors(path, sd);
  const std::string message = strata::testing::error_of<IoError>([&] { io::load_hf_bert_safetensors(path); });
  std::filesystem::remove(path);
  return message;
}

bool same(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.to_double_vector() == b.to_double_vector();
}

}  // namespace

// A BertForMaskedLM file (with HF's position_ids buffer and the tied decoder entries) loads into
// a fresh model that then computes the same MLM logits.
TEST(BertWeights, MaskedLmFileRoundTripsThroughHuggingFaceNames) {
  manual_seed(3);
  models::BertForMaskedLM a(models::BertConfig::preset("tiny"));
  nn::StateDict sd = a.state_dict();
  sd.insert("bert.embeddings.position_ids", ops::arange(int64_t(128)).contiguous());
  const std::string path = temp_file("mlm.safetensors");
  io::write_safetensors(path, sd);
  io::BertWeights w = io::load_hf_bert_safetensors(path);
  EXPECT_EQ(w.shape.num_hidden_layers, 2);
  EXPECT_EQ(w.shape.hidden_size, 64);
  EXPECT_EQ(w.shape.intermediate_size, 256);
  EXPECT_EQ(w.shape.vocab_size, 260);
  manual_seed(99);
  models::BertForMaskedLM b(models::BertConfig::preset("tiny"));
  b.load_state_dict(w.state_dict);
  a.eval(), b.eval();
  NoGradGuard ng;
  Tensor ids = ops::from_vector(std::vector<int64_t>{257, 3, 259, 7, 258, 9, 259, 258}, {1, 8});
  Tensor labels = ops::from_vector(std::vector<int64_t>{-100, -100, 5, -100, -100, -100, 8, -100}, {1, 8});
  EXPECT_TRUE(same(a.mlm_logits(ids, Tensor(), Tensor(), labels), b.mlm_logits(ids, Tensor(), Tensor(), labels)));
  std::filesystem::remove(path);
}

// A BertModel file: no "bert." prefix, old gamma/beta LayerNorm names, a pooler; no MLM head.
TEST(BertWeights, BertModelFileGetsThePrefixAndAFreshHead) {
  manual_seed(4);
  models::BertModel m(models::BertConfig::preset("tiny"), /*add_pooling_layer=*/true);
  nn::StateDict sd;
  for (const auto& [name, t] : m.state_dict()) {
    std::string n = name;
    if (n == "embeddings.LayerNorm.weight") n = "embeddings.LayerNorm.gamma";
    if (n == "embeddings.LayerNorm.bias") n = "embeddings.LayerNorm.beta";
    sd.insert(n, t);
  }
  const std::string path = temp_file("model.safetensors");
  io::write_safetensors(path, sd);
  io::BertWeights w = io::load_hf_bert_safetensors(path);
  EXPECT_TRUE(same(w.state_dict.at("bert.embeddings.LayerNorm.weight"), m.embeddings->LayerNorm->weight));
  EXPECT_TRUE(same(w.state_dict.at("bert.encoder.layer.1.output.dense.weight"),
                   m.layer->at<models::BertLayer>(1)->output->dense->weight));
  EXPECT_FALSE(w.state_dict.contains("bert.pooler.dense.weight"));
  EXPECT_EQ(ops::sum(w.state_dict.at("cls.predictions.transform.LayerNorm.weight")).item(), 64.0);
  models::BertForMaskedLM mlm(models::BertConfig::preset("tiny"));
  mlm.load_state_dict(w.state_dict);  // strict: every name present
  std::filesystem::remove(path);
}

TEST(BertWeights, BadFilesAreRefusedNamingTheKey) {
  manual_seed(5);
  models::BertForMaskedLM a(models::BertConfig::preset("tiny"));
  const nn::StateDict sd = a.state_dict();
  const std::string decoder = "cls.predictions.decoder.weight";
  std::string m = load_error(edited(sd, decoder, ops::add(sd.at(decoder), 1.0)));  // untied
  EXPECT_NE(m.find("cls.predictions.decoder.weight"), std::string::npos) << m;
  m = load_error(edited(sd, "bert.encoder.layer.1.intermediate.dense.bias"));
  EXPECT_NE(m.find("layer.1.intermediate.dense.bias"), std::string::npos) << m;
}

// A layer missing the tensor the layer count used to key on is reported as missing that tensor.
TEST(BertWeights, AMissingQueryWeightIsReportedAsMissingNotAsUnexpectedBias) {
  manual_seed(6);
  models::BertForMaskedLM a(models::BertConfig::preset("tiny"));
  const std::string m =
      load_error(edited(a.state_dict(), "bert.encoder.layer.1.attention.self.query.weight"));
  EXPECT_NE(m.find("missing 'bert.encoder.layer.1.attention.self.query.weight'"), std::string::npos) << m;
}

// Weights are floats: an I32 tensor is refused naming it and its dtype, not converted by value.
TEST(BertWeights, IntegerWeightsAreRefusedNamingTensorAndDtype) {
  manual_seed(7);
  models::BertForMaskedLM a(models::BertConfig::preset("tiny"));
  const nn::StateDict sd = a.state_dict();
  const std::string embeddings = "bert.embeddings.word_embeddings.weight";
  const std::string m =
      load_error(edited(sd, embeddings, ops::full(sd.at(embeddings).shape(), 1e9, DType::i32)));
  EXPECT_NE(m.find("'bert.embeddings.word_embeddings.weight' has dtype i32"), std::string::npos) << m;
}
