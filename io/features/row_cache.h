// RowCache: feature rows kept in memory by id within a byte budget, for a file store that reads
// rows one by one: the rows a skewed graph's minibatches keep coming back to (its hubs) stay.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace strata::io {

// Four-way sets, each way with a small use count: a hit raises it; a miss takes the way of the
// set with the lowest count when that count is 0, and otherwise lowers that count by one (an aging
// LFU: rows asked for again and again, the hubs, keep their ways, while a stream of rows asked
// for once churns through the least used way). Safe to call from any thread; sets share one of
// 256 locks.
class RowCache {
 public:
  // Room for as many rows of `row_bytes` as `budget_bytes` holds with their tags (a multiple of
  // four; none when the budget holds fewer than four). Memory is taken as rows come in.
  RowCache(uint64_t budget_bytes, int64_t row_bytes);

  int64_t capacity_rows() const { return int64_t(tags_.size()); }
  // Copies row `id` into `out` and returns true when the cache holds it.
  bool find(int64_t id, char* out);
  // Offers row `id`, just read from the file, to the cache.
  void offer(int64_t id, const char* row);
  int64_t hits() const { return hits_.load(); }
  int64_t misses() const { return misses_.load(); }

 private:
  static constexpr int kWays = 4;
  static constexpr int kLocks = 256;
  size_t set_of(int64_t id) const;
  std::mutex& lock_of(size_t set) { return locks_[set % kLocks]; }

  int64_t row_bytes_;
  size_t sets_ = 0;
  std::vector<int64_t> tags_;     // row id per way, -1 when empty
  std::vector<uint8_t> uses_;     // use count per way
  std::unique_ptr<char[]> rows_;  // rows_[way * row_bytes_]: not initialized, so untouched pages cost nothing
  std::unique_ptr<std::mutex[]> locks_;
  std::atomic<int64_t> hits_{0}, misses_{0};
};

}  // namespace strata::io
