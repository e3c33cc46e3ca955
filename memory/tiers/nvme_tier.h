// NvmeTier: the spill file (an unlinked O_DIRECT file, fallocate'd once, mode 0600) with its
// extent allocator, and IoChannels that move byte ranges between memory and the file through
// 4 KiB-aligned staging buffers, checksumming every chunk (CRC-32C) on the way. As a Tier it
// writes and reads through the channels it was given (use_channels).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "memory/tiers/extent_allocator.h"
#include "memory/tiers/io_engine.h"
#include "memory/tiers/tier.h"
#include "strata/core/backend.h"
#include "strata/memory/io_engine_kind.h"

namespace strata::memory {

// The spill file's block: extents, offsets and O_DIRECT transfers are multiples of it.
inline constexpr uint64_t kSpillBlock = 4096;
inline uint64_t round_to_spill_block(uint64_t n) { return (n + kSpillBlock - 1) / kSpillBlock * kSpillBlock; }

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

class NvmeTier final : public Tier {
 public:
  // Opens the arena in `dir`; throws IoError naming the directory and the cause.
  NvmeTier(const std::string& dir, uint64_t capacity);
  ~NvmeTier();
  NvmeTier(const NvmeTier&) = delete;
  NvmeTier& operator=(const NvmeTier&) = delete;

  // A channel for host memory on an engine of `kind` (Auto, Uring or Threads); `faults` are injected under it.
  std::unique_ptr<IoChannel> open_channel(IoEngineKind kind, size_t chunk, size_t depth,
                                          const IoFaults& faults,
                                          std::shared_ptr<FaultCounters> counters,
                                          std::string* fallback_reason);
  // The direct path for a GPU's tensors: staging buffers in `backend`'s device memory, moved to
  // and from the file by `engine` without touching host memory: CuFile (GPUDirect Storage;
  // libcufile loaded at run time) or Threads (pread/pwrite straight into device memory, for a
  // device whose memory the host can address, such as the tests' stand-in GPU). Chunks are
  // checksummed on the device (Backend::crc32c_of). Throws IoEngineUnavailable with the reason where
  // the engine cannot run.
  std::unique_ptr<IoChannel> open_device_channel(Backend& backend, int device_index, IoEngineKind engine,
                                                 size_t chunk, size_t depth, const IoFaults& faults,
                                                 std::shared_ptr<FaultCounters> counters);
  // The channels write and read use: one pair for host memory (and a GPU's staged chunks), and
  // optionally a pair with device staging buffers for a GPU's tensors (the direct path). Each
  // direction has its own, as each has its own worker thread.
  void use_channels(std::unique_ptr<IoChannel> store, std::unique_ptr<IoChannel> load);
  void use_device_channels(std::unique_ptr<IoChannel> store, std::unique_ptr<IoChannel> load);
  IoChannel& store_channel() { return *store_; }
  IoChannel& load_channel() { return *load_; }
  const char* engine_name() const { return store_ ? store_->engine_name() : ""; }
  const char* device_engine_name() const { return device_store_ ? device_store_->engine_name() : ""; }

  const char* name() const override { return "spill arena"; }
  // "<dir>/<unlinked spill file>".
  std::string describe() const override { return desc_; }
  ExtentAllocator& extents() override { return extents_; }
  // Reserves the file up to `capacity` bytes and extends the arena to it (between steps); throws
  // IoError naming the directory and the bytes where the drive cannot hold them.
  void grow(uint64_t capacity);
  std::optional<uint64_t> allocate(uint64_t bytes) override { return extents_.allocate(bytes); }
  void free(uint64_t offset, uint64_t bytes) override { extents_.free(offset, bytes); }
  IoStatus write(const void* src, uint64_t bytes, uint64_t offset, TensorMemory mem,
                 std::vector<uint32_t>& crcs, const std::atomic<bool>* cancel) override;
  IoStatus read(void* dst, uint64_t bytes, uint64_t offset, TensorMemory mem,
                const std::vector<uint32_t>& crcs) override;
  int fd() const { return fd_; }
  bool direct() const { return direct_; }

 private:
  int fd_ = -1;
  bool direct_ = false;
  std::string desc_, dir_;
  ExtentAllocator extents_;
  std::unique_ptr<IoChannel> store_, load_, device_store_, device_load_;
};

}  // namespace strata::memory
