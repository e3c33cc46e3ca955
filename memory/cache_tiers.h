// open_cache_tiers: the tiers a TensorCacheOptions asks for, opened when the cache is created
// (pool mapping, spill file, io_uring rings, staging buffers, a GPU's direct path), so nothing
// is allocated or registered on the hot path.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "memory/tiers/host_tier.h"
#include "memory/tiers/nvme_tier.h"
#include "strata/memory/tensor_cache.h"

namespace strata::memory {

struct CacheTiers {
  std::unique_ptr<HostTier> host;     // null without host_pool_bytes
  std::unique_ptr<NvmeTier> nvme;     // null without a usable spill directory
  std::string io_engine;              // the NVMe channels' engine ("io_uring", "threads"), or ""
  std::string device_io;              // a GPU's path to NVMe ("direct (cufile)", "staged (io_uring)"), or ""
  std::vector<std::string> warnings;  // what was asked for and is not there (the NVMe tier off, ...)
};

// A spill directory that is missing or unusable turns the NVMe tier off with a warning; a GPU's
// direct path asked for (DeviceIo::Direct) where it cannot run throws IoError with the reason.
CacheTiers open_cache_tiers(const TensorCacheOptions& opt);

}  // namespace strata::memory
