// The Backend's default cross_entropy_with_grad: the forward kernel, then the backward one.
#include "strata/core/backend.h"

namespace strata {

void Backend::cross_entropy_with_grad(const Tensor& loss, const Tensor& lse, const Tensor& grad_logits,
                                      const Tensor& grad_loss, const Tensor& logits, const Tensor& target,
                                      int64_t ignore_index) {
  cross_entropy(loss, lse, logits, target, ignore_index);
  cross_entropy_backward(grad_logits, grad_loss, logits, lse, target, ignore_index);
}

}  // namespace strata
