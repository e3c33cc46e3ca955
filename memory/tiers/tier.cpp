#include "memory/tiers/tier.h"

#include <cstring>

namespace strata::memory {

namespace {

// A plain copy on the CPU; elsewhere the device's copy, waited for.
void copy_bytes(void* dst, const void* src, size_t n, TensorMemory mem) {
  if (mem.device.type == DeviceType::CPU) {
    std::memcpy(dst, src, n);
    return;
  }
  auto done = backend_for(mem.device).copy_bytes_async(dst, src, n, mem.device.index, mem.after);
  if (done) done->synchronize();
}

}  // namespace

void copy_to_host(void* host_dst, const void* src, size_t n, TensorMemory mem) {
  copy_bytes(host_dst, src, n, mem);
}

void copy_from_host(void* dst, const void* host_src, size_t n, TensorMemory mem) {
  copy_bytes(dst, host_src, n, mem);
}

}  // namespace strata::memory
