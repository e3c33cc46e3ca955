#include "strata/autograd/grad_mode.h"

namespace strata::autograd {

namespace {
thread_local bool tl_grad_enabled = true;
}

bool GradMode::is_enabled() { return tl_grad_enabled; }
void GradMode::set_enabled(bool enabled) { tl_grad_enabled = enabled; }

}  // namespace strata::autograd
