#include "examples/common/finite_loss.h"

#include <cmath>

#include "strata/core/error.h"

namespace strata::examples {

void check_finite_loss(double loss, int64_t step) {
  STRATA_CHECK(std::isfinite(loss), ValueError, "step ", step, ": the training loss is ", loss,
               "; stopping before anything is written from this state (a lower --lr, gradient clipping or "
               "a look at the inputs may help)");
}

}  // namespace strata::examples
