// GPT-2 weight files by what they hold: llm.c's model file or Hugging Face safetensors (a file, or a
// model directory with its config.json), read and written for the trainers' --init-from/--export-*.
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "io/weights/hf_model_dir.h"
#include "io/weights/llmc_magic.h"
#include "strata/core/error.h"
#include "strata/io/weights/gpt_weights.h"

namespace strata::io {

namespace {

namespace fs = std::filesystem;

}  // namespace

GptWeights load_gpt2_weights(const std::string& path, int64_t n_head) {
  fs::path file = path;
  if (fs::is_directory(file)) {
    file /= "model.safetensors";
    STRATA_CHECK(fs::is_regular_file(file), IoError, "GPT-2 weights: the directory '", path,
                 "' has no model.safetensors");
  }
  STRATA_CHECK(fs::is_regular_file(file), IoError, "GPT-2 weights: '", path, "' ",
               fs::is_directory(file) ? "is a directory" : "does not exist");
  if (starts_with_llmc_magic(file)) return load_llmc_checkpoint(file.string());
  return load_hf_gpt2_safetensors(file.string(), n_head);
}

void save_hf_gpt2_dir(const std::string& dir, const GptShape& shape, const nn::StateDict& state_dict) {
  make_hf_model_dir(dir);
  save_hf_gpt2_safetensors((fs::path(dir) / "model.safetensors").string(), shape, state_dict);
  // What GPT2LMHeadModel.from_pretrained(dir) reads besides the weights (GPT-2's defaults otherwise).
  const nlohmann::ordered_json config = {{"architectures", {"GPT2LMHeadModel"}},
                                         {"model_type", "gpt2"},
                                         {"n_layer", shape.n_layer},
                                         {"n_head", shape.n_head},
                                         {"n_embd", shape.n_embd},
                                         {"n_positions", shape.block_size},
                                         {"n_ctx", shape.block_size},
                                         {"vocab_size", shape.vocab_size},
                                         {"activation_function", "gelu_new"},
                                         {"layer_norm_epsilon", 1e-5},
                                         {"tie_word_embeddings", true},
                                         {"torch_dtype", "float32"}};
  write_hf_config(dir, config);
}

}  // namespace strata::io
