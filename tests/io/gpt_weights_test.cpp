#include "strata/io/weights/gpt_weights.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "strata/io/weights/safetensors.h"
#include "strata/models/gpt.h"
#include "strata/ops.h"
#include "support/error_of.h"
#include "support/loader_files.h"

using namespace strata;
using namespace strata::io;
namespace fs = std::filesystem;

namespace {

// Written by tools/goldens/gpt_weights_goldens.py: L=2 NH=4 C=20 V=97 T=12.
std::string fixture(const std::string& name) { return std::string(STRATA_TEST_DATA_DIR) + "/goldens/weights/" + name; }

nlohmann::json golden() {
  std::ifstream f(fixture("gpt2_tiny.json"));
  return nlohmann::json::parse(f);
}

std::string temp_path(const std::string& name) {
  auto d = fs::temp_directory_path() / ("strata_gpt_weights_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return (d / name).string();
}

using strata::testing::read_file;
using strata::testing::write_file;

std::string bytes_of(const Tensor& t) {
  Tensor c = t.contiguous();
  return std::string(static_cast<const char*>(c.data_ptr()), c.nbytes());
}

void expect_shape(const GptShape& s, int64_t padded_vocab) {
  EXPECT_EQ(s.n_layer, 2);
  EXPECT_EQ(s.n_head, 4);
  EXPECT_EQ(s.n_embd, 20);
  EXPECT_EQ(s.block_size, 12);
  EXPECT_EQ(s.vocab_size, 97);
  EXPECT_EQ(s.padded_vocab_size, padded_vocab);
}

// Every tensor bit-identical, in nanoGPT's order, lm_head tied to wte.
void expect_same_weights(const nn::StateDict& a, const nn::StateDict& b) {
  ASSERT_EQ(a.keys(), b.keys());
  for (const auto& [name, t] : a) {
    EXPECT_EQ(t.shape(), b.at(name).shape()) << name;
    EXPECT_EQ(bytes_of(t), bytes_of(b.at(name))) << name;
  }
}

// Checks every tensor against the golden summaries (bf16: the values rounded to bf16).
void expect_matches_golden(const nn::StateDict& sd, bool bf16) {
  const nlohmann::json g = golden()["tensors"];
  EXPECT_EQ(sd.size(), g.size() + 1);  // + lm_head.weight
  for (const auto& [name, want] : g.items()) {
    SCOPED_TRACE(name);
    const Tensor* t = sd.find(name);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->dtype(), DType::f32);
    EXPECT_EQ(t->shape(), want["shape"].get<Shape>());
    const float* p = t->contiguous().data<float>();
    double sum = 0, wsum = 0, mag = 0;
    for (int64_t i = 0; i < t->numel(); ++i) {
      sum += p[i];
      wsum += p[i] * double(i % 7 - 3);
      mag += std::fabs(p[i]) * 3;
    }
    const double tol = 1e-12 * mag + 1e-12;
    EXPECT_NEAR(sum, want[bf16 ? "bf16_sum" : "sum"].get<double>(), tol);
    EXPECT_NEAR(wsum, want[bf16 ? "bf16_weighted_sum" : "weighted_sum"].get<double>(), tol);
    if (!bf16) {
      for (size_t i = 0; i < want["first"].size(); ++i) EXPECT_EQ(double(p[i]), want["first"][i].get<double>()) << i;
    }
  }
  EXPECT_EQ(sd.at("lm_head.weight").impl(), sd.at("transformer.wte.weight").impl());
}

std::string io_error_of(const std::function<void()>& fn) { return strata::testing::error_of<IoError>(fn); }

}  // namespace

TEST(GptWeights, ParameterNamesFollowNanoGptOrder) {
  std::vector<std::string> names = gpt_parameter_names(2);
  ASSERT_EQ(names.size(), 2u + 2 * 12 + 2 + 1);
  EXPECT_EQ(names[0], "transformer.wte.weight");
  EXPECT_EQ(names[1], "transformer.wpe.weight");
  EXPECT_EQ(names[2], "transformer.h.0.ln_1.weight");
  EXPECT_EQ(names[4], "transformer.h.0.attn.c_attn.weight");
  EXPECT_EQ(names[13], "transformer.h.0.mlp.c_proj.bias");
  EXPECT_EQ(names[14], "transformer.h.1.ln_1.weight");
  EXPECT_EQ(names[26], "transformer.ln_f.weight");
  EXPECT_EQ(names.back(), "lm_head.weight");
}

TEST(GptWeights, HfImportTransposesConv1DWeightsIntoLinearLayout) {
  GptWeights w = load_hf_gpt2_safetensors(fixture("gpt2_tiny.safetensors"), /*n_head=*/4);
  expect_shape(w.shape, 97);
  EXPECT_EQ(w.state_dict.keys(), gpt_parameter_names(2));
  expect_matches_golden(w.state_dict, /*bf16=*/false);
}

TEST(GptWeights, HfImportAcceptsKeysWithoutPrefixAndNeedsAHeadCount) {
  Safetensors file = read_safetensors(fixture("gpt2_tiny.safetensors"));
  nn::StateDict bare;
  for (const auto& [key, t] : file.tensors) bare.insert(key.substr(std::string("transformer.").size()), t);
  const std::string path = temp_path("bare.safetensors");
  write_safetensors(path, bare, file.metadata);
  GptWeights w = load_hf_gpt2_safetensors(path, 4);
  expect_same_weights(w.state_dict, load_hf_gpt2_safetensors(fixture("gpt2_tiny.safetensors"), 4).state_dict);
  // C = 20 is no multiple of GPT-2's head size 64, so nothing is guessed; 5 heads of 4 also divide it.
  std::string m = io_error_of([&] { load_hf_gpt2_safetensors(path); });
  EXPECT_NE(
      m.find("n_embd 20 is not a multiple of GPT-2's head size 64, so it cannot be guessed: pass n_head"),
      std::string::npos)
      << m;
  EXPECT_EQ(load_hf_gpt2_safetensors(path, 5).shape.n_head, 5);
  EXPECT_THROW(load_hf_gpt2_safetensors(path, 3), IoError);
  // A config.json beside the file says it.
  const std::filesystem::path dir = temp_path("bare_with_config");
  std::filesystem::create_directories(dir);
  write_safetensors((dir / "model.safetensors").string(), bare, file.metadata);
  std::ofstream(dir / "config.json") << "{\"n_head\": 5, \"n_embd\": 20}\n";
  EXPECT_EQ(load_hf_gpt2_safetensors((dir / "model.safetensors").string()).shape.n_head, 5);
}

TEST(GptWeights, HfImportRejectsMissingMisshapedUnexpectedAndUntiedTensors) {
  const Safetensors file = read_safetensors(fixture("gpt2_tiny.safetensors"));
  auto variant = [&](const std::string& name, const std::function<void(nn::StateDict&)>& edit) {
    nn::StateDict d = file.tensors;
    edit(d);
    const std::string path = temp_path(name);
    write_safetensors(path, d, file.metadata);
    std::string m = io_error_of([&] { load_hf_gpt2_safetensors(path, 4); });
    EXPECT_NE(m.find(path), std::string::npos) << m;
    return m;
  };
  std::string m = variant("missing.st", [](nn::StateDict& d) { d.erase("transformer.h.1.mlp.c_fc.bias"); });
  EXPECT_NE(m.find("h.1.mlp.c_fc.bias"), std::string::npos) << m;
  m = variant("shape.st", [](nn::StateDict& d) {
    d.insert_or_assign("transformer.h.0.attn.c_proj.weight", ops::zeros({20, 21}));
  });
  EXPECT_NE(m.find("h.0.attn.c_proj.weight"), std::string::npos) << m;
  EXPECT_NE(m.find("[20, 21]"), std::string::npos) << m;
  // A [out, in] (already transposed) c_fc weight is not the HF layout.
  m = variant("layout.st", [](nn::StateDict& d) {
    d.insert_or_assign("transformer.h.0.mlp.c_fc.weight", d.at("transformer.h.0.mlp.c_fc.weight").t().contiguous());
  });
  EXPECT_NE(m.find("Conv1D"), std::string::npos) << m;
  m = variant("extra.st", [](nn::StateDict& d) { d.insert("transformer.h.0.attn.rotary", ops::zeros({2})); });
  EXPECT_NE(m.find("h.0.attn.rotary"), std::string::npos) << m;
  m = variant("untied.st", [](nn::StateDict& d) { d.insert("lm_head.weight", ops::zeros({97, 20})); });
  EXPECT_NE(m.find("lm_head.weight"), std::string::npos) << m;
  m = variant("int.st", [](nn::StateDict& d) {
    d.insert_or_assign("transformer.ln_f.bias", ops::arange(int64_t(20)));
  });
  EXPECT_NE(m.find("ln_f.bias"), std::string::npos) << m;
  // A tied lm_head (equal to wte) is accepted; so are F16/BF16 files.
  nn::StateDict tied = file.tensors;
  tied.insert("lm_head.weight", tied.at("transformer.wte.weight").clone());
  for (auto& [key, t] : tied)
    if (key.find(".ln_") != std::string::npos) t = t.to(DType::bf16);
  const std::string path = temp_path("tied.st");
  write_safetensors(path, tied, file.metadata);
  GptWeights w = load_hf_gpt2_safetensors(path, 4);
  EXPECT_EQ(w.state_dict.at("transformer.h.0.ln_1.weight").dtype(), DType::f32);
}

TEST(GptWeights, LlmcF32ImportEqualsHfImport) {
  GptWeights llmc = load_llmc_checkpoint(fixture("gpt2_tiny_f32.bin"));
  expect_shape(llmc.shape, 128);
  expect_same_weights(llmc.state_dict, load_hf_gpt2_safetensors(fixture("gpt2_tiny.safetensors"), 4).state_dict);
  expect_matches_golden(llmc.state_dict, /*bf16=*/false);
}

TEST(GptWeights, LlmcBf16ImportEqualsHfImportRoundedToBf16) {
  GptWeights llmc = load_llmc_checkpoint(fixture("gpt2_tiny_bf16.bin"));
  expect_shape(llmc.shape, 128);
  GptWeights hf = load_hf_gpt2_safetensors(fixture("gpt2_tiny.safetensors"), 4);
  ASSERT_EQ(llmc.state_dict.keys(), hf.state_dict.keys());
  for (const auto& [name, t] : hf.state_dict) {
    // Exactly torch's round-to-nearest-even; within bf16's 2^-8 relative step of the f32 value.
    EXPECT_EQ(bytes_of(llmc.state_dict.at(name)), bytes_of(t.to(DType::bf16).to(DType::f32))) << name;
    std::vector<float> a = llmc.state_dict.at(name).to_vector<float>(), b = t.to_vector<float>();
    for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], std::fabs(b[i]) * (1.0 / 256) + 1e-30) << name;
  }
  expect_matches_golden(llmc.state_dict, /*bf16=*/true);
}

TEST(GptWeights, LlmcHeaderAndSizeErrorsNameFileAndOffset) {
  const std::string good = read_file(fixture("gpt2_tiny_f32.bin"));
  auto variant = [&](const std::string& name, const std::function<void(std::string&)>& edit) {
    std::string b = good;
    edit(b);
    const std::string path = temp_path(name);
    write_file(path, b);
    std::string m = io_error_of([&] { load_llmc_checkpoint(path); });
    EXPECT_NE(m.find(path), std::string::npos) << m;
    return m;
  };
  auto set_int = [](std::string& b, int index, int32_t v) { std::memcpy(&b[size_t(index) * 4], &v, 4); };
  std::string m = variant("magic.bin", [&](std::string& b) { set_int(b, 0, 20240520); });
  EXPECT_NE(m.find("bad magic 20240520 at offset 0"), std::string::npos) << m;
  m = variant("version.bin", [&](std::string& b) { set_int(b, 1, 4); });
  EXPECT_NE(m.find("unsupported version 4 at offset 4"), std::string::npos) << m;
  m = variant("zero.bin", [&](std::string& b) { set_int(b, 4, 0); });
  EXPECT_NE(m.find("L = 0 at offset 16"), std::string::npos) << m;
  m = variant("vp.bin", [&](std::string& b) { set_int(b, 7, 96); });
  EXPECT_NE(m.find("Vp = 96"), std::string::npos) << m;
  m = variant("heads.bin", [&](std::string& b) { set_int(b, 5, 3); });
  EXPECT_NE(m.find("NH = 3"), std::string::npos) << m;
  m = variant("truncated.bin", [&](std::string& b) { b.resize(b.size() - 100); });
  EXPECT_NE(m.find("truncated"), std::string::npos) << m;
  EXPECT_NE(m.find("lnfw"), std::string::npos) << m;  // the first array cut off
  m = variant("huge.bin", [&](std::string& b) { set_int(b, 6, 1 << 30); set_int(b, 5, 1); });
  EXPECT_NE(m.find("truncated"), std::string::npos) << m;
  m = variant("trailing.bin", [&](std::string& b) { b += "xyz"; });
  EXPECT_NE(m.find("3 unexpected bytes"), std::string::npos) << m;
  m = variant("header.bin", [&](std::string& b) { b.resize(1000); });
  EXPECT_NE(m.find("shorter than the 1024-byte header"), std::string::npos) << m;
}

TEST(GptWeights, ExportThenImportRoundTrips) {
  GptWeights hf = load_hf_gpt2_safetensors(fixture("gpt2_tiny.safetensors"), 4);
  // llm.c export reproduces llm.c's own files byte for byte (fp32 and bf16).
  const std::string f32 = temp_path("out_f32.bin"), bf16 = temp_path("out_bf16.bin");
  save_llmc_checkpoint(f32, hf.shape, hf.state_dict);
  save_llmc_checkpoint(bf16, hf.shape, hf.state_dict, /*bf16=*/true);
  EXPECT_EQ(read_file(f32), read_file(fixture("gpt2_tiny_f32.bin")));
  EXPECT_EQ(read_file(bf16), read_file(fixture("gpt2_tiny_bf16.bin")));
  expect_same_weights(load_llmc_checkpoint(f32).state_dict, hf.state_dict);

  // HF export: Conv1D layout again, prefix, no buffers or lm_head; n_head in the metadata.
  const std::string st = temp_path("out.safetensors");
  save_hf_gpt2_safetensors(st, hf.shape, hf.state_dict);
  Safetensors raw = read_safetensors(st);
  EXPECT_EQ(raw.metadata.at("format"), "pt");
  EXPECT_EQ(raw.tensors.size(), hf.state_dict.size() - 1);
  Safetensors original = read_safetensors(fixture("gpt2_tiny.safetensors"));
  for (const auto& [key, t] : raw.tensors) EXPECT_EQ(bytes_of(t), bytes_of(original.tensors.at(key))) << key;
  GptWeights back = load_hf_gpt2_safetensors(st);  // n_head from the metadata
  EXPECT_EQ(back.shape.n_head, 4);
  expect_same_weights(back.state_dict, hf.state_dict);

  // A model that pads its vocab internally exports its first V rows; bf16 weights convert.
  nn::StateDict padded = hf.state_dict;
  padded.erase("lm_head.weight");
  padded.insert_or_assign("transformer.wte.weight",
                          ops::cat({hf.state_dict.at("transformer.wte.weight"), ops::ones({31, 20})}, 0));
  GptShape shape = hf.shape;
  shape.padded_vocab_size = 128;
  save_llmc_checkpoint(f32, shape, padded);
  EXPECT_EQ(read_file(f32), read_file(fixture("gpt2_tiny_f32.bin")));

  // Missing or foreign keys are refused before anything is written.
  nn::StateDict broken = hf.state_dict;
  broken.erase("transformer.h.1.ln_2.bias");
  broken.insert("transformer.h.1.extra", ops::zeros({1}));
  try {
    save_hf_gpt2_safetensors(temp_path("broken.safetensors"), hf.shape, broken);
    FAIL();
  } catch (const ValueError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("missing 'transformer.h.1.ln_2.bias'"), std::string::npos) << m;
    EXPECT_NE(m.find("unexpected 'transformer.h.1.extra'"), std::string::npos) << m;
  }
  EXPECT_FALSE(fs::exists(temp_path("broken.safetensors")));
  broken = hf.state_dict;
  broken.insert_or_assign("lm_head.weight", ops::zeros({97, 20}));
  EXPECT_THROW(save_llmc_checkpoint(temp_path("untied.bin"), hf.shape, broken), ValueError);
}

TEST(GptWeights, ImportedWeightsLoadIntoStrataGpt) {
  GptWeights w = load_llmc_checkpoint(fixture("gpt2_tiny_f32.bin"));
  models::GPTConfig c;
  c.n_layer = w.shape.n_layer;
  c.n_head = w.shape.n_head;
  c.n_embd = w.shape.n_embd;
  c.block_size = w.shape.block_size;
  c.vocab_size = w.shape.vocab_size;
  models::GPT gpt(c);
  gpt.load_state_dict(w.state_dict);  // strict: the names and shapes are the model's
  nn::StateDict back = gpt.state_dict();
  for (const auto& [name, t] : w.state_dict) EXPECT_EQ(bytes_of(back.at(name)), bytes_of(t)) << name;
  // And out again: the model's own state dict exports to the same llm.c file.
  const std::string out = temp_path("from_model.bin");
  save_llmc_checkpoint(out, w.shape, back);
  EXPECT_EQ(read_file(out), read_file(fixture("gpt2_tiny_f32.bin")));
}
