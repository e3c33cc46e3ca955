// BERT encoder (Devlin et al. 2019) with Hugging Face's module layout and parameter names
// (`bert.encoder.layer.3.attention.self.query.weight`), so a BertModel / BertForMaskedLM
// safetensors state dict loads as is: token, position and segment embeddings + LayerNorm,
// post-LN layers with bidirectional attention (query, key and value projected by one GEMM on
// their concatenated weights, then ops::packed_self_attention with the padding mask), erf GELU; the masked-LM head (dense + GELU + LayerNorm,
// decoder tied to the word embeddings, plus a bias) runs only on the masked rows, through the
// fused LM-head loss; an optional pooler + classifier. Scopes are the named_modules() paths
// (in BertForMaskedLM: `bert.embeddings`, `bert.encoder.layer.3`,
// `bert.encoder.layer.3.attention.self`, ..., `cls.predictions`); each layer is a planner block.
// Every public forward opens its module's scope, so it runs in the same scope called directly.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "strata/models/layers/container.h"
#include "strata/models/layers/dropout.h"
#include "strata/models/layers/embedding.h"
#include "strata/models/layers/layer_norm.h"
#include "strata/models/layers/linear.h"
#include "strata/nn/module.h"

namespace strata::models {

// Field names follow Hugging Face's BertConfig.
struct BertConfig {
  int64_t vocab_size = 30522;
  int64_t hidden_size = 768;  // C
  int64_t num_hidden_layers = 12;
  int64_t num_attention_heads = 12;
  int64_t intermediate_size = 3072;
  int64_t max_position_embeddings = 512;
  int64_t type_vocab_size = 2;
  double layer_norm_eps = 1e-12;
  double hidden_dropout_prob = 0.1;  // embeddings, attention output, layer output, classifier
  // Dropout on the attention probabilities: the fused attention has none, so it must be 0
  // (validate() says so); the presets set 0 where Hugging Face's bert-base has 0.1.
  double attention_probs_dropout_prob = 0.0;
  double initializer_range = 0.02;
  int64_t pad_token_id = 0;  // its word-embedding row gets no gradient from the embedding lookup
  int64_t num_labels = 2;    // classifier outputs (BertForSequenceClassification)

  // "bert-base" (L12 C768 H12 I3072), "bert-large" (L24 C1024 H16 I4096), both V30522 P512
  // pad 0; test sizes for the byte-level vocabulary of train_bert (256 bytes + [PAD] 256,
  // [CLS] 257, [SEP] 258, [MASK] 259: V260, pad 256): "tiny" (L2 C64 H4 I256 P128) and
  // "small" (L4 C256 H4 I1024 P256). Throws ValueError naming the preset.
  static BertConfig preset(const std::string& name);
  // The configuration of the weights in `sd` (BertForMaskedLM's names, "bert." first, as
  // io::load_bert_weights gives them): the layer count from the layers present, the sizes from
  // the embeddings and layer 0's intermediate.dense.weight. The head count is not in the shapes:
  // `num_attention_heads` (io::BertShape's, from config.json). ShapeError naming a missing or
  // disagreeing tensor.
  static BertConfig from_state_dict(const nn::StateDict& sd, int64_t num_attention_heads);
  void validate() const;  // throws ValueError (NotImplementedError for attention dropout)
  std::string str() const;
  // BertModel's parameters, with or without the pooler.
  int64_t num_parameters(bool with_pooler = false) const;
};

// Word + position + token-type embeddings, LayerNorm, dropout.
class BertEmbeddings : public nn::Module {
 public:
  explicit BertEmbeddings(const BertConfig& c);
  // input_ids, token_type_ids: i64 [B, T] (token_type_ids may be undefined: all 0) -> [B, T, C].
  Tensor forward(const Tensor& input_ids, const Tensor& token_type_ids);
  std::shared_ptr<nn::Embedding> word_embeddings, position_embeddings, token_type_embeddings;
  std::shared_ptr<nn::LayerNorm> LayerNorm;
  std::shared_ptr<nn::Dropout> dropout;

 private:
  int64_t pad_token_id_;
};

class BertSelfAttention : public nn::Module {
 public:
  explicit BertSelfAttention(const BertConfig& c);
  // x [B, T, C], mask: undefined or bool [B, 1, 1, T] (true = attend) -> [B, T, C].
  Tensor forward(const Tensor& x, const Tensor& mask);
  std::shared_ptr<nn::Linear> query, key, value;

 private:
  int64_t n_head_;
};

// dense, dropout, then LayerNorm(x + residual): BertSelfOutput and BertOutput.
class BertResidualOutput : public nn::Module {
 public:
  BertResidualOutput(const BertConfig& c, int64_t in_features);
  Tensor forward(const Tensor& x, const Tensor& residual);
  std::shared_ptr<nn::Linear> dense;
  std::shared_ptr<nn::LayerNorm> LayerNorm;
  std::shared_ptr<nn::Dropout> dropout;
};

class BertAttention : public nn::Module {
 public:
  explicit BertAttention(const BertConfig& c);
  Tensor forward(const Tensor& x, const Tensor& mask);
  std::shared_ptr<BertSelfAttention> self;
  std::shared_ptr<BertResidualOutput> output;
};

class BertLayer : public nn::Module {
 public:
  explicit BertLayer(const BertConfig& c);
  Tensor forward(const Tensor& x, const Tensor& mask);
  std::shared_ptr<BertAttention> attention;
  std::shared_ptr<nn::Module> intermediate;  // holds "dense" (C -> I), followed by GELU
  std::shared_ptr<nn::Linear> intermediate_dense;
  std::shared_ptr<BertResidualOutput> output;
};

class BertModel : public nn::Module {
 public:
  explicit BertModel(const BertConfig& config, bool add_pooling_layer = true);
  // The last layer's hidden states [B, T, C]. token_type_ids and attention_mask (i64, bool or
  // float [B, T], nonzero = real token, as Hugging Face) may be undefined.
  Tensor forward(const Tensor& input_ids, const Tensor& token_type_ids, const Tensor& attention_mask);
  Tensor forward(const Tensor& input_ids) override { return forward(input_ids, Tensor(), Tensor()); }
  // tanh(dense(hidden[:, 0])): [B, C]. Throws without a pooler.
  Tensor pool(const Tensor& hidden_states);
  // Hugging Face's _init_weights: Linear and Embedding N(0, initializer_range), biases 0, the
  // padding row 0, LayerNorm 1 / 0.
  void init_weights();
  const BertConfig& config() const { return config_; }

  std::shared_ptr<BertEmbeddings> embeddings;
  std::shared_ptr<nn::Module> encoder;  // holds "layer" (state-dict prefix encoder.layer.N)
  std::shared_ptr<nn::ModuleList> layer;
  std::shared_ptr<nn::Module> pooler;  // holds "dense"; null without the pooling layer
  std::shared_ptr<nn::Linear> pooler_dense;

 private:
  BertConfig config_;
};

// The masked-LM head: transform (dense, GELU, LayerNorm), then decoder = word embeddings^T + bias.
class BertLMPredictionHead : public nn::Module {
 public:
  BertLMPredictionHead(const BertConfig& c, const Tensor& word_embeddings);
  Tensor transform_rows(const Tensor& x);  // [M, C] -> [M, C]
  std::shared_ptr<nn::Module> transform;  // dense, LayerNorm
  std::shared_ptr<nn::Linear> transform_dense;
  std::shared_ptr<nn::LayerNorm> transform_LayerNorm;
  std::shared_ptr<nn::Module> decoder;  // weight = word embeddings (tied), bias = `bias` (tied)
  Tensor bias;                          // [V]
};

// The positions a masked-LM loss is computed at: rows of the flattened [B*T] batch whose
// label is not -100, in order, and their labels.
struct MaskedPositions {
  Tensor rows;     // i64 [M]
  Tensor targets;  // i64 [M]
};
MaskedPositions masked_positions(const Tensor& labels);

class BertForMaskedLM : public nn::Module {
 public:
  explicit BertForMaskedLM(const BertConfig& config);
  // Hidden states of the encoder [B, T, C].
  Tensor hidden_states(const Tensor& input_ids, const Tensor& token_type_ids, const Tensor& attention_mask);
  // Logits at the masked positions only (labels != -100, row-major order): [M, V].
  Tensor mlm_logits(const Tensor& input_ids, const Tensor& token_type_ids, const Tensor& attention_mask,
                    const Tensor& labels);
  // Mean cross-entropy over the masked positions: the masked rows are gathered first, so the
  // head and the fused decoder + loss (ops::linear_cross_entropy with bias) see M rows, not B*T.
  Tensor loss(const Tensor& input_ids, const Tensor& token_type_ids, const Tensor& attention_mask,
              const Tensor& labels);
  // Logits at every position [B, T, V] (Hugging Face's prediction_scores).
  Tensor forward(const Tensor& input_ids) override;
  void init_weights();
  const BertConfig& config() const { return bert->config(); }

  std::shared_ptr<BertModel> bert;  // without pooler, as Hugging Face's BertForMaskedLM
  std::shared_ptr<nn::Module> cls;  // holds "predictions"
  std::shared_ptr<BertLMPredictionHead> predictions;

 private:
  Tensor masked_rows(const Tensor& input_ids, const Tensor& token_type_ids, const Tensor& attention_mask,
                     const Tensor& rows);
};

class BertForSequenceClassification : public nn::Module {
 public:
  explicit BertForSequenceClassification(const BertConfig& config);
  // Logits [B, num_labels] from the pooled [CLS] state.
  Tensor forward(const Tensor& input_ids, const Tensor& token_type_ids, const Tensor& attention_mask);
  Tensor forward(const Tensor& input_ids) override { return forward(input_ids, Tensor(), Tensor()); }
  // Mean cross-entropy against labels i64 [B].
  Tensor loss(const Tensor& input_ids, const Tensor& token_type_ids, const Tensor& attention_mask,
              const Tensor& labels);
  void init_weights();

  std::shared_ptr<BertModel> bert;
  std::shared_ptr<nn::Dropout> dropout;
  std::shared_ptr<nn::Linear> classifier;
};

}  // namespace strata::models
