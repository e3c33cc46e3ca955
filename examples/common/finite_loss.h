// check_finite_loss: a run whose training loss turns NaN or infinite stops at that step.
#pragma once

#include <cstdint>

namespace strata::examples {

// Throws ValueError "step N: the training loss is nan; ..." when `loss` is not finite, so that no
// checkpoint, export or final line is ever written from that state (the last checkpoint, if any,
// is from a step before it).
void check_finite_loss(double loss, int64_t step);

}  // namespace strata::examples
