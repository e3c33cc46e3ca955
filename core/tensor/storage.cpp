#include "strata/core/storage.h"

#include "strata/core/error.h"
#include "strata/core/storage_pager.h"
#include "strata/core/tensor.h"

namespace strata {

namespace {
std::atomic<uint64_t> next_storage_id{1};
}

StorageImpl::StorageImpl(size_t nbytes, Device device, Allocator* allocator,
                         MemoryCategory category)
    : nbytes_(nbytes), device_(device), allocator_(allocator), category_(category),
      id_(next_storage_id.fetch_add(1)) {
  if (allocator_) {
    data_ = allocator_->allocate(nbytes, category);
    holds_bytes_ = true;
  }
}

StorageImpl::StorageImpl(void* data, size_t nbytes, Device device,
                         std::function<void(void*)> deleter)
    : data_(data), nbytes_(nbytes), device_(device), category_(MemoryCategory::Temporary),
      deleter_(std::move(deleter)), id_(next_storage_id.fetch_add(1)) {}

uint64_t StorageImpl::next_id() { return next_storage_id.load(); }

StorageImpl::~StorageImpl() {
  if (allocator_) {
    if (holds_bytes_) allocator_->deallocate(data_, nbytes_, category_);
  } else if (deleter_) {
    deleter_(data_);
  }
}

void StorageImpl::acquire_saved() {
  if (saved_refs_++ == 0 && category_ == MemoryCategory::Temporary) {
    set_category(MemoryCategory::SavedActivation);
    retagged_for_save_ = true;
  }
}

void StorageImpl::release_saved() {
  if (saved_refs_ > 0 && --saved_refs_ == 0 && retagged_for_save_) {
    if (category_ == MemoryCategory::SavedActivation) set_category(MemoryCategory::Temporary);
    retagged_for_save_ = false;
  }
}

void StorageImpl::set_category(MemoryCategory c) {
  if (holds_bytes_) allocator_->retag(nbytes_, category_, c);
  category_ = c;
}

}  // namespace strata

namespace strata {

void StorageImpl::fault_in() const {
  STRATA_CHECK(pager_ != nullptr, DeviceError, "storage ", id_, " (", nbytes_,
               " bytes) is away from its device and has no pager to bring it back");
  pager_->fault_in(const_cast<StorageImpl&>(*this));
}

void StorageImpl::set_pager(StoragePager* pager) {
  STRATA_CHECK(pager == nullptr || allocator_ != nullptr, ValueError, "storage ", id_, " (", nbytes_,
               " bytes on ", device_.str(), ") wraps memory owned elsewhere and cannot be paged");
  STRATA_CHECK(pager == nullptr || pager_ == nullptr || pager_ == pager, ValueError, "storage ", id_,
               " is paged already");
  STRATA_CHECK(pager != nullptr || resident(), ValueError, "storage ", id_,
               " is away from its device: bring it back before it leaves its pager");
  pager_ = pager;
}

void StorageImpl::release_device_bytes() {
  STRATA_CHECK(allocator_ != nullptr, ValueError, "storage ", id_, " has no allocator to give its memory to");
  mark_resident(false);
  if (holds_bytes_) allocator_->deallocate(data_, nbytes_, category_);
  holds_bytes_ = false;
  data_ = nullptr;
}

void release_paged(const Tensor& t) {
  if (!t.defined()) return;
  const Storage& s = t.storage();
  if (s && s->pager() != nullptr) s->pager()->page_out(*s);
}

void prefetch_paged(const Tensor& t) {
  if (!t.defined()) return;
  const Storage& s = t.storage();
  if (s && s->pager() != nullptr && !s->resident()) s->pager()->prefetch(*s);
}

void StorageImpl::allocate_device_bytes() {
  if (holds_bytes_ || allocator_ == nullptr) return;
  data_ = allocator_->allocate(nbytes_, category_);
  holds_bytes_ = true;
}

}  // namespace strata
