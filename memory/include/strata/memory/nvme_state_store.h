// An optimizer's per-element state in a spill file on NVMe (ZeRO-Infinity's layout): each
// parameter's buffers in extents of an unlinked O_DIRECT file, read a chunk ahead of the update,
// written back behind it, every I/O chunk checked with CRC-32C.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "strata/memory/io_faults.h"
#include "strata/memory/tensor_cache.h"
#include "strata/optim/state_store.h"

namespace strata::memory {

struct NvmeStateSettings {
  std::string dir;        // where the spill file is made (must exist)
  uint64_t capacity = 0;  // bytes of the file; nvme_state_capacity() gives what a state needs
  IoEngineKind engine = IoEngineKind::Auto;
  uint64_t chunk_bytes = uint64_t(8) << 20;  // per buffer of one chunk of an f32 parameter
  size_t slots = 4;                          // chunks in host memory at once (being read, updated, written)
  IoFaults faults;                           // injected under the store (tests)
  std::string what = "optimizer state";      // what it holds, for messages
};

// The file's size for `state_bytes` of state in `buffers` buffers (each extent rounds up to 4 KiB).
uint64_t nvme_state_capacity(uint64_t state_bytes, uint64_t buffers);

// The host memory a store holds besides its file: its two I/O channels' staging buffers and its
// chunk slots, for parameters of at most `largest_param_elements` elements with `buffers_per_param`
// buffers each. On a CPU device that memory is the device's.
uint64_t nvme_state_host_bytes(const NvmeStateSettings& settings, int64_t largest_param_elements,
                               size_t buffers_per_param);

// Throws IoError naming the directory when the file cannot be made or reserved.
std::shared_ptr<optim::StateStore> make_nvme_state_store(const NvmeStateSettings& settings);

}  // namespace strata::memory
