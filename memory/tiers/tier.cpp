#include "memory/tiers/tier.h"

#include <cstring>

namespace strata::memory {

void copy_to_host(void* host_dst, const void* src, size_t n, TensorMemory mem) {
  if (mem.device.type == DeviceType::CPU) {
    std::memcpy(host_dst, src, n);
    return;
  }
  auto done = backend_for(mem.device).copy_bytes_async(host_dst, src, n, mem.device.index, mem.after);
  if (done) done->synchronize();
}

void copy_from_host(void* dst, const void* host_src, size_t n, TensorMemory mem) {
  if (mem.device.type == DeviceType::CPU) {
    std::memcpy(dst, host_src, n);
    return;
  }
  auto done = backend_for(mem.device).copy_bytes_async(dst, host_src, n, mem.device.index, mem.after);
  if (done) done->synchronize();
}

}  // namespace strata::memory
