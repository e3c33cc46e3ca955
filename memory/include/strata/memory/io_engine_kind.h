// IoEngineKind and DeviceIo: which engine moves the NVMe tier's chunks, and how a GPU's tensors
// reach it; what TensorCacheOptions and the tiers choose with.
#pragma once

#include <cstdint>

namespace strata::memory {

// The engine a channel to the NVMe tier runs on. For host memory: Auto (io_uring where the kernel
// allows it, else Threads), Uring (an error where refused) or Threads (pread/pwrite workers). For a
// GPU's direct path: CuFile (GPUDirect Storage) or Threads (pread/pwrite straight into device
// memory: only for a device the host can address, such as the tests' stand-in GPU).
enum class IoEngineKind : uint8_t { Auto, Uring, Threads, CuFile };
// "auto", "io_uring", "threads", "cufile" (what CacheStats::io_engine reports).
const char* io_engine_name(IoEngineKind e);
// How a GPU's tensors reach the NVMe tier: Staged (copied through page-locked host staging
// buffers, then io_uring), Direct (GPUDirect Storage: device staging buffers to the file and back,
// checksummed on the device; creating the cache fails where it cannot run), or Auto (Direct where
// it runs, else Staged; CacheStats::device_io says which).
enum class DeviceIo : uint8_t { Auto, Staged, Direct };

}  // namespace strata::memory
