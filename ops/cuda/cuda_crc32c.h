// Launcher of cuda_crc32c.cu: the CRC-32C of each 4 KiB segment of a device buffer, in parallel.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace strata::gpu {

inline constexpr uint64_t kCrcSegmentBytes = 4096;

// segment_crcs[i] = crc32c(data + i * 4096, min(4096, bytes - i * 4096)) for every segment, on
// `stream` (device memory in and out).
void launch_crc32c_segments(const void* data, uint64_t bytes, uint32_t* segment_crcs, cudaStream_t stream);

}  // namespace strata::gpu
