// Allocator interface (64-byte aligned, category-tagged, with stats) and the CPU allocators.
#pragma once

#include <cstddef>
#include <memory>

#include "strata/core/device.h"
#include "strata/core/memory_stats.h"

namespace strata {

inline constexpr size_t kAllocAlignment = 64;

class Allocator {
 public:
  virtual ~Allocator() = default;
  // Returns a 64-byte aligned block of at least `bytes` bytes (nullptr for 0 bytes).
  virtual void* allocate(size_t bytes, MemoryCategory category) = 0;
  virtual void deallocate(void* ptr, size_t bytes, MemoryCategory category) = 0;
  // Moves `bytes` from one accounting category to another (no data moves).
  void retag(size_t bytes, MemoryCategory from, MemoryCategory to) {
    if (from != to) stats_.on_retag(from, to, int64_t(bytes));
  }
  // Returns cached blocks to the system (no-op for non-caching allocators).
  virtual void empty_cache() {}
  virtual Device device() const = 0;
  MemoryStats& stats() { return stats_; }

 protected:
  MemoryStats stats_;
};

// Plain aligned_alloc/free with stats.
class CpuAllocator final : public Allocator {
 public:
  void* allocate(size_t bytes, MemoryCategory category) override;
  void deallocate(void* ptr, size_t bytes, MemoryCategory category) override;
  Device device() const override { return kCPU; }
};

// Caching CPU allocator: size-class free lists so the steady-state training step makes no
// system allocations; at most `max_cached_bytes` are cached. Past `high_water_bytes` held (in use
// and cached), a miss first returns cached blocks to the system until its own block fits under the
// mark, so a process near the machine's memory holds its live tensors, not its cache; the default
// mark is half the physical memory, or STRATA_CPU_CACHE_HIGH_WATER (a byte count, e.g. 4G).
class CachingCpuAllocator final : public Allocator {
 public:
  explicit CachingCpuAllocator(size_t max_cached_bytes = size_t(8) << 30, size_t high_water_bytes = 0);
  ~CachingCpuAllocator() override;
  void* allocate(size_t bytes, MemoryCategory category) override;
  void deallocate(void* ptr, size_t bytes, MemoryCategory category) override;
  void empty_cache() override;
  Device device() const override { return kCPU; }

 private:
  void release_for(size_t want);  // under the lock: frees cached blocks so `want` fits the mark
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The process-wide CPU allocator (one caching allocator per device: docs/design.md, "Invariants").
Allocator& cpu_allocator();

}  // namespace strata
