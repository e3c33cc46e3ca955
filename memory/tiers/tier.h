// Tier: where the tensor cache keeps an offloaded storage's bytes between its store in forward
// and its load in backward: allocate an extent, write, read, free. The host pool (HostTier) and
// the NVMe spill file (NvmeTier) implement it, and the cache sees only this interface.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memory/tiers/extent_allocator.h"
#include "strata/core/backend.h"
#include "strata/core/device.h"

namespace strata::memory {

// What a transfer ended as; `what` names the cause ("ENOSPC", "short write: 2097152 of ...").
struct IoStatus {
  bool ok = true;
  bool cancelled = false;
  std::string what;
  uint64_t file_offset = 0;  // where it failed
};

// The tensor memory a transfer reads or fills: on `device`, and for a GPU's, after `after` (the
// compute-stream mark a store must wait for, or the work a load must not overtake).
struct TensorMemory {
  Device device = kCPU;
  Event* after = nullptr;
};

class Tier {
 public:
  virtual ~Tier() = default;
  // What the tier is called in messages about its capacity ("host pool", "spill arena").
  virtual const char* name() const = 0;
  // Where its bytes are, for messages about a transfer ("the host pool", "<dir>/<spill file>").
  virtual std::string describe() const = 0;
  virtual ExtentAllocator& extents() = 0;
  // An extent of at least `bytes` (nullopt when the tier is full); free gives it back.
  virtual std::optional<uint64_t> allocate(uint64_t bytes) = 0;
  virtual void free(uint64_t offset, uint64_t bytes) = 0;
  // Copies `bytes` of tensor memory at `src` into the extent at `offset`, filling `crcs` where the
  // tier checksums; stops early when `cancel` becomes true.
  virtual IoStatus write(const void* src, uint64_t bytes, uint64_t offset, TensorMemory mem,
                         std::vector<uint32_t>& crcs, const std::atomic<bool>* cancel) = 0;
  // Copies them back into tensor memory at `dst`, verifying `crcs` where the tier keeps them.
  virtual IoStatus read(void* dst, uint64_t bytes, uint64_t offset, TensorMemory mem,
                        const std::vector<uint32_t>& crcs) = 0;
};

// Copies n bytes between host memory and tensor memory: memcpy on the CPU, else on the
// device backend's copy stream, waited for here (the callers are the cache's worker threads).
void copy_to_host(void* host_dst, const void* src, size_t n, TensorMemory mem);
void copy_from_host(void* dst, const void* host_src, size_t n, TensorMemory mem);

}  // namespace strata::memory
