// StateStore: where an optimizer keeps its per-element state (AdamW's moments, SGD's momentum)
// away from its parameters' device: host memory here, a file on NVMe in memory/nvme_state_store.h.
//
//   optim::AdamW opt(groups, optim::AdamWOptions(6e-4));
//   opt.place_state(optim::make_host_state_store(model_device));   // ZeRO-Offload's layout
//   opt.step();   // offloaded parameters update on the host, with the same bits
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "strata/core/device.h"
#include "strata/core/dtype.h"
#include "strata/core/tensor.h"

namespace strata::optim {

// Where an optimizer's per-element state lives: beside each parameter (on its device), in host
// memory (page-locked for a GPU's copies), or in a spill file on NVMe.
enum class StatePlacement : uint8_t { Device, Host, Nvme };

const char* state_placement_name(StatePlacement p);  // "device", "host", "nvme"
// Parses "device", "host" or "nvme"; ValueError naming `what` (a flag) otherwise.
StatePlacement parse_state_placement(const std::string& text, const std::string& what);

// A store of per-parameter state buffers. Each parameter the optimizer places here has `count`
// buffers of `numel` elements; the optimizer updates them a chunk at a time on the host:
// acquire(), update, release(). Chunks of one parameter never overlap while acquired.
class StateStore {
 public:
  virtual ~StateStore() = default;
  virtual StatePlacement placement() const = 0;
  // Where the bytes are, for messages ("host memory", "<dir>/<spill file>").
  virtual std::string describe() const = 0;
  // Makes room for parameter `param`'s buffers, zero-filled. Once per parameter.
  virtual void add(size_t param, size_t count, int64_t numel, DType dtype) = 0;
  virtual bool contains(size_t param) const = 0;
  // Forgets parameter `param`'s buffers (a loaded state dict without its state).
  virtual void remove(size_t param) = 0;
  // Host tensors (1-D, contiguous, on the CPU), one per buffer, holding elements [begin, end),
  // readable and writable until release().
  virtual std::vector<Tensor> acquire(size_t param, int64_t begin, int64_t end) = 0;
  // acquire() of a chunk the caller overwrites whole: a file store does not read it first.
  virtual std::vector<Tensor> acquire_for_write(size_t param, int64_t begin, int64_t end) {
    return acquire(param, begin, end);
  }
  // Ends an acquire: the store keeps what was written (a file store writes it back, unless the
  // chunk was only read: `modified` false).
  virtual void release(size_t param, int64_t begin, int64_t end, bool modified) = 0;
  // Says that acquire(param, begin, end) comes soon, so a file store can read it ahead.
  virtual void will_acquire(size_t param, int64_t begin, int64_t end) {}
  // Waits for every write-back; a store whose writes failed throws here at the latest.
  virtual void flush() {}
  // The most elements the optimizer acquires at once (0: whole parameters).
  virtual int64_t chunk_elements() const { return 0; }
  // The elements of a parameter of `numel` acquired at once: chunk_elements(), or all of them.
  int64_t chunk_for(int64_t numel) const {
    return chunk_elements() > 0 ? chunk_elements() : std::max<int64_t>(numel, 1);
  }
  // Bytes held for buffers, and bytes moved to and from where they live (a file store's I/O).
  virtual uint64_t bytes() const = 0;
  virtual uint64_t bytes_read() const { return 0; }
  virtual uint64_t bytes_written() const { return 0; }
};

// Buffers in host memory, from `device`'s host allocator (page-locked on CUDA).
std::shared_ptr<StateStore> make_host_state_store(Device device = kCPU);

}  // namespace strata::optim
