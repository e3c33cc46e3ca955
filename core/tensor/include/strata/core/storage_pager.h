// StoragePager: keeps a storage's bytes away from its device between uses (weights and gradients
// placed in host memory or on NVMe) and brings them back when they are touched.
//
// A paged storage that is not resident has no device memory (or has memory a load is filling).
// StorageImpl::data() asks its pager to bring it back, so every op reads correct bytes whatever the
// pager's prefetching got right; a pager counts such demand loads. Code that reads a paged tensor
// once and is done with it (an optimizer's update, gradient clipping, a checkpoint's writer) hands
// it back with release_paged(), so the device holds one such tensor at a time.
#pragma once

#include "strata/core/storage.h"

namespace strata {

class Tensor;

class StoragePager {
 public:
  virtual ~StoragePager() = default;
  // Makes `s` resident on its device: waits for a load under way, or loads it now.
  virtual void fault_in(StorageImpl& s) = 0;
  // Done with `s` for now: its device memory goes, after its bytes are written to where the pager
  // keeps them if they changed since they were last there.
  virtual void page_out(StorageImpl& s) = 0;
  // Says that `s` is touched soon: a load can start now.
  virtual void prefetch(StorageImpl& s) {}
};

// Hands `t`'s storage back to its pager (a no-op for an undefined or unpaged tensor).
void release_paged(const Tensor& t);
// Starts bringing `t`'s storage back ahead of a touch (a no-op for an undefined or unpaged tensor).
void prefetch_paged(const Tensor& t);

}  // namespace strata
