#include "strata/core/storage.h"

namespace strata {

namespace {
std::atomic<uint64_t> next_storage_id{1};
}

StorageImpl::StorageImpl(size_t nbytes, Device device, Allocator* allocator,
                         MemoryCategory category)
    : nbytes_(nbytes), device_(device), allocator_(allocator), category_(category),
      id_(next_storage_id.fetch_add(1)) {
  if (allocator_) data_ = allocator_->allocate(nbytes, category);
}

StorageImpl::StorageImpl(void* data, size_t nbytes, Device device,
                         std::function<void(void*)> deleter)
    : data_(data), nbytes_(nbytes), device_(device), category_(MemoryCategory::Temporary),
      deleter_(std::move(deleter)), id_(next_storage_id.fetch_add(1)) {}

uint64_t StorageImpl::next_id() { return next_storage_id.load(); }

StorageImpl::~StorageImpl() {
  if (allocator_) {
    allocator_->deallocate(data_, nbytes_, category_);
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
  if (allocator_) allocator_->retag(nbytes_, category_, c);
  category_ = c;
}

}  // namespace strata
