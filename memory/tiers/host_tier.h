// HostTier: the pinned host pool, one mapping allocated at creation and carved into extents.
// On the CPU backend it is plain memory in the same RAM (accounted as MemoryCategory::HostPool
// while extents are in use), reached through the same code path a GPU build uses.
#pragma once

#include <cstdint>

#include "memory/tiers/tier.h"

namespace strata::memory {

class HostTier final : public Tier {
 public:
  explicit HostTier(uint64_t capacity);
  ~HostTier();
  HostTier(const HostTier&) = delete;
  HostTier& operator=(const HostTier&) = delete;

  // An extent (nullopt when the pool is full), accounted as HostPool bytes.
  std::optional<uint64_t> allocate(uint64_t bytes) override;
  void free(uint64_t offset, uint64_t bytes) override;
  void* at(uint64_t offset) const { return static_cast<char*>(base_) + offset; }
  ExtentAllocator& extents() override { return extents_; }
  const char* name() const override { return "host pool"; }
  std::string describe() const override { return "the host pool"; }
  // Copies (no checksums: the bytes never leave memory); a failed device copy is the status.
  IoStatus write(const void* src, uint64_t bytes, uint64_t offset, TensorMemory mem,
                 std::vector<uint32_t>& crcs, const std::atomic<bool>* cancel) override;
  IoStatus read(void* dst, uint64_t bytes, uint64_t offset, TensorMemory mem,
                const std::vector<uint32_t>& crcs) override;
  // Page-locks the whole pool for `backend`'s transfers (a GPU's), once; undone on destruction.
  void pin_for(Backend& backend);

 private:
  void* base_ = nullptr;
  ExtentAllocator extents_;
  Backend* pinned_for_ = nullptr;
};

}  // namespace strata::memory
