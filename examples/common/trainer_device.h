// The device a trainer runs on: --device resolved (under mpirun, the rank's local index), checked
// before any work, and what an out-of-memory error on it should tell the user.
#pragma once

#include <string>

#include "strata/core/allocator.h"
#include "strata/core/device.h"
#include "strata/dist/process_group.h"

namespace strata::examples {

class RunConfig;

struct TrainerDevice {
  Device device = kCPU;
  // The allocator whose figures the trainer reports (the step peak is the device's).
  Allocator* allocator = nullptr;
  // "cpu", "sim:0 (memory capacity 2.00 GiB)", "cuda:1 (3 CUDA devices)".
  std::string describe() const;
};

// `run.device()` ("cpu" when unset) on this rank: "cuda" and "sim" without an index take
// cuda:<local rank> / sim:<local rank> under mpirun. Applies --sim-memory. A device that does
// not exist, CUDA in a build without it, or --sim-memory off the sim device is a ValueError
// naming the flag.
TrainerDevice resolve_trainer_device(const RunConfig& run, const dist::LaunchEnv& env);

// `what` (an out-of-memory error's message) in training step `step` (0: before the first) with the
// flags that fit the step under the device's capacity.
std::string out_of_memory_advice(const std::string& what, int64_t step);

}  // namespace strata::examples
