// IndexRows: an i32 or i64 index tensor on the host read as int64, the identity where undefined.
#pragma once

#include <cstdint>

#include "strata/core/tensor.h"

namespace strata::common {

// Reads element i of a contiguous CPU index tensor whichever of i32 and i64 it holds; an
// undefined tensor reads as the identity (row i is i), which is how the relational kernels take
// "no gather" or "no scatter". The tensor must outlive the reader.
struct IndexRows {
  const void* p = nullptr;
  bool i32 = false;
  explicit IndexRows(const Tensor& t) {
    if (t.defined()) p = t.data_ptr(), i32 = t.dtype() == DType::i32;
  }
  bool defined() const { return p != nullptr; }
  int64_t operator[](int64_t i) const {
    if (!p) return i;
    return i32 ? int64_t(static_cast<const int32_t*>(p)[i]) : static_cast<const int64_t*>(p)[i];
  }
};

}  // namespace strata::common
