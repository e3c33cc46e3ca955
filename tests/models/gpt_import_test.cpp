#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "strata/io/weights/gpt_weights.h"
#include "strata/models/gpt.h"
#include "strata/strata.h"

using namespace strata;

namespace {

nlohmann::json golden() {
  std::ifstream f(std::string(STRATA_TEST_DATA_DIR) + "/goldens/weights/gpt2_tiny.json");
  return nlohmann::json::parse(f);
}

// Strata's GPT (in f64) holding imported weights, and its loss on the fixture's tokens.
double loss_with(const io::GptWeights& w, const nlohmann::json& g) {
  models::GPTConfig c;
  c.n_layer = w.shape.n_layer, c.n_head = w.shape.n_head, c.n_embd = w.shape.n_embd;
  c.block_size = w.shape.block_size, c.vocab_size = w.shape.vocab_size;
  models::GPT model(c);
  model.to(DType::f64);
  model.load_state_dict(w.state_dict);
  const int64_t B = g["loss"]["B"], T = g["loss"]["T"];
  Tensor idx = ops::from_vector(g["loss"]["idx"].get<std::vector<int64_t>>(), {B, T});
  Tensor targets = ops::from_vector(g["loss"]["targets"].get<std::vector<int64_t>>(), {B, T});
  NoGradGuard ng;
  return model.loss(idx, targets).item();
}

}  // namespace

// Weights written by a script in Hugging Face's layout (Conv1D [in, out]) and in llm.c's
// formats load into Strata's GPT and give PyTorch's loss on the same tokens.
TEST(GptImport, HuggingFaceAndLlmcWeightsGivePyTorchsLoss) {
  nlohmann::json g = golden();
  const std::string dir = std::string(STRATA_TEST_DATA_DIR) + "/goldens/weights/";
  const double want_f32 = g["loss"]["f32"], want_bf16 = g["loss"]["bf16"];
  EXPECT_NEAR(loss_with(io::load_hf_gpt2_safetensors(dir + "gpt2_tiny.safetensors", 4), g), want_f32, 1e-10);
  EXPECT_NEAR(loss_with(io::load_llmc_checkpoint(dir + "gpt2_tiny_f32.bin"), g), want_f32, 1e-10);
  EXPECT_NEAR(loss_with(io::load_llmc_checkpoint(dir + "gpt2_tiny_bf16.bin"), g), want_bf16, 1e-10);
  EXPECT_GT(std::abs(want_f32 - want_bf16), 1e-6) << "the bf16 case must test something different";
}

// load_gpt2_weights tells the formats apart by their bytes, reads a Hugging Face model directory,
// and takes n_head from the config.json beside the weights (HF files carry no n_head).
TEST(GptImport, WeightFilesAreRecognizedByWhatTheyHold) {
  nlohmann::json g = golden();
  const std::string dir = std::string(STRATA_TEST_DATA_DIR) + "/goldens/weights/";
  const double want_f32 = g["loss"]["f32"];
  const std::filesystem::path model_dir = std::filesystem::temp_directory_path() / "strata_gpt_import_dir";
  std::filesystem::remove_all(model_dir);
  std::filesystem::create_directories(model_dir);
  std::filesystem::copy_file(dir + "gpt2_tiny.safetensors", model_dir / "model.safetensors");
  EXPECT_THROW(io::load_gpt2_weights(model_dir.string()), IoError) << "n_head 0: 20 is no multiple of 64";
  std::ofstream(model_dir / "config.json") << R"({"model_type": "gpt2", "n_head": 4})";
  io::GptWeights from_dir = io::load_gpt2_weights(model_dir.string());
  EXPECT_EQ(from_dir.shape.n_head, 4);
  EXPECT_NEAR(loss_with(from_dir, g), want_f32, 1e-10);
  EXPECT_NEAR(loss_with(io::load_gpt2_weights(dir + "gpt2_tiny_f32.bin"), g), want_f32, 1e-10);
  std::filesystem::remove_all(model_dir);
  EXPECT_THROW(io::load_gpt2_weights(model_dir.string()), IoError);
}
