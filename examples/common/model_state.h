// Where a trainer's model state lives: --optimizer-state places the optimizer's moments (before a
// resume loads them), --weights and --gradients page the blocks' weights and gradients (after it),
// each on the device, in host memory or in a spill file in --spill-dir.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "strata/core/device.h"
#include "strata/memory/param_pager.h"
#include "strata/nn/module.h"
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

// Pages `model`'s blocks' weights and gradients as --weights and --gradients say (null when both
// stay on the device). ValueError naming the flag on bad input (nvme without --spill-dir).
std::shared_ptr<memory::ParamPager> page_parameters(const OptimizerConfig& optim,
                                                    const TensorCacheConfig& cache, Device device,
                                                    const nn::Module& model);
template <class Config>
std::shared_ptr<memory::ParamPager> page_parameters(const Config& c, Device device, const nn::Module& model) {
  return page_parameters(c.optim(), c.cache(), device, model);
}

// "optimizer state: nvme, 12.00 MiB in <file>", or "" when the state is on the device.
std::string optimizer_state_line(const optim::Optimizer& optimizer);
// "optimizer state: 12.00 MiB read, 12.00 MiB written (1.00 MiB per step)" for state on NVMe, else "".
std::string optimizer_state_traffic(const optim::Optimizer& optimizer, int64_t steps);
// "weights host, gradients nvme: 12 blocks, 96 parameters, 81.00 MiB (host memory; <file>)".
std::string pager_line(const memory::ParamPager& pager);
// "weights 81.00 MiB in, 81.00 MiB out, gradients 0 B in, 81.00 MiB out per step; waited 0.12 s".
std::string pager_traffic(const memory::ParamPager& pager, int64_t steps);

}  // namespace strata::examples
