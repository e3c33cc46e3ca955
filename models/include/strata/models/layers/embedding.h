// Embedding: a lookup table weight [num_embeddings, embedding_dim], indexed by i64 tensors.
#pragma once

#include <cstdint>

#include "strata/nn/module.h"

namespace strata::nn {

struct EmbeddingOptions {
  EmbeddingOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  EmbeddingOptions& dtype(DType d) { dtype_ = d; return *this; }
  int64_t num_embeddings() const { return num_embeddings_; }
  int64_t embedding_dim() const { return embedding_dim_; }
  DType dtype() const { return dtype_; }

 private:
  int64_t num_embeddings_;
  int64_t embedding_dim_;
  DType dtype_ = DType::f32;
};

class Embedding : public Module {
 public:
  explicit Embedding(const EmbeddingOptions& options);
  Embedding(int64_t num_embeddings, int64_t embedding_dim)
      : Embedding(EmbeddingOptions(num_embeddings, embedding_dim)) {}
  // i64 indices [...] -> [..., embedding_dim].
  Tensor forward(const Tensor& indices) override;
  // torch.nn.Embedding.reset_parameters: N(0, 1) from the current Generator.
  void reset_parameters();
  const EmbeddingOptions& options() const { return options_; }

  Tensor weight;  // [num_embeddings, embedding_dim]

 private:
  EmbeddingOptions options_;
};

}  // namespace strata::nn
