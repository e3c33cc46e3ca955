// CRC-32C on the GPU for the tensor cache's direct (GPUDirect Storage) path: one thread per
// 4 KiB segment, table-driven byte by byte (the bit-at-a-time definition's byte table, in shared
// memory); the host folds the segments' CRCs into the chunk's (crc32c_from_segments, in
// CudaBackend::crc32c_of), so the result equals core's crc32c() of the same bytes.
#include <cuda_runtime_api.h>

#include "ops/cuda/cuda_crc32c.h"
#include "ops/cuda/cuda_check.h"

namespace strata::gpu {

namespace {

constexpr uint32_t kPoly = 0x82F63B78u;  // CRC-32C, reflected

__global__ void crc32c_segments_kernel(const unsigned char* data, uint64_t bytes, uint32_t* out) {
  __shared__ uint32_t table[256];
  for (uint32_t i = threadIdx.x; i < 256; i += blockDim.x) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ kPoly : c >> 1;
    table[i] = c;
  }
  __syncthreads();
  const uint64_t seg = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint64_t begin = seg * kCrcSegmentBytes;
  if (begin >= bytes) return;
  const uint64_t end = begin + kCrcSegmentBytes < bytes ? begin + kCrcSegmentBytes : bytes;
  uint32_t c = 0xFFFFFFFFu;
  for (uint64_t i = begin; i < end; ++i) c = table[(c ^ data[i]) & 0xFFu] ^ (c >> 8);
  out[seg] = ~c;
}

}  // namespace

void launch_crc32c_segments(const void* data, uint64_t bytes, uint32_t* segment_crcs, cudaStream_t stream) {
  if (bytes == 0) return;
  const uint64_t segments = (bytes + kCrcSegmentBytes - 1) / kCrcSegmentBytes;
  const unsigned threads = 128;
  const unsigned blocks = unsigned((segments + threads - 1) / threads);
  crc32c_segments_kernel<<<blocks, threads, 0, stream>>>(static_cast<const unsigned char*>(data), bytes, segment_crcs);
  STRATA_CUDA_CHECK(cudaGetLastError(), "crc32c_segments_kernel over ", bytes, " bytes");
}

}  // namespace strata::gpu
