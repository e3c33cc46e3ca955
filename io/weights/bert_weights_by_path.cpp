// BERT weight directories as Hugging Face writes them (model.safetensors beside config.json), read
// and written for train_bert's --init-from and --export-hf.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/weights/hf_model_dir.h"
#include "io/weights/llmc_magic.h"
#include "strata/core/error.h"
#include "strata/io/weights/bert_weights.h"
#include "strata/io/weights/safetensors.h"

namespace strata::io {

namespace fs = std::filesystem;

BertWeights load_bert_weights(const std::string& path) {
  fs::path file = path;
  if (fs::is_directory(file)) {
    file /= "model.safetensors";
    STRATA_CHECK(fs::is_regular_file(file), IoError, "BERT weights: the directory '", path,
                 "' has no model.safetensors");
  }
  STRATA_CHECK(fs::is_regular_file(file), IoError, "BERT weights: '", path, "' does not exist");
  STRATA_CHECK(!starts_with_llmc_magic(file), IoError, "BERT weights: '", path,
               "' is an llm.c GPT-2 model file (its first word is llm.c's magic ", kLlmcModelMagic,
               "); BERT weights come from a Hugging Face BERT folder or its model.safetensors");
  BertWeights w = load_hf_bert_safetensors(file.string());
  std::ifstream in(file.parent_path() / "config.json");
  if (in) {
    const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("num_attention_heads") && j["num_attention_heads"].is_number_integer())
      w.shape.num_attention_heads = j["num_attention_heads"].get<int64_t>();
  }
  return w;
}

void save_hf_bert_dir(const std::string& dir, const BertShape& shape, double layer_norm_eps,
                      const nn::StateDict& state_dict) {
  make_hf_model_dir(dir);
  nn::StateDict out;
  for (const auto& [name, t] : state_dict) {
    if (name.rfind("cls.predictions.decoder.", 0) == 0) continue;  // tied to the word embeddings
    out.insert(name, t.dtype() == DType::f32 ? t : t.to(DType::f32));
  }
  write_safetensors((fs::path(dir) / "model.safetensors").string(), out, {{"format", "pt"}});
  const nlohmann::ordered_json config = {{"architectures", {"BertForMaskedLM"}},
                                         {"model_type", "bert"},
                                         {"vocab_size", shape.vocab_size},
                                         {"hidden_size", shape.hidden_size},
                                         {"num_hidden_layers", shape.num_hidden_layers},
                                         {"num_attention_heads", shape.num_attention_heads},
                                         {"intermediate_size", shape.intermediate_size},
                                         {"hidden_act", "gelu"},
                                         {"max_position_embeddings", shape.max_position_embeddings},
                                         {"type_vocab_size", shape.type_vocab_size},
                                         {"layer_norm_eps", layer_norm_eps},
                                         {"torch_dtype", "float32"}};
  write_hf_config(dir, config);
}

}  // namespace strata::io
