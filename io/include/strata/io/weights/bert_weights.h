// BERT weights from Hugging Face safetensors (BertModel, BertForMaskedLM, BertForPreTraining
// files) as a state dict with the names models::BertForMaskedLM holds:
//
//   auto w = io::load_hf_bert_safetensors("bert-base-uncased/model.safetensors");
//   models::BertConfig c = models::BertConfig::preset("bert-base");   // or sizes from w.shape
//   models::BertForMaskedLM mlm(c);
//   mlm.load_state_dict(w.state_dict);
#pragma once

#include <cstdint>
#include <string>

#include "strata/nn/module.h"

namespace strata::io {

struct BertShape {
  int64_t num_hidden_layers = 0;
  int64_t hidden_size = 0;              // C
  int64_t intermediate_size = 0;        // I
  int64_t vocab_size = 0;               // V
  int64_t max_position_embeddings = 0;  // rows of position_embeddings
  int64_t type_vocab_size = 0;
  int64_t num_attention_heads = 0;  // from a config.json beside the weights (0: unknown)
};

struct BertWeights {
  BertShape shape;
  nn::StateDict state_dict;  // contiguous f32 CPU tensors, BertForMaskedLM names
};

// Reads a Hugging Face BERT checkpoint: keys without the "bert." prefix (BertModel) get it; the
// older LayerNorm names gamma / beta become weight / bias; the embeddings.position_ids buffer,
// the pooler and the next-sentence head (cls.seq_relationship.*) are dropped; the tied
// cls.predictions.decoder.{weight,bias} are filled from the word embeddings and
// cls.predictions.bias (a file with a different decoder.weight is refused); an MLM head missing
// entirely (a BertModel file) is initialized as Hugging Face does (transform dense N(0, 0.02)
// from the current Generator, bias 0, LayerNorm 1/0). F32, F16 and BF16 become f32. The shape
// comes from the tensors. Throws IoError naming the file and key for a missing, misshaped or
// unexpected tensor.
BertWeights load_hf_bert_safetensors(const std::string& path);

// load_hf_bert_safetensors of `path`, or of <path>/model.safetensors for a directory, with
// num_attention_heads from the config.json beside the weights when there is one.
BertWeights load_bert_weights(const std::string& path);

// A Hugging Face model directory BertForMaskedLM.from_pretrained reads: model.safetensors with
// `state_dict` (BertForMaskedLM names; the decoder tied to the word embeddings is left out, as
// Hugging Face saves it) in f32, and config.json from `shape` and `layer_norm_eps`. Creates `dir`.
void save_hf_bert_dir(const std::string& dir, const BertShape& shape, double layer_norm_eps,
                      const nn::StateDict& state_dict);

}  // namespace strata::io
