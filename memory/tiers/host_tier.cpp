#include "memory/tiers/host_tier.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "strata/core/allocator.h"
#include "strata/core/error.h"

namespace strata::memory {

HostTier::HostTier(uint64_t capacity) : extents_(capacity, 4096) {
  if (extents_.capacity() == 0) return;
  // Pages are committed as they are first written, so an unused pool costs no RSS.
  base_ = ::mmap(nullptr, extents_.capacity(), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  STRATA_CHECK(base_ != MAP_FAILED, IoError, "tensor cache: cannot map a host pool of ",
               extents_.capacity(), " bytes: ", std::strerror(errno));
}

HostTier::~HostTier() {
  if (pinned_for_) pinned_for_->unregister_host_memory(base_);
  if (base_ && base_ != MAP_FAILED) ::munmap(base_, extents_.capacity());
}

void HostTier::pin_for(Backend& backend) {
  if (pinned_for_ || !base_) return;
  backend.register_host_memory(base_, extents_.capacity());
  pinned_for_ = &backend;
}

std::optional<uint64_t> HostTier::allocate(uint64_t bytes) {
  auto off = extents_.allocate(bytes);
  if (off) cpu_allocator().stats().on_alloc(MemoryCategory::HostPool, int64_t(extents_.rounded(bytes)));
  return off;
}

void HostTier::free(uint64_t offset, uint64_t bytes) {
  extents_.free(offset, bytes);
  cpu_allocator().stats().on_free(MemoryCategory::HostPool, int64_t(extents_.rounded(bytes)));
}

IoStatus HostTier::write(const void* src, uint64_t bytes, uint64_t offset, TensorMemory mem,
                         std::vector<uint32_t>&, const std::atomic<bool>*) {
  IoStatus st;
  try {
    copy_to_host(at(offset), src, bytes, mem);
  } catch (const std::exception& e) {
    st.ok = false;
    st.what = e.what();
    st.file_offset = offset;
  }
  return st;
}

IoStatus HostTier::read(void* dst, uint64_t bytes, uint64_t offset, TensorMemory mem,
                        const std::vector<uint32_t>&) {
  IoStatus st;
  try {
    copy_from_host(dst, at(offset), bytes, mem);
  } catch (const std::exception& e) {
    st.ok = false;
    st.what = e.what();
    st.file_offset = offset;
  }
  return st;
}

}  // namespace strata::memory
