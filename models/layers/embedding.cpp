#include "strata/models/layers/embedding.h"

#include "strata/autograd/grad_mode.h"
#include "strata/core/memory_stats.h"
#include "strata/ops/factory.h"
#include "strata/ops/nn.h"

namespace strata::nn {

Embedding::Embedding(const EmbeddingOptions& options) : options_(options) {
  STRATA_CHECK(options.num_embeddings() >= 0 && options.embedding_dim() >= 0, ValueError,
               "Embedding: sizes must be non-negative, got ", options.num_embeddings(), " x ",
               options.embedding_dim());
  STRATA_CHECK(is_floating(options.dtype()), TypeError, "Embedding: dtype must be floating, got ",
               dtype_name(options.dtype()));
  MemoryCategoryGuard category(MemoryCategory::Parameter);
  weight = register_parameter(
      "weight", Tensor::empty({options.num_embeddings(), options.embedding_dim()}, options.dtype()));
  reset_parameters();
}

void Embedding::reset_parameters() {
  NoGradGuard no_grad;
  ops::normal_(weight, 0.0, 1.0);
}

Tensor Embedding::forward(const Tensor& indices) { return ops::embedding(weight, indices); }

}  // namespace strata::nn
