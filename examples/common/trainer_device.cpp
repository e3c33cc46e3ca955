#include "examples/common/trainer_device.h"

#include "examples/common/trainer_common.pb.h"
#include "strata/core/backend.h"
#include "strata/core/byte_size.h"
#include "strata/core/error.h"
#include "strata/ops/sim_device.h"

namespace strata::examples {

TrainerDevice resolve_trainer_device(const RunConfig& run, const dist::LaunchEnv& env) {
  const std::string text = run.has_device() ? run.device() : "cpu";
  Device d;
  try {
    d = Device::parse(text);
  } catch (const DeviceError&) {
    throw ValueError("--device '" + text + "' is not a device (cpu, cuda, cuda:N, sim or sim:N)");
  }
  STRATA_CHECK(!d.is_meta(), ValueError, "--device meta holds no data: train on cpu, cuda or sim");
  if ((d.is_cuda() || d.is_sim()) && text.find(':') == std::string::npos) d.index = env.local_rank;
  auto& reg = BackendRegistry::instance();
  (void)backend_for(kCPU);  // the built-in backends are registered
  if (d.is_cuda()) {
    STRATA_CHECK(reg.has(DeviceType::CUDA), ValueError, "--device ", text,
                 ": this build of Strata has no CUDA (configure with the CUDA toolkit present)");
    const int n = reg.get(DeviceType::CUDA).device_count();
    STRATA_CHECK(d.index < n, ValueError, "--device ", text, ": ", d.str(), " does not exist (", n,
                 " CUDA device(s) visible",
                 env.launched() ? ", local rank " + std::to_string(env.local_rank) : "", ")");
  }
  if (d.is_sim()) {
    const int n = sim_device_count();
    STRATA_CHECK(d.index < n, ValueError, "--device ", text, ": ", d.str(), " does not exist (", n,
                 " sim devices; STRATA_SIM_DEVICES sets how many)");
  }
  if (run.has_sim_memory()) {
    STRATA_CHECK(d.is_sim(), ValueError, "--sim-memory ", run.sim_memory(),
                 " applies to the sim device only, not ", d.str());
    const uint64_t bytes = parse_byte_size(run.sim_memory(), "--sim-memory");
    STRATA_CHECK(bytes > 0, ValueError, "--sim-memory '", run.sim_memory(), "' is zero");
    set_sim_memory_capacity(d.index, bytes);
  }
  return TrainerDevice{d, &allocator_for(d)};
}

std::string TrainerDevice::describe() const {
  if (device.is_sim())
    return device.str() + " (memory capacity " + format_bytes(double(sim_memory_capacity(device.index))) +
           ")";
  return device.str();
}

std::string out_of_memory_advice(const std::string& what, int64_t step) {
  return (step > 0 ? "step " + std::to_string(step) + ": " : std::string()) + what +
         "\n  the step does not fit the device: --memory-budget <the capacity> plans which activations to "
         "recompute or spill (with --spill-dir, to NVMe) so that it does; a smaller --batch-size also helps";
}

}  // namespace strata::examples
