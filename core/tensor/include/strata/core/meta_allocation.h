// Whether this thread's CPU tensors are made as shape-only Meta tensors instead: nn::MetaInitGuard
// turns it on while modules are built for shape-only planning, so that no constructor allocates
// (or initializes) the weights of a model larger than the machine.
#pragma once

namespace strata::detail {

bool cpu_tensors_on_meta();
void set_cpu_tensors_on_meta(bool on);

}  // namespace strata::detail
