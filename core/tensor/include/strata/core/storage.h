// StorageImpl: a refcounted, category-tagged buffer on one device, with a version counter.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "strata/core/allocator.h"
#include "strata/core/device.h"
#include "strata/core/memory_stats.h"

namespace strata {

class StoragePager;

class StorageImpl {
 public:
  // Allocates `nbytes` from `allocator` (nullptr for Meta: shape only, no data).
  StorageImpl(size_t nbytes, Device device, Allocator* allocator, MemoryCategory category);
  // Wraps memory owned elsewhere; `deleter` (may be empty) runs when the storage dies.
  StorageImpl(void* data, size_t nbytes, Device device, std::function<void(void*)> deleter);
  ~StorageImpl();
  StorageImpl(const StorageImpl&) = delete;
  StorageImpl& operator=(const StorageImpl&) = delete;

  // The bytes, on the device. A paged storage away from its device is brought back first (by its
  // pager, which may wait for a load under way): strata/core/storage_pager.h.
  void* data() const {
    if (!resident_.load(std::memory_order_acquire)) fault_in();
    return data_;
  }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  // Process-unique id: the tensor cache keys saved tensors by storage, not by tensor.
  uint64_t id() const { return id_; }
  // Ids handed out so far: storages made after this call get larger ids (the planner's tracer
  // tells which op created a storage from this watermark taken after each op).
  static uint64_t next_id();

  // Bumped by every in-place write; SavedTensor compares it at unpack time.
  uint64_t version() const { return version_->load(std::memory_order_relaxed); }
  void bump_version() { version_->fetch_add(1, std::memory_order_relaxed); }
  // Shared with SavedTensor, which checks it without keeping the data alive.
  const std::shared_ptr<std::atomic<uint64_t>>& version_counter() const { return version_; }

  // Set on the storage of every nn parameter: its views (a transposed weight inside an op) are
  // parameters too, and the tensor cache never moves them.
  bool holds_parameter() const { return holds_parameter_; }
  void set_holds_parameter(bool p) { holds_parameter_ = p; }

  // ---- paging: model state placed off its device between uses (strata/core/storage_pager.h) ----
  // Only the pager calls these, under its own lock.
  StoragePager* pager() const { return pager_; }
  // Hands the storage to `pager` (nullptr: back to unmanaged, which needs it resident). Throws
  // ValueError for memory owned elsewhere (no allocator to give it back to) or a second pager.
  void set_pager(StoragePager* pager);
  bool resident() const { return resident_.load(std::memory_order_acquire); }
  // The device memory without a fault: the pager's own copies in and out.
  void* device_bytes() const { return data_; }
  // Gives the device memory back to the allocator; the storage is not resident until
  // allocate_device_bytes() and mark_resident().
  void release_device_bytes();
  void allocate_device_bytes();
  void mark_resident(bool resident) { resident_.store(resident, std::memory_order_release); }

  MemoryCategory category() const { return category_; }
  // Counts SavedTensors holding this storage: while any does, a Temporary buffer is accounted
  // as SavedActivation (docs/design.md, "Invariants": memory accounting); the last release re-tags it back.
  void acquire_saved();
  void release_saved();
  // Re-tags the bytes in the owning allocator's stats (no-op for external memory).
  void set_category(MemoryCategory c);

 private:
  void fault_in() const;

  void* data_ = nullptr;
  size_t nbytes_ = 0;
  StoragePager* pager_ = nullptr;
  std::atomic<bool> resident_{true};
  // Whether nbytes_ are allocated from allocator_ (and counted in its stats): false while paged out.
  // Not data_ != nullptr: the Meta device's allocator counts bytes it never hands out.
  bool holds_bytes_ = false;
  Device device_;
  Allocator* allocator_ = nullptr;
  MemoryCategory category_;
  std::function<void(void*)> deleter_;
  int saved_refs_ = 0;
  bool retagged_for_save_ = false;
  bool holds_parameter_ = false;
  uint64_t id_;
  std::shared_ptr<std::atomic<uint64_t>> version_ = std::make_shared<std::atomic<uint64_t>>(0);
};

using Storage = std::shared_ptr<StorageImpl>;

}  // namespace strata
