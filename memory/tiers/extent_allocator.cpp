#include "memory/tiers/extent_allocator.h"

#include "strata/core/error.h"

namespace strata::memory {

ExtentAllocator::ExtentAllocator(uint64_t capacity, uint64_t alignment)
    : capacity_(capacity / alignment * alignment), alignment_(alignment) {
  if (capacity_ > 0) free_.emplace(0, capacity_);
}

std::optional<uint64_t> ExtentAllocator::allocate(uint64_t bytes) {
  const uint64_t want = rounded(bytes == 0 ? 1 : bytes);
  std::lock_guard<std::mutex> lk(mu_);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < want) continue;
    uint64_t off = it->first, len = it->second;
    free_.erase(it);
    if (len > want) free_.emplace(off + want, len - want);
    used_ += want;
    if (used_ > peak_) peak_ = used_;
    return off;
  }
  return std::nullopt;
}

void ExtentAllocator::free(uint64_t offset, uint64_t bytes) {
  const uint64_t len = rounded(bytes == 0 ? 1 : bytes);
  std::lock_guard<std::mutex> lk(mu_);
  STRATA_CHECK(offset + len <= capacity_ && used_ >= len, ValueError,
               "ExtentAllocator: freeing [", offset, ", ", offset + len, ") outside the arena");
  used_ -= len;
  auto next = free_.lower_bound(offset);
  uint64_t start = offset, end = offset + len;
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    STRATA_CHECK(prev->first + prev->second <= offset, ValueError,
                 "ExtentAllocator: double free at offset ", offset);
    if (prev->first + prev->second == offset) {
      start = prev->first;
      free_.erase(prev);
    }
  }
  if (next != free_.end()) {
    STRATA_CHECK(end <= next->first, ValueError, "ExtentAllocator: double free at offset ", offset);
    if (next->first == end) {
      end += next->second;
      free_.erase(next);
    }
  }
  free_.emplace(start, end - start);
}

void ExtentAllocator::grow(uint64_t capacity) {
  std::lock_guard<std::mutex> lk(mu_);
  const uint64_t to = capacity / alignment_ * alignment_;
  if (to <= capacity_) return;
  uint64_t start = capacity_;
  if (!free_.empty()) {
    auto last = std::prev(free_.end());
    if (last->first + last->second == capacity_) {
      start = last->first;
      free_.erase(last);
    }
  }
  free_.emplace(start, to - start);
  capacity_ = to;
}

uint64_t ExtentAllocator::used() const {
  std::lock_guard<std::mutex> lk(mu_);
  return used_;
}
uint64_t ExtentAllocator::peak() const {
  std::lock_guard<std::mutex> lk(mu_);
  return peak_;
}
void ExtentAllocator::reset_peak() {
  std::lock_guard<std::mutex> lk(mu_);
  peak_ = used_;
}
size_t ExtentAllocator::free_ranges() const {
  std::lock_guard<std::mutex> lk(mu_);
  return free_.size();
}

}  // namespace strata::memory
