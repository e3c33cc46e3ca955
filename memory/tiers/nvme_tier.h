// NvmeTier: the spill file (an unlinked O_DIRECT file, fallocate'd once, mode 0600) with its
// extent allocator, and IoChannels that move byte ranges between memory and the file through
// 4 KiB-aligned staging buffers, checksumming every chunk (CRC-32C) on the way.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "memory/tiers/extent_allocator.h"
#include "memory/tiers/io_engine.h"
#include "strata/core/backend.h"
#include "strata/memory/tensor_cache.h"

namespace strata::memory {

// What a transfer ended as; `what` names the cause ("ENOSPC", "short write: 2097152 of ...").
struct IoStatus {
  bool ok = true;
  bool cancelled = false;
  std::string what;
  uint64_t file_offset = 0;  // where it failed
};

class NvmeTier;

// Copies n bytes between a staging buffer and tensor memory (a device copy for device tensors);
// null means memcpy.
using ChunkCopy = std::function<void(void* dst, const void* src, size_t n)>;

// One direction's machinery: its own engine and staging buffers (one channel per worker).
class IoChannel {
 public:
  IoChannel(NvmeTier& tier, std::unique_ptr<IoEngine> engine, size_t chunk, size_t buffers);
  ~IoChannel();
  // Writes `bytes` from `src` to the file at `offset` (an extent from the tier); fills one
  // CRC per chunk. Stops early, freeing nothing, when `cancel` becomes true.
  // `copy` moves each chunk from `src` into its staging buffer.
  IoStatus write(const void* src, uint64_t bytes, uint64_t offset, std::vector<uint32_t>& crcs,
                 const std::atomic<bool>* cancel, const ChunkCopy* copy = nullptr);
  // Reads them back into `dst`, verifying each chunk's CRC; `copy` moves each verified chunk
  // from its staging buffer to `dst`.
  IoStatus read(void* dst, uint64_t bytes, uint64_t offset, const std::vector<uint32_t>& crcs,
                const ChunkCopy* copy = nullptr);
  const char* engine_name() const { return engine_->name(); }
  // True when the staging buffers are device memory (the direct, GPUDirect Storage path).
  bool on_device() const { return device_backend_ != nullptr; }
  // Chunks moved straight between host tensor memory and the file, without a staging copy
  // (whole 4 KiB blocks at 4 KiB-aligned addresses; the allocator aligns large blocks so).
  uint64_t zero_copy_chunks() const { return zero_copy_chunks_; }
  void adopt_staging(std::vector<void*> staging);
  // Page-locks the staging buffers for `backend`'s transfers (a GPU's chunks go through them);
  // undone when the channel closes.
  void pin_staging(Backend& backend);

 private:
  std::vector<int> all_buffers() const;  // every staging buffer, as free
  // Waits for a completion and frees its staging buffer.
  IoCompletion reap(std::vector<int>& free_bufs, size_t& in_flight);
  // CRC-32C of a staging buffer's first n bytes: on the host, or where a device buffer lives.
  uint32_t checksum(const void* buf, size_t n) const;
  bool zero_copy_ok(const void* p, uint64_t n) const;

  friend class NvmeTier;

  NvmeTier& tier_;
  std::unique_ptr<IoEngine> engine_;
  size_t chunk_;
  std::vector<void*> staging_;
  Backend* pinned_for_ = nullptr;
  // Direct path: staging_ are 4 KiB-aligned pointers into device_blocks_, memory of
  // device_backend_'s device `device_index_`.
  Backend* device_backend_ = nullptr;
  int device_index_ = 0;
  std::vector<void*> device_blocks_;
  uint64_t zero_copy_chunks_ = 0;  // one channel is used by one worker thread at a time
};

class NvmeTier {
 public:
  // Opens the arena in `dir`; throws IoError naming the directory and the cause.
  NvmeTier(const std::string& dir, uint64_t capacity);
  ~NvmeTier();
  NvmeTier(const NvmeTier&) = delete;
  NvmeTier& operator=(const NvmeTier&) = delete;

  // A channel on the chosen backend (io_uring, else threads); `faults` are injected under it.
  std::unique_ptr<IoChannel> open_channel(IoBackend backend, size_t chunk, size_t depth,
                                          const IoFaults& faults,
                                          std::shared_ptr<FaultCounters> counters,
                                          std::string* fallback_reason);
  // The direct path for a GPU's tensors: staging buffers in `backend`'s device memory, moved to
  // and from the file by `engine` without touching host memory: "cufile" (GPUDirect Storage;
  // libcufile loaded at run time) or "threads" (pread/pwrite straight into device memory, for a
  // device whose memory the host can address, such as the tests' stand-in GPU). Chunks are
  // checksummed on the device (Backend::crc32c_of). Throws IoUringRefused with the reason where
  // the engine cannot run.
  std::unique_ptr<IoChannel> open_device_channel(Backend& backend, int device_index, const std::string& engine,
                                                 size_t chunk, size_t depth, const IoFaults& faults,
                                                 std::shared_ptr<FaultCounters> counters);
  ExtentAllocator& extents() { return extents_; }
  int fd() const { return fd_; }
  // "<dir>/<unlinked spill file>": for messages.
  const std::string& describe() const { return desc_; }
  bool direct() const { return direct_; }

 private:
  int fd_ = -1;
  bool direct_ = false;
  std::string desc_;
  ExtentAllocator extents_;
};

}  // namespace strata::memory
