// --optimizer-state: places a trainer's optimizer state on the device, in host memory or in a
// spill file in --spill-dir, before a resume loads it.
#pragma once

#include <string>

#include "strata/core/device.h"
#include "strata/optim/optimizer.h"

namespace strata::examples {

class OptimizerConfig;
class TensorCacheConfig;

// Places `optimizer`'s state as `optim.optimizer_state()` says (nothing for "device"). ValueError
// naming the flag on bad input (an optimizer without host updates, nvme without --spill-dir).
void place_optimizer_state(const OptimizerConfig& optim, const TensorCacheConfig& cache, Device device,
                           optim::Optimizer& optimizer);

// The trainers' call, with their settings `c` (optim() and cache()).
template <class Config>
void place_optimizer_state(const Config& c, Device device, optim::Optimizer& optimizer) {
  place_optimizer_state(c.optim(), c.cache(), device, optimizer);
}

// "optimizer state: nvme, 12.00 MiB in <file>", or "" when the state is on the device.
std::string optimizer_state_line(const optim::Optimizer& optimizer);
// "optimizer state: 12.00 MiB read, 12.00 MiB written (1.00 MiB per step)" for state on NVMe, else "".
std::string optimizer_state_traffic(const optim::Optimizer& optimizer, int64_t steps);

}  // namespace strata::examples
