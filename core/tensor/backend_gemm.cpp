// The Backend's default bmm_bias: the bias broadcast into out, then bmm accumulating onto it.
#include "strata/core/backend.h"
#include "strata/core/error.h"

namespace strata {

void Backend::bmm_bias(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias) {
  STRATA_CHECK(out.dim() == 3 && bias.dim() == 1 && bias.size(0) == out.size(2), ShapeError,
               "bmm_bias: bias ", shape_str(bias.shape()), " does not fit the product ",
               shape_str(out.shape()), " (bias is [cols])");
  copy(out, Tensor::from_storage(bias.storage(), out.shape(), {0, 0, bias.stride(0)}, bias.storage_offset(),
                                 bias.dtype()));
  bmm(out, a, b, 1.0, 1.0);
}

}  // namespace strata
