// ExtentAllocator: first-fit allocation of aligned byte ranges in a fixed arena (the host pool
// and the NVMe spill file), with coalescing on free. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>

namespace strata::memory {

class ExtentAllocator {
 public:
  ExtentAllocator(uint64_t capacity, uint64_t alignment);
  // An offset of a free range of round_up(bytes, alignment) bytes, or nullopt when none fits.
  std::optional<uint64_t> allocate(uint64_t bytes);
  void free(uint64_t offset, uint64_t bytes);
  // Extends the arena to `capacity` (rounded down to the alignment; never shrinks it).
  void grow(uint64_t capacity);
  uint64_t capacity() const {
    std::lock_guard<std::mutex> lk(mu_);
    return capacity_;
  }
  uint64_t alignment() const { return alignment_; }
  uint64_t used() const;
  uint64_t peak() const;
  void reset_peak();
  size_t free_ranges() const;  // for tests: 1 when everything is free again
  uint64_t rounded(uint64_t bytes) const { return (bytes + alignment_ - 1) / alignment_ * alignment_; }

 private:
  uint64_t capacity_, alignment_;
  mutable std::mutex mu_;
  std::map<uint64_t, uint64_t> free_;  // offset -> length
  uint64_t used_ = 0, peak_ = 0;
};

}  // namespace strata::memory
