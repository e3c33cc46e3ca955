// GPT-2 family model (pre-LN blocks, tied embeddings, tanh GELU, GPT-2 init), with a fused
// LM-head loss and KV-cached generation. Parameter names follow nanoGPT / PyTorch
// (`transformer.h.3.attn.c_attn.weight`); module scopes are `h.3`, `h.3.attn`, ... and each
// block is a planner block.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "strata/core/generator.h"
#include "strata/models/layers/container.h"
#include "strata/models/layers/dropout.h"
#include "strata/models/layers/embedding.h"
#include "strata/models/layers/layer_norm.h"
#include "strata/models/layers/linear.h"
#include "strata/nn/module.h"

namespace strata::models {

struct GPTConfig {
  int64_t n_layer = 12;
  int64_t n_head = 12;
  int64_t n_embd = 768;
  int64_t block_size = 1024;
  int64_t vocab_size = 50257;
  double dropout = 0.0;  // embeddings and residual branches (attention-probability dropout: not supported)
  bool bias = true;

  // "gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl", and test sizes "tiny" (L2 C64 H4 T64 V256)
  // and "small" (L4 C256 H4 T256 V256, byte-level). Throws ValueError naming the preset.
  static GPTConfig preset(const std::string& name);
  // The configuration of the weights in `sd` (nanoGPT's names, as io::load_gpt2_weights gives them
  // and GPT::state_dict() holds): n_layer from the blocks present, vocab_size and n_embd from
  // transformer.wte.weight, block_size from transformer.wpe.weight. The head count is not in the
  // shapes: `n_head` (io::GptShape's, read from config.json or llm.c's header). ShapeError naming a
  // missing or disagreeing tensor.
  static GPTConfig from_state_dict(const nn::StateDict& sd, int64_t n_head, double dropout = 0.0);
  void validate() const;  // throws ValueError for inconsistent sizes
  std::string str() const;
  // Parameters (tied embedding counted once).
  int64_t num_parameters() const;
};

class CausalSelfAttention : public nn::Module {
 public:
  explicit CausalSelfAttention(const GPTConfig& c);
  Tensor forward(const Tensor& x) override;
  // Generation: appends this call's keys/values to the caches ([B, NH, block_size, hs]) at
  // `pos` and attends over the cached prefix. Either pos == 0 (prompt) or x has one position.
  Tensor forward_cached(const Tensor& x, Tensor& k_cache, Tensor& v_cache, int64_t pos);
  std::shared_ptr<nn::Linear> c_attn, c_proj;
  std::shared_ptr<nn::Dropout> resid_dropout;

 private:
  int64_t n_head_, n_embd_;
};

class MLP : public nn::Module {
 public:
  explicit MLP(const GPTConfig& c);
  Tensor forward(const Tensor& x) override;
  std::shared_ptr<nn::Linear> c_fc, c_proj;
  std::shared_ptr<nn::Dropout> dropout;
};

class Block : public nn::Module {
 public:
  explicit Block(const GPTConfig& c);
  Tensor forward(const Tensor& x) override;
  Tensor forward_cached(const Tensor& x, Tensor& k_cache, Tensor& v_cache, int64_t pos);
  std::shared_ptr<nn::LayerNorm> ln_1, ln_2;
  std::shared_ptr<CausalSelfAttention> attn;
  std::shared_ptr<MLP> mlp;
};

struct GenerateOptions {
  int64_t max_new_tokens = 64;
  double temperature = 1.0;  // 0: greedy
  int64_t top_k = 0;         // 0: no top-k filtering
};

class GPT : public nn::Module {
 public:
  explicit GPT(const GPTConfig& config);
  // idx [B, T] i64 -> logits [B, T, V]
  Tensor forward(const Tensor& idx) override;
  // The final hidden states after ln_f: [B, T, C].
  Tensor hidden_states(const Tensor& idx);
  // Mean cross-entropy of next-token prediction through the fused, chunked LM head (never
  // holds [B, T, V] logits for backward). targets [B, T] i64, -100 ignored.
  Tensor loss(const Tensor& idx, const Tensor& targets);
  // Appends up to max_new_tokens sampled tokens to idx [B, T0] (KV-cached); returns [B, T0 + n].
  Tensor generate(const Tensor& idx, const GenerateOptions& options, Generator& generator);
  // GPT-2 initialization (nanoGPT): N(0, 0.02), residual projections N(0, 0.02/sqrt(2L)).
  void init_weights();
  const GPTConfig& config() const { return config_; }

  std::shared_ptr<nn::Module> transformer;  // holds wte, wpe, h, ln_f (state_dict prefix)
  std::shared_ptr<nn::Embedding> wte, wpe;
  std::shared_ptr<nn::Dropout> drop;
  std::shared_ptr<nn::ModuleList> h;
  std::shared_ptr<nn::LayerNorm> ln_f;
  // Its "weight" is wte.weight (tied). state_dict() therefore names the one tensor twice,
  // transformer.wte.weight and lm_head.weight, as PyTorch's GPT2LMHeadModel.state_dict() does; a
  // state dict compared with another (or counted) holds it under both names, and the parameter
  // count counts it once. Hugging Face's model.safetensors stores only one of them.
  std::shared_ptr<nn::Module> lm_head;

 private:
  Tensor embed(const Tensor& idx, int64_t pos0);
  GPTConfig config_;
};

}  // namespace strata::models
