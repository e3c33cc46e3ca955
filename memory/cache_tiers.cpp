#include "memory/cache_tiers.h"

#include "strata/core/error.h"

namespace strata::memory {

namespace {

// The direct path's channels for a GPU's tensors (device staging buffers), or the reason it
// cannot run (the staged path then carries the GPU's chunks through host buffers).
std::string try_direct_path(NvmeTier& nvme, Backend& device, const TensorCacheOptions& opt,
                            const std::shared_ptr<FaultCounters>& counters) {
  try {
    auto store = nvme.open_device_channel(device, opt.device.index, opt.direct_engine, opt.io_chunk_bytes,
                                          opt.io_queue_depth, opt.faults, counters);
    auto load = nvme.open_device_channel(device, opt.device.index, opt.direct_engine, opt.io_chunk_bytes,
                                         opt.io_queue_depth, opt.faults, counters);
    nvme.use_device_channels(std::move(store), std::move(load));
    return {};
  } catch (const Error& e) {  // the engine cannot run here, or no device memory for the staging buffers
    return e.what();
  }
}

}  // namespace

CacheTiers open_cache_tiers(const TensorCacheOptions& opt) {
  CacheTiers t;
  if (opt.host_pool_bytes > 0) t.host = std::make_unique<HostTier>(opt.host_pool_bytes);
  Backend* device = nullptr;
  if (opt.device.type != DeviceType::CPU) {
    STRATA_CHECK(opt.device.type == DeviceType::CUDA || opt.device.type == DeviceType::Sim, ValueError,
                 "tensor cache: cannot move activations of ", opt.device.str(),
                 " (only the CPU's, a GPU's and a sim device's)");
    device = &backend_for(opt.device);
    if (t.host) t.host->pin_for(*device);
  }
  if (!opt.spill_dir.empty() && opt.spill_arena_bytes == 0)
    t.warnings.push_back("NVMe tier off: spill_arena_bytes is 0 (spill directory '" + opt.spill_dir +
                         "' unused)");
  if (opt.spill_dir.empty() || opt.spill_arena_bytes == 0) return t;
  std::string direct_refusal;  // DeviceIo::Direct asked for and not possible: an error
  try {
    t.nvme = std::make_unique<NvmeTier>(opt.spill_dir, opt.spill_arena_bytes);
    auto counters = std::make_shared<FaultCounters>();
    std::string why;
    auto store = t.nvme->open_channel(opt.io_engine, opt.io_chunk_bytes, opt.io_queue_depth, opt.faults,
                                      counters, &why);
    auto load = t.nvme->open_channel(opt.io_engine, opt.io_chunk_bytes, opt.io_queue_depth, opt.faults,
                                     counters, &why);
    t.nvme->use_channels(std::move(store), std::move(load));
    t.io_engine = t.nvme->engine_name();
    if (device) {
      std::string direct_why = "it was not asked for";
      if (opt.device_io != DeviceIo::Staged) direct_why = try_direct_path(*t.nvme, *device, opt, counters);
      if (direct_why.empty()) {
        t.device_io = std::string("direct (") + t.nvme->device_engine_name() + ")";
      } else {
        if (opt.device_io == DeviceIo::Direct) direct_refusal = direct_why;
        t.device_io = std::string("staged (") + t.io_engine + ")";
        t.nvme->store_channel().pin_staging(*device);  // the host buffers carry device chunks
        t.nvme->load_channel().pin_staging(*device);
      }
    }
    if (!why.empty()) t.warnings.push_back(why);
  } catch (const IoError& e) {
    t.nvme.reset();
    t.io_engine.clear();
    t.device_io.clear();
    std::string why = e.what();
    if (why.rfind("tensor cache: ", 0) == 0) why.erase(0, 14);  // the warning's reader says so already
    t.warnings.push_back("NVMe tier off: " + why);
  }
  STRATA_CHECK(direct_refusal.empty(), IoError, "tensor cache: the direct GPU-to-NVMe path (",
               io_engine_name(opt.direct_engine), ") was asked for but ", direct_refusal);
  return t;
}

}  // namespace strata::memory
