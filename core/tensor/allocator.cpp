#include "strata/core/allocator.h"

#include <cstdlib>
#include <map>
#include <mutex>
#include <unordered_map>

#include "strata/core/error.h"

namespace strata {

namespace {
size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// Blocks of 64 KiB and more start on a page: the tensor cache writes and reads them with
// O_DIRECT straight from and into tensor memory (no staging copy), which needs 4 KiB alignment.
void* system_alloc(size_t bytes) {
  const size_t align = bytes >= (size_t(64) << 10) ? size_t(4096) : kAllocAlignment;
  void* p = std::aligned_alloc(align, round_up(bytes, align));
  STRATA_CHECK(p != nullptr, Error, "CPU allocator: out of memory allocating ", bytes, " bytes");
  return p;
}
}  // namespace

void* CpuAllocator::allocate(size_t bytes, MemoryCategory category) {
  if (bytes == 0) return nullptr;
  void* p = system_alloc(bytes);
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
  explicit Impl(size_t max) : max_cached(max) {}
  std::mutex mu;
  std::multimap<size_t, void*> free_blocks;      // block size -> block
  std::unordered_map<void*, size_t> block_size;  // live and cached blocks
  size_t cached_bytes = 0;
  size_t max_cached;

  static size_t size_class(size_t bytes) {
    return bytes < (64u << 10) ? round_up(bytes, 64) : round_up(bytes, 4096);
  }
};

CachingCpuAllocator::CachingCpuAllocator(size_t max_cached_bytes)
    : impl_(std::make_unique<Impl>(max_cached_bytes)) {}

CachingCpuAllocator::~CachingCpuAllocator() { empty_cache(); }

void* CachingCpuAllocator::allocate(size_t bytes, MemoryCategory category) {
  if (bytes == 0) return nullptr;
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
    p = system_alloc(want);
    std::lock_guard<std::mutex> lk(impl_->mu);
    impl_->block_size[p] = want;
    stats_.on_reserve(int64_t(want));
  }
  stats_.on_alloc(category, int64_t(bytes));
  return p;
}

void CachingCpuAllocator::deallocate(void* ptr, size_t bytes, MemoryCategory category) {
  if (!ptr) return;
  stats_.on_free(category, int64_t(bytes));
  std::lock_guard<std::mutex> lk(impl_->mu);
  size_t sz = impl_->block_size.at(ptr);
  if (impl_->cached_bytes + sz > impl_->max_cached) {
    impl_->block_size.erase(ptr);
    std::free(ptr);
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
