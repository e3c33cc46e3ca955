// Dims3: a tensor seen as [outer, d, inner] around one dim, the layout of the indexing kernels
// (index_select, gather, scatter_add, ...) on both backends.
#pragma once

#include <cstdint>

#include "strata/core/tensor.h"

namespace strata::common {

struct Dims3 {
  int64_t outer, d, inner;
};

inline Dims3 dims3(const Tensor& t, int64_t dim) {
  Dims3 r{1, t.size(dim), 1};
  for (int64_t i = 0; i < dim; ++i) r.outer *= t.size(i);
  for (int64_t i = dim + 1; i < t.dim(); ++i) r.inner *= t.size(i);
  return r;
}

}  // namespace strata::common
