// RowCache: set-associative, lock-striped; a way's row is copied in and out under its set's lock.
#include "io/features/row_cache.h"

#include <algorithm>
#include <cstring>

namespace strata::io {

RowCache::RowCache(uint64_t budget_bytes, int64_t row_bytes)
    : row_bytes_(row_bytes), locks_(std::make_unique<std::mutex[]>(kLocks)) {
  if (row_bytes <= 0) return;
  const uint64_t per_row = uint64_t(row_bytes) + sizeof(int64_t) + 1;
  sets_ = size_t(budget_bytes / per_row / kWays);
  if (sets_ == 0) return;
  tags_.assign(sets_ * kWays, -1);
  uses_.assign(sets_ * kWays, 0);
  rows_.reset(new char[sets_ * kWays * size_t(row_bytes)]);
}

size_t RowCache::set_of(int64_t id) const {
  // Fibonacci hashing: consecutive ids fall in scattered sets.
  return size_t((uint64_t(id) * 0x9E3779B97F4A7C15ull) >> 17) % sets_;
}

bool RowCache::find(int64_t id, char* out) {
  if (sets_ == 0) return false;
  const size_t set = set_of(id);
  {
    std::lock_guard<std::mutex> lk(lock_of(set));
    for (size_t w = set * kWays; w < (set + 1) * kWays; ++w) {
      if (tags_[w] != id) continue;
      if (uses_[w] < 255) ++uses_[w];
      std::memcpy(out, rows_.get() + w * size_t(row_bytes_), size_t(row_bytes_));
      hits_.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
  }
  misses_.fetch_add(1, std::memory_order_relaxed);
  return false;
}

void RowCache::offer(int64_t id, const char* row) {
  if (sets_ == 0) return;
  const size_t set = set_of(id);
  std::lock_guard<std::mutex> lk(lock_of(set));
  const size_t first = set * kWays;
  size_t victim = first;
  for (size_t w = first; w < first + kWays; ++w) {
    if (tags_[w] == id) return;  // another thread brought it in meanwhile
    if (uses_[w] < uses_[victim]) victim = w;
  }
  if (uses_[victim] > 0) {  // every row of the set is in use: age the least used instead
    --uses_[victim];
    return;
  }
  tags_[victim] = id;
  uses_[victim] = 1;
  std::memcpy(rows_.get() + victim * size_t(row_bytes_), row, size_t(row_bytes_));
}

}  // namespace strata::io
