// HostTier: the pinned host pool, one mapping allocated at creation and carved into extents.
// On the CPU backend it is plain memory in the same RAM (accounted as MemoryCategory::HostPool
// while extents are in use), reached through the same code path a GPU build uses.
#pragma once

#include <cstdint>

#include "memory/tiers/extent_allocator.h"
#include "strata/core/backend.h"

namespace strata::memory {

class HostTier {
 public:
  explicit HostTier(uint64_t capacity);
  ~HostTier();
  HostTier(const HostTier&) = delete;
  HostTier& operator=(const HostTier&) = delete;

  // An extent (nullopt when the pool is full), accounted as HostPool bytes.
  std::optional<uint64_t> allocate(uint64_t bytes);
  void free(uint64_t offset, uint64_t bytes);
  void* at(uint64_t offset) const { return static_cast<char*>(base_) + offset; }
  ExtentAllocator& extents() { return extents_; }
  // Page-locks the whole pool for `backend`'s transfers (a GPU's), once; undone on destruction.
  void pin_for(Backend& backend);

 private:
  void* base_ = nullptr;
  ExtentAllocator extents_;
  Backend* pinned_for_ = nullptr;
};

}  // namespace strata::memory
