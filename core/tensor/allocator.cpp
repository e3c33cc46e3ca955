#include "strata/core/allocator.h"

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <map>
#include <mutex>
#include <unordered_map>

#include "strata/core/error.h"
#include "strata/core/out_of_memory.h"

namespace strata {

namespace {
size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// Blocks of 64 KiB and more start on a page: the tensor cache writes and reads them with
// O_DIRECT straight from and into tensor memory (no staging copy), which needs 4 KiB alignment.
// nullptr when the system refuses (or the size cannot be rounded without overflow).
void* try_system_alloc(size_t bytes) {
  const size_t align = bytes >= (size_t(64) << 10) ? size_t(4096) : kAllocAlignment;
  if (bytes > SIZE_MAX - align) return nullptr;
  return std::aligned_alloc(align, round_up(bytes, align));
}

[[noreturn]] void throw_host_out_of_memory(size_t bytes, MemoryCategory category, const MemoryStats& stats) {
  throw OutOfMemoryError(
      out_of_memory_message("cpu", bytes, category, stats.snapshot(), 0, " (the system refused it)"));
}
// STRATA_CPU_CACHE_HIGH_WATER (bytes, with an optional K, M, G or T suffix), else half the
// physical memory.
size_t default_high_water() {
  if (const char* v = std::getenv("STRATA_CPU_CACHE_HIGH_WATER")) {
    char* end = nullptr;
    const double x = std::strtod(v, &end);
    size_t scale = 1;
    switch (end && *end ? *end : ' ') {
      case 'K': scale = size_t(1) << 10; break;
      case 'M': scale = size_t(1) << 20; break;
      case 'G': scale = size_t(1) << 30; break;
      case 'T': scale = size_t(1) << 40; break;
      default: break;
    }
    if (x > 0) return size_t(x * double(scale));
  }
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? size_t(pages) * size_t(page) / 2 : size_t(8) << 30;
}
}  // namespace

void* CpuAllocator::allocate(size_t bytes, MemoryCategory category) {
  if (bytes == 0) return nullptr;
  void* p = try_system_alloc(bytes);
  if (!p) throw_host_out_of_memory(bytes, category, stats_);
  stats_.on_alloc(category, int64_t(bytes));
  stats_.on_reserve(int64_t(bytes));
  return p;
}

void CpuAllocator::deallocate(void* ptr, size_t bytes, MemoryCategory category) {
  if (!ptr) return;
  std::free(ptr);
  stats_.on_free(category, int64_t(bytes));
  stats_.on_reserve(-int64_t(bytes));
}

// Blocks are rounded to a size class (64 B below 64 KiB, 4 KiB above) and cached per class on
// release; a request takes the smallest cached block of its class or up to 1/8 larger.
struct CachingCpuAllocator::Impl {
  Impl(size_t max, size_t mark) : max_cached(max), high_water(mark) {}
  std::mutex mu;
  std::multimap<size_t, void*> free_blocks;      // block size -> block
  std::unordered_map<void*, size_t> block_size;  // live and cached blocks
  size_t cached_bytes = 0;
  size_t held_bytes = 0;  // live and cached
  size_t max_cached;
  size_t high_water;

  static size_t size_class(size_t bytes) {
    return bytes < (64u << 10) ? round_up(bytes, 64) : round_up(bytes, 4096);
  }
};

CachingCpuAllocator::CachingCpuAllocator(size_t max_cached_bytes, size_t high_water_bytes)
    : impl_(std::make_unique<Impl>(max_cached_bytes,
                                   high_water_bytes > 0 ? high_water_bytes : default_high_water())) {}

CachingCpuAllocator::~CachingCpuAllocator() { empty_cache(); }

void* CachingCpuAllocator::allocate(size_t bytes, MemoryCategory category) {
  if (bytes == 0) return nullptr;
  if (bytes > SIZE_MAX / 2) throw_host_out_of_memory(bytes, category, stats_);  // its size class would wrap
  size_t want = Impl::size_class(bytes);
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lk(impl_->mu);
    auto it = impl_->free_blocks.lower_bound(want);
    if (it != impl_->free_blocks.end() && it->first <= want + want / 8) {
      p = it->second;
      impl_->cached_bytes -= it->first;
      impl_->free_blocks.erase(it);
    }
  }
  if (!p) {
    {
      std::lock_guard<std::mutex> lk(impl_->mu);
      release_for(want);
    }
    p = try_system_alloc(want);
    if (!p) {  // every cached block back to the system, then once more
      empty_cache();
      p = try_system_alloc(want);
    }
    if (!p) throw_host_out_of_memory(bytes, category, stats_);
    std::lock_guard<std::mutex> lk(impl_->mu);
    impl_->block_size[p] = want;
    impl_->held_bytes += want;
    stats_.on_reserve(int64_t(want));
  }
  stats_.on_alloc(category, int64_t(bytes));
  return p;
}

// Past the high-water mark, the smallest cached block that covers the excess goes back to the
// system, else the largest ones until it is covered.
void CachingCpuAllocator::release_for(size_t want) {
  Impl& m = *impl_;
  while (!m.free_blocks.empty() && m.held_bytes + want > m.high_water) {
    auto it = m.free_blocks.lower_bound(m.held_bytes + want - m.high_water);
    if (it == m.free_blocks.end()) it = std::prev(it);
    const size_t sz = it->first;
    m.block_size.erase(it->second);
    std::free(it->second);
    m.free_blocks.erase(it);
    m.cached_bytes -= sz;
    m.held_bytes -= sz;
    stats_.on_reserve(-int64_t(sz));
  }
}

void CachingCpuAllocator::deallocate(void* ptr, size_t bytes, MemoryCategory category) {
  if (!ptr) return;
  stats_.on_free(category, int64_t(bytes));
  std::lock_guard<std::mutex> lk(impl_->mu);
  size_t sz = impl_->block_size.at(ptr);
  if (impl_->cached_bytes + sz > impl_->max_cached) {
    impl_->block_size.erase(ptr);
    std::free(ptr);
    impl_->held_bytes -= sz;
    stats_.on_reserve(-int64_t(sz));
    return;
  }
  impl_->free_blocks.emplace(sz, ptr);
  impl_->cached_bytes += sz;
}

void CachingCpuAllocator::empty_cache() {
  std::lock_guard<std::mutex> lk(impl_->mu);
  for (auto& [sz, p] : impl_->free_blocks) {
    impl_->block_size.erase(p);
    std::free(p);
    impl_->held_bytes -= sz;
    stats_.on_reserve(-int64_t(sz));
  }
  impl_->free_blocks.clear();
  impl_->cached_bytes = 0;
}

Allocator& cpu_allocator() {
  // Leaked on purpose: storages may be released during static destruction.
  static Allocator* a = new CachingCpuAllocator();
  return *a;
}

}  // namespace strata
