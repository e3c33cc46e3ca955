#include "ops/sim/sim_allocator.h"

#include <cstdlib>
#include <string>

#include "strata/core/byte_size.h"
#include "strata/core/error.h"
#include "strata/core/out_of_memory.h"

namespace strata::simulated {

namespace {
size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// Blocks of 64 KiB and more start on a page, as the CPU allocator's do: the tensor cache's NVMe
// tier reads and writes them with O_DIRECT.
size_t alignment_for(size_t bytes) { return bytes >= (size_t(64) << 10) ? size_t(4096) : kAllocAlignment; }
}  // namespace

SimAllocator::SimAllocator(int device, uint64_t capacity) : device_(device), capacity_(capacity) {}

SimAllocator::~SimAllocator() {
  std::lock_guard<std::mutex> lk(mu_);
  release_cached_locked();
}

Device SimAllocator::device() const { return Device(DeviceType::Sim, device_); }

void SimAllocator::set_capacity(uint64_t bytes) {
  std::lock_guard<std::mutex> lk(mu_);
  capacity_ = bytes;
}

uint64_t SimAllocator::capacity() const {
  std::lock_guard<std::mutex> lk(mu_);
  return capacity_;
}

void* SimAllocator::allocate(size_t bytes, MemoryCategory category) {
  if (bytes == 0) return nullptr;
  const size_t size = round_up(bytes, kRounding);
  std::lock_guard<std::mutex> lk(mu_);
  void* p = nullptr;
  auto it = free_.find(size);
  if (it != free_.end() && !it->second.empty()) {
    p = it->second.back();
    it->second.pop_back();
    cached_ -= size;
  } else {
    if (reserved_ + size > capacity_) release_cached_locked();
    if (reserved_ + size > capacity_) throw OutOfMemoryError(out_of_memory_message(bytes, category));
    const size_t align = alignment_for(size);
    p = std::aligned_alloc(align, round_up(size, align));
    if (p == nullptr)
      throw OutOfMemoryError(out_of_memory_message(bytes, category) + " (the host itself is out of memory)");
    reserved_ += size;
    stats_.on_reserve(int64_t(size));
  }
  stats_.on_alloc(category, int64_t(bytes));
  return p;
}

void SimAllocator::deallocate(void* ptr, size_t bytes, MemoryCategory category) {
  if (!ptr) return;
  const size_t size = round_up(bytes, kRounding);
  std::lock_guard<std::mutex> lk(mu_);
  free_[size].push_back(ptr);
  cached_ += size;
  stats_.on_free(category, int64_t(bytes));
}

void SimAllocator::empty_cache() {
  std::lock_guard<std::mutex> lk(mu_);
  release_cached_locked();
}

void SimAllocator::release_cached_locked() {
  for (auto& [size, blocks] : free_) {
    for (void* p : blocks) std::free(p);
    reserved_ -= size * blocks.size();
    stats_.on_reserve(-int64_t(size * blocks.size()));
  }
  free_.clear();
  cached_ = 0;
}

std::string SimAllocator::out_of_memory_message(size_t bytes, MemoryCategory category) const {
  return strata::out_of_memory_message("sim:" + std::to_string(device_), bytes, category, stats_.snapshot(),
                                       capacity_);
}

}  // namespace strata::simulated
