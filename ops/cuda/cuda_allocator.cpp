// CudaCachingAllocator and CudaHostAllocator.
#include "ops/cuda/cuda_allocator.h"

#include <cuda_runtime_api.h>

#include <cassert>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>

#include "ops/cuda/cuda_check.h"
#include "strata/core/error.h"
#include "strata/core/out_of_memory.h"

namespace strata::gpu {

namespace {

size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// A piece of a cudaMalloc'd segment; neighbours in the same segment are linked so a freed
// block can merge with them.
struct Block {
  char* ptr;
  size_t size;
  bool small;
  bool allocated = false;
  Block* prev = nullptr;
  Block* next = nullptr;
};

struct BySizeThenAddress {
  bool operator()(const Block* a, const Block* b) const {
    if (a->size != b->size) return a->size < b->size;
    return std::less<const char*>()(a->ptr, b->ptr);
  }
};

using FreePool = std::set<Block*, BySizeThenAddress>;

}  // namespace

// ---------------------------------------------------------------------------------------
// Device memory

struct CudaCachingAllocator::Impl {
  int device;
  MemoryStats* stats;
  std::mutex mu;
  FreePool free_small, free_large;
  std::unordered_map<void*, Block*> live;

  FreePool& pool(bool small) { return small ? free_small : free_large; }

  static size_t round_size(size_t bytes) { return bytes < kMinBlock ? kMinBlock : round_up(bytes, kMinBlock); }
  static size_t segment_size(size_t size) {
    if (size <= kSmallRequest) return kSmallSegment;
    if (size < kLargeRequest) return kLargeSegment;
    return round_up(size, kLargeRounding);
  }

  // Returns wholly free segments to CUDA. Errors are reported only when `report` is set
  // (the destructor may run after the CUDA runtime has shut down).
  void release_free_segments_locked(bool report) {
    bool any = false;
    for (FreePool* p : {&free_small, &free_large})
      for (Block* b : *p) any = any || (!b->prev && !b->next);
    if (!any) return;
    DeviceGuard guard(device);
    for (FreePool* p : {&free_small, &free_large}) {
      for (auto it = p->begin(); it != p->end();) {
        Block* b = *it;
        if (b->prev || b->next) {
          ++it;
          continue;
        }
        cudaError_t e = cudaFree(b->ptr);
        if (e != cudaSuccess && report)
          throw_cuda_error(e, "cudaFree", detail::concat("CUDA caching allocator (cuda:", device, "): releasing a ",
                                                         b->size, "-byte segment"));
        stats->on_reserve(-int64_t(b->size));
        it = p->erase(it);
        delete b;
      }
    }
  }

  Block* new_segment(size_t size, bool small, size_t requested, MemoryCategory category) {
    const size_t seg = segment_size(size);
    DeviceGuard guard(device);
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, seg);
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      release_free_segments_locked(true);
      e = cudaMalloc(&p, seg);
    }
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      size_t free_bytes = 0, total_bytes = 0;
      (void)cudaMemGetInfo(&free_bytes, &total_bytes);
      (void)cudaGetLastError();
      throw OutOfMemoryError(out_of_memory_message(
          "cuda:" + std::to_string(device), requested, category, stats->snapshot(), total_bytes,
          detail::concat(" (a ", seg, "-byte segment; ", stats->snapshot().reserved, " bytes reserved, ",
                         free_bytes, " free on the device)")));
    }
    if (e != cudaSuccess) {
      MemorySnapshot s = stats->snapshot();
      throw_cuda_error(e, "cudaMalloc",
                       detail::concat("CUDA caching allocator: cannot allocate ", requested, " bytes (a ", seg,
                                      "-byte segment) on cuda:", device, " with ", s.total_current,
                                      " bytes in use and ", s.reserved, " bytes reserved"));
    }
    stats->on_reserve(int64_t(seg));
    return new Block{static_cast<char*>(p), seg, small};
  }

  // Cuts `b` down to `size` when the rest is worth keeping as a free block.
  void maybe_split(Block* b, size_t size) {
    const size_t rest = b->size - size;
    const bool split = b->small ? rest >= kMinBlock : rest > kSmallRequest;
    if (!split) return;
    Block* r = new Block{b->ptr + size, rest, b->small};
    r->prev = b;
    r->next = b->next;
    if (b->next) b->next->prev = r;
    b->next = r;
    b->size = size;
    pool(b->small).insert(r);
  }
};

CudaCachingAllocator::CudaCachingAllocator(int device) : impl_(std::make_unique<Impl>()) {
  impl_->device = device;
  impl_->stats = &stats_;
}

CudaCachingAllocator::~CudaCachingAllocator() {
  std::lock_guard<std::mutex> lk(impl_->mu);
  try {
    impl_->release_free_segments_locked(false);
  } catch (...) {
    // The runtime may already be gone at process exit; the OS reclaims the memory.
  }
}

Device CudaCachingAllocator::device() const { return Device(DeviceType::CUDA, impl_->device); }

void* CudaCachingAllocator::allocate(size_t bytes, MemoryCategory category) {
  if (bytes == 0) return nullptr;
  const size_t size = Impl::round_size(bytes);
  const bool small = size <= kSmallRequest;
  std::lock_guard<std::mutex> lk(impl_->mu);
  FreePool& pool = impl_->pool(small);
  Block key{nullptr, size, small};
  auto it = pool.lower_bound(&key);
  Block* b;
  if (it != pool.end()) {
    b = *it;
    pool.erase(it);
  } else {
    b = impl_->new_segment(size, small, bytes, category);
  }
  impl_->maybe_split(b, size);
  b->allocated = true;
  impl_->live.emplace(b->ptr, b);
  stats_.on_alloc(category, int64_t(bytes));
  return b->ptr;
}

void CudaCachingAllocator::deallocate(void* ptr, size_t bytes, MemoryCategory category) {
  if (!ptr) return;
  std::lock_guard<std::mutex> lk(impl_->mu);
  auto it = impl_->live.find(ptr);
  assert(it != impl_->live.end() && "CudaCachingAllocator: freeing a pointer it did not allocate");
  if (it == impl_->live.end()) return;
  stats_.on_free(category, int64_t(bytes));
  Block* b = it->second;
  impl_->live.erase(it);
  b->allocated = false;
  FreePool& pool = impl_->pool(b->small);
  if (b->prev && !b->prev->allocated) {
    Block* p = b->prev;
    pool.erase(p);
    p->size += b->size;
    p->next = b->next;
    if (b->next) b->next->prev = p;
    delete b;
    b = p;
  }
  if (b->next && !b->next->allocated) {
    Block* n = b->next;
    pool.erase(n);
    b->size += n->size;
    b->next = n->next;
    if (n->next) n->next->prev = b;
    delete n;
  }
  pool.insert(b);
}

void CudaCachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lk(impl_->mu);
  impl_->release_free_segments_locked(true);
}

// ---------------------------------------------------------------------------------------
// Pinned host memory

namespace {
constexpr size_t kHostMaxCached = size_t(4) << 30;

size_t host_size_class(size_t bytes) {
  return bytes <= (size_t(1) << 20) ? round_up(bytes, 512) : round_up(bytes, size_t(2) << 20);
}

struct HostBlock {
  size_t size = 0;
  cudaEvent_t ready = nullptr;  // recorded at free time; the block is reusable once complete
  int event_device = -1;
};
}  // namespace

struct CudaHostAllocator::Impl {
  std::mutex mu;
  std::multimap<size_t, void*> free_blocks;
  std::unordered_map<void*, HostBlock> blocks;  // live and cached
  size_t cached_bytes = 0;

  static bool is_ready(HostBlock& hb) {
    if (!hb.ready) return true;
    cudaError_t q = cudaEventQuery(hb.ready);
    if (q == cudaSuccess) return true;
    (void)cudaGetLastError();  // cudaErrorNotReady (or a sticky error) must not leak into later checks
    return q != cudaErrorNotReady;
  }

  // Marks the current work of the legacy default stream; on any failure the block counts as
  // ready (nothing can be waited for).
  static void record_free(HostBlock& hb) {
    int dev = -1;
    if (cudaGetDevice(&dev) != cudaSuccess) {
      (void)cudaGetLastError();
      return;
    }
    if (hb.ready && hb.event_device != dev) {
      (void)cudaEventDestroy(hb.ready);
      hb.ready = nullptr;
    }
    if (!hb.ready) {
      if (cudaEventCreateWithFlags(&hb.ready, cudaEventDisableTiming) != cudaSuccess) {
        (void)cudaGetLastError();
        hb.ready = nullptr;
        return;
      }
      hb.event_device = dev;
    }
    if (cudaEventRecord(hb.ready, cudaStreamLegacy) != cudaSuccess) {
      (void)cudaGetLastError();
      (void)cudaEventDestroy(hb.ready);
      hb.ready = nullptr;
    }
  }

  void release_locked(void* p, HostBlock& hb, MemoryStats& stats) {
    if (hb.ready) (void)cudaEventDestroy(hb.ready);
    (void)cudaFreeHost(p);  // synchronizes with in-flight copies
    stats.on_reserve(-int64_t(hb.size));
    blocks.erase(p);
  }
};

CudaHostAllocator::CudaHostAllocator() : impl_(std::make_unique<Impl>()) {}

CudaHostAllocator::~CudaHostAllocator() {
  try {
    empty_cache();
  } catch (...) {
  }
}

void* CudaHostAllocator::allocate(size_t bytes, MemoryCategory category) {
  if (bytes == 0) return nullptr;
  const size_t want = host_size_class(bytes);
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lk(impl_->mu);
    for (auto it = impl_->free_blocks.lower_bound(want);
         it != impl_->free_blocks.end() && it->first <= want + want / 8; ++it) {
      if (!Impl::is_ready(impl_->blocks.at(it->second))) continue;
      p = it->second;
      impl_->cached_bytes -= it->first;
      impl_->free_blocks.erase(it);
      break;
    }
  }
  if (!p) {
    cudaError_t e = cudaHostAlloc(&p, want, cudaHostAllocPortable);
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      empty_cache();
      e = cudaHostAlloc(&p, want, cudaHostAllocPortable);
    }
    if (e != cudaSuccess)
      throw_cuda_error(e, "cudaHostAlloc",
                       detail::concat("CUDA pinned host allocator: cannot allocate ", bytes, " bytes"));
    std::lock_guard<std::mutex> lk(impl_->mu);
    impl_->blocks[p] = HostBlock{want, nullptr, -1};
    stats_.on_reserve(int64_t(want));
  }
  stats_.on_alloc(category, int64_t(bytes));
  return p;
}

void CudaHostAllocator::deallocate(void* ptr, size_t bytes, MemoryCategory category) {
  if (!ptr) return;
  std::lock_guard<std::mutex> lk(impl_->mu);
  auto it = impl_->blocks.find(ptr);
  assert(it != impl_->blocks.end() && "CudaHostAllocator: freeing a pointer it did not allocate");
  if (it == impl_->blocks.end()) return;
  stats_.on_free(category, int64_t(bytes));
  HostBlock& hb = it->second;
  if (impl_->cached_bytes + hb.size > kHostMaxCached) {
    impl_->release_locked(ptr, hb, stats_);
    return;
  }
  Impl::record_free(hb);
  impl_->free_blocks.emplace(hb.size, ptr);
  impl_->cached_bytes += hb.size;
}

void CudaHostAllocator::empty_cache() {
  std::lock_guard<std::mutex> lk(impl_->mu);
  for (auto& [size, p] : impl_->free_blocks) impl_->release_locked(p, impl_->blocks.at(p), stats_);
  impl_->free_blocks.clear();
  impl_->cached_bytes = 0;
}

}  // namespace strata::gpu
