// SimBackend: the sim device (ops/include/strata/ops/sim_device.h): the CPU's kernels on memory
// from a capacity-limited allocator per device, and host transfers on a copy stream per device.
#pragma once

#include <memory>

#include "strata/core/backend.h"

namespace strata::simulated {

std::unique_ptr<Backend> make_sim_backend();

}  // namespace strata::simulated
