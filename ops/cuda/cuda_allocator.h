// CudaCachingAllocator (per-device block-splitting cache over cudaMalloc) and
// CudaHostAllocator (cached pinned host memory), both with MemoryStats by category.
#pragma once

#include <memory>

#include "strata/core/allocator.h"

namespace strata::gpu {

// Device memory cache in the manner of PyTorch's CUDACachingAllocator: requests are rounded
// to 512 bytes; requests up to 1 MiB are cut from 2 MiB segments (the small pool), larger
// ones from segments of 20 MiB or the request rounded to 2 MiB (the large pool). A freed
// block merges with its free neighbours in the same segment and is cached for reuse;
// empty_cache() returns wholly free segments to cudaFree. Every block offset is a multiple
// of 512 inside a 256-aligned segment, so blocks are 64-byte aligned. All kernels run on
// the device's legacy default stream, so a freed block can be reused at once (stream order).
// Thread-safe. Makes no CUDA call until the first allocation.
class CudaCachingAllocator final : public Allocator {
 public:
  explicit CudaCachingAllocator(int device);
  ~CudaCachingAllocator() override;
  void* allocate(size_t bytes, MemoryCategory category) override;
  void deallocate(void* ptr, size_t bytes, MemoryCategory category) override;
  void empty_cache() override;
  Device device() const override;

  static constexpr size_t kMinBlock = 512;
  static constexpr size_t kSmallRequest = size_t(1) << 20;    // 1 MiB
  static constexpr size_t kSmallSegment = size_t(2) << 20;    // 2 MiB
  static constexpr size_t kLargeSegment = size_t(20) << 20;   // 20 MiB
  static constexpr size_t kLargeRequest = size_t(10) << 20;   // own segment from here up
  static constexpr size_t kLargeRounding = size_t(2) << 20;   // 2 MiB

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Pinned (page-locked) host memory for asynchronous copies, cached by size class like the
// CPU caching allocator. A freed block is reused only after the work queued on the legacy
// default stream at the time of the free has finished (an event is recorded), so an
// in-flight copy from a freed block cannot be overwritten. Device is kCPU: the memory is
// host memory.
class CudaHostAllocator final : public Allocator {
 public:
  CudaHostAllocator();
  ~CudaHostAllocator() override;
  void* allocate(size_t bytes, MemoryCategory category) override;
  void deallocate(void* ptr, size_t bytes, MemoryCategory category) override;
  void empty_cache() override;
  Device device() const override { return kCPU; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::gpu
