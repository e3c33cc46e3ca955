// SimAllocator: the sim device's memory, host memory cached by exact size with a hard capacity.
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "strata/core/allocator.h"

namespace strata::simulated {

// Requests are rounded to 512 bytes and a freed block is cached for a request of the same rounded
// size, so a steady training step makes no system allocation. The capacity bounds the bytes
// reserved (in use plus cached): a request that would pass it first returns the cached blocks to
// the system, then raises OutOfMemoryError naming the request, the capacity and the bytes in use
// per category. Thread-safe.
class SimAllocator final : public Allocator {
 public:
  SimAllocator(int device, uint64_t capacity);
  ~SimAllocator() override;
  void* allocate(size_t bytes, MemoryCategory category) override;
  void deallocate(void* ptr, size_t bytes, MemoryCategory category) override;
  void empty_cache() override;
  Device device() const override;

  void set_capacity(uint64_t bytes);
  uint64_t capacity() const;

  static constexpr size_t kRounding = 512;

 private:
  void release_cached_locked();
  std::string out_of_memory_message(size_t bytes, MemoryCategory category) const;

  const int device_;
  mutable std::mutex mu_;
  uint64_t capacity_;
  uint64_t reserved_ = 0;
  uint64_t cached_ = 0;
  std::unordered_map<size_t, std::vector<void*>> free_;  // rounded size -> cached blocks
};

}  // namespace strata::simulated
