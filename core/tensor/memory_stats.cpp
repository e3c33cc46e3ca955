#include "strata/core/memory_stats.h"

#include <algorithm>

namespace strata {

const char* memory_category_name(MemoryCategory c) {
  switch (c) {
    case MemoryCategory::Parameter: return "parameters";
    case MemoryCategory::Gradient: return "gradients";
    case MemoryCategory::OptimizerState: return "optimizer_state";
    case MemoryCategory::SavedActivation: return "saved_activations";
    case MemoryCategory::Temporary: return "temporaries";
    case MemoryCategory::CacheStaging: return "cache_staging";
    case MemoryCategory::HostPool: return "host_pool";
    case MemoryCategory::kCount: break;
  }
  return "?";
}

void MemoryStats::raise_peaks_locked(MemoryCategory c) {
  size_t i = size_t(c);
  s_.peak[i] = std::max(s_.peak[i], s_.current[i]);
  s_.total_peak = std::max(s_.total_peak, s_.total_current);
}

void MemoryStats::on_alloc(MemoryCategory c, int64_t bytes) {
  std::lock_guard<std::mutex> lk(mu_);
  s_.current[size_t(c)] += bytes;
  s_.total_current += bytes;
  ++s_.num_allocs;
  raise_peaks_locked(c);
}

void MemoryStats::on_free(MemoryCategory c, int64_t bytes) {
  std::lock_guard<std::mutex> lk(mu_);
  s_.current[size_t(c)] -= bytes;
  s_.total_current -= bytes;
}

void MemoryStats::on_retag(MemoryCategory from, MemoryCategory to, int64_t bytes) {
  std::lock_guard<std::mutex> lk(mu_);
  s_.current[size_t(from)] -= bytes;
  s_.current[size_t(to)] += bytes;
  raise_peaks_locked(to);
}

void MemoryStats::on_reserve(int64_t delta) {
  std::lock_guard<std::mutex> lk(mu_);
  s_.reserved += delta;
}

MemorySnapshot MemoryStats::snapshot() const {
  std::lock_guard<std::mutex> lk(mu_);
  return s_;
}

void MemoryStats::reset_peaks() {
  std::lock_guard<std::mutex> lk(mu_);
  s_.peak = s_.current;
  s_.total_peak = s_.total_current;
}

namespace {
thread_local MemoryCategory tl_category = MemoryCategory::Temporary;
}

MemoryCategoryGuard::MemoryCategoryGuard(MemoryCategory c) : prev_(tl_category) { tl_category = c; }
MemoryCategoryGuard::~MemoryCategoryGuard() { tl_category = prev_; }
MemoryCategory MemoryCategoryGuard::current() { return tl_category; }

}  // namespace strata
