// MemoryCategory and MemoryStats: bytes in use by category, current and peak, per allocator.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

namespace strata {

// What a buffer holds; docs/design.md, "Invariants": memory accounting. A buffer is re-tagged when its role
// changes (e.g. the tensor cache packs an activation).
enum class MemoryCategory : uint8_t {
  Parameter,
  Gradient,
  OptimizerState,
  SavedActivation,
  Temporary,
  CacheStaging,
  HostPool,
  kCount
};
constexpr size_t kNumMemoryCategories = size_t(MemoryCategory::kCount);
const char* memory_category_name(MemoryCategory c);

struct MemorySnapshot {
  std::array<int64_t, kNumMemoryCategories> current{};
  std::array<int64_t, kNumMemoryCategories> peak{};
  int64_t total_current = 0;
  int64_t total_peak = 0;
  int64_t reserved = 0;  // bytes held by the allocator, in use or cached
  int64_t num_allocs = 0;
  int64_t current_of(MemoryCategory c) const { return current[size_t(c)]; }
  int64_t peak_of(MemoryCategory c) const { return peak[size_t(c)]; }
};

// Thread-safe counters; peaks can be reset at any time (e.g. at the start of a step).
class MemoryStats {
 public:
  void on_alloc(MemoryCategory c, int64_t bytes);
  void on_free(MemoryCategory c, int64_t bytes);
  void on_retag(MemoryCategory from, MemoryCategory to, int64_t bytes);
  void on_reserve(int64_t delta);
  MemorySnapshot snapshot() const;
  void reset_peaks();

 private:
  void raise_peaks_locked(MemoryCategory c);
  mutable std::mutex mu_;
  MemorySnapshot s_;
};

// Thread-local stack of the category new allocations are tagged with (default Temporary).
class MemoryCategoryGuard {
 public:
  explicit MemoryCategoryGuard(MemoryCategory c);
  ~MemoryCategoryGuard();
  MemoryCategoryGuard(const MemoryCategoryGuard&) = delete;
  MemoryCategoryGuard& operator=(const MemoryCategoryGuard&) = delete;
  static MemoryCategory current();

 private:
  MemoryCategory prev_;
};

}  // namespace strata
