#include <algorithm>
#include <string>
#include <vector>

#include "strata/autograd/grad_mode.h"
#include "strata/io/weights/bert_weights.h"
#include "strata/io/weights/safetensors.h"
#include "strata/ops/elementwise.h"
#include "strata/ops/factory.h"
#include "strata/ops/reduction.h"
#include "strata/ops/shape_ops.h"

namespace strata::io {

namespace {

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }
bool ends_with(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

// The names and shapes BertForMaskedLM holds, in its state_dict order.
std::vector<std::pair<std::string, Shape>> expected(const BertShape& s) {
  const int64_t C = s.hidden_size, I = s.intermediate_size;
  std::vector<std::pair<std::string, Shape>> out = {
      {"bert.embeddings.word_embeddings.weight", {s.vocab_size, C}},
      {"bert.embeddings.position_embeddings.weight", {s.max_position_embeddings, C}},
      {"bert.embeddings.token_type_embeddings.weight", {s.type_vocab_size, C}},
      {"bert.embeddings.LayerNorm.weight", {C}},
      {"bert.embeddings.LayerNorm.bias", {C}}};
  for (int64_t l = 0; l < s.num_hidden_layers; ++l) {
    const std::string p = "bert.encoder.layer." + std::to_string(l) + ".";
    for (const char* n :
         {"attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"}) {
      out.push_back({p + n + ".weight", {C, C}});
      out.push_back({p + n + ".bias", {C}});
    }
    out.push_back({p + "attention.output.LayerNorm.weight", {C}});
    out.push_back({p + "attention.output.LayerNorm.bias", {C}});
    out.push_back({p + "intermediate.dense.weight", {I, C}});
    out.push_back({p + "intermediate.dense.bias", {I}});
    out.push_back({p + "output.dense.weight", {C, I}});
    out.push_back({p + "output.dense.bias", {C}});
    out.push_back({p + "output.LayerNorm.weight", {C}});
    out.push_back({p + "output.LayerNorm.bias", {C}});
  }
  for (auto& e :
       std::vector<std::pair<std::string, Shape>>{{"cls.predictions.bias", {s.vocab_size}},
                                                  {"cls.predictions.transform.dense.weight", {C, C}},
                                                  {"cls.predictions.transform.dense.bias", {C}},
                                                  {"cls.predictions.transform.LayerNorm.weight", {C}},
                                                  {"cls.predictions.transform.LayerNorm.bias", {C}}})
    out.push_back(e);
  return out;
}

}  // namespace

BertWeights load_hf_bert_safetensors(const std::string& path) {
  Safetensors file = read_safetensors(path);
  auto bad = [&](auto&&... what) {
    return IoError(detail::concat("HF BERT safetensors '", path, "': ", what...));
  };
  nn::StateDict by_name;
  for (auto& [key, t] : file.tensors) {
    std::string name = key;
    if (starts_with(name, "embeddings.") || starts_with(name, "encoder.") || starts_with(name, "pooler."))
      name = "bert." + name;
    if (ends_with(name, "LayerNorm.gamma")) name = name.substr(0, name.size() - 5) + "weight";
    if (ends_with(name, "LayerNorm.beta")) name = name.substr(0, name.size() - 4) + "bias";
    if (name == "bert.embeddings.position_ids" || starts_with(name, "bert.pooler.") ||
        starts_with(name, "cls.seq_relationship."))
      continue;
    if (by_name.contains(name)) throw bad("'", key, "' appears twice (after renaming to '", name, "')");
    by_name.insert(name, t);
  }
  auto need2d = [&](const char* n) -> const Tensor& {
    const Tensor* t = by_name.find(n);
    if (!t || t->dim() != 2) throw bad("no 2-D '", n, "': not a BERT checkpoint");
    return *t;
  };
  BertShape s;
  const Tensor& words = need2d("bert.embeddings.word_embeddings.weight");
  s.vocab_size = words.size(0), s.hidden_size = words.size(1);
  s.max_position_embeddings = need2d("bert.embeddings.position_embeddings.weight").size(0);
  s.type_vocab_size = need2d("bert.embeddings.token_type_embeddings.weight").size(0);
  // Layers are counted by any key of theirs, so a layer missing one tensor is reported as missing
  // that tensor (not as a shorter model with unexpected keys).
  const std::string layer_prefix = "bert.encoder.layer.";
  for (const auto& [name, t] : by_name) {
    if (!starts_with(name, layer_prefix)) continue;
    const size_t end = name.find('.', layer_prefix.size());
    const std::string index = name.substr(layer_prefix.size(), end - layer_prefix.size());
    if (index.empty() || index.find_first_not_of("0123456789") != std::string::npos || index.size() > 6)
      throw bad("'", name, "' is not a layer's tensor (bert.encoder.layer.<N>.*)");
    s.num_hidden_layers = std::max<int64_t>(s.num_hidden_layers, std::stoll(index) + 1);
  }
  if (s.num_hidden_layers == 0) throw bad("no encoder layers (bert.encoder.layer.0.*)");
  s.intermediate_size = need2d("bert.encoder.layer.0.intermediate.dense.weight").size(0);

  NoGradGuard ng;
  const int64_t C = s.hidden_size;
  // A BertModel file has no MLM head: Hugging Face's fresh-head initialization.
  if (!by_name.contains("cls.predictions.transform.dense.weight")) {
    Tensor w = ops::empty({C, C});
    ops::normal_(w, 0.0, 0.02);
    by_name.insert("cls.predictions.transform.dense.weight", w);
    by_name.insert("cls.predictions.transform.dense.bias", ops::zeros({C}));
    by_name.insert("cls.predictions.transform.LayerNorm.weight", ops::ones({C}));
    by_name.insert("cls.predictions.transform.LayerNorm.bias", ops::zeros({C}));
  }
  if (!by_name.contains("cls.predictions.bias")) {
    const Tensor* db = by_name.find("cls.predictions.decoder.bias");
    by_name.insert("cls.predictions.bias", db ? *db : ops::zeros({s.vocab_size}));
  }
  BertWeights out;
  out.shape = s;
  for (const auto& [name, shape] : expected(s)) {
    const Tensor* t = by_name.find(name);
    if (!t) throw bad("missing '", name, "'");
    if (t->shape() != shape)
      throw bad("'", name, "' has shape ", shape_str(t->shape()), ", expected ", shape_str(shape));
    // Weights are floats: an integer tensor converted by value would load silently wrong.
    if (t->dtype() != DType::f32 && t->dtype() != DType::f16 && t->dtype() != DType::bf16)
      throw bad("'", name, "' has dtype ", dtype_name(t->dtype()), " (expected F32, F16 or BF16)");
    out.state_dict.insert(name, ops::to(*t, DType::f32).contiguous());
  }
  // The decoder is tied: a file's copy must be the word embeddings (and the bias the head's).
  for (const auto& [name, tied] :
       {std::pair<std::string, std::string>{"cls.predictions.decoder.weight",
                                            "bert.embeddings.word_embeddings.weight"},
        {"cls.predictions.decoder.bias", "cls.predictions.bias"}}) {
    const Tensor& src = out.state_dict.at(tied);
    if (const Tensor* t = by_name.find(name)) {
      if (t->shape() != src.shape() ||
          ops::max(ops::abs(ops::sub(ops::to(*t, DType::f32), src))).item() != 0.0)
        throw bad("'", name, "' differs from '", tied, "' (Strata's decoder is tied to it)");
    }
    out.state_dict.insert(name, src);
  }
  for (const auto& [name, t] : by_name)
    if (!out.state_dict.contains(name)) throw bad("unexpected key '", name, "'");
  return out;
}

}  // namespace strata::io
