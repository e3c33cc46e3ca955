// Launchers of cuda_feature_gather.cu: feature rows in page-locked host memory gathered by id
// straight into device memory by a kernel that reads the host memory itself (zero copy).
// No CUDA header here, so host code and tests can call them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "strata/core/tensor.h"

namespace strata::gpu {

// Page-locks [host, host + bytes) and maps it into every device's address space
// (cudaHostRegisterPortable | cudaHostRegisterMapped) so that kernels can read it; DeviceError
// naming the range when CUDA refuses. Undone by unregister_device_readable(host).
void register_device_readable(void* host, size_t bytes);
void unregister_device_readable(void* host);

// How the lanes of a team map onto a row's words (ops/common/aligned_row_reads.h).
enum class RowAlignment {
  kAligned,  // shifted so that every step after the first reads whole 128-byte lines
  kNaive,    // lane l reads word l of each step, wherever the row starts (the reference)
};

// out[i] = the `row_bytes` bytes at host_rows + ids[i] * row_bytes, for i in [0, M): the device
// reads page-locked, device-mapped host memory (register_device_readable, or cudaHostAlloc) over
// the bus, with no staging copy. out: contiguous with M * row_bytes bytes on a CUDA device; ids:
// contiguous i64 [M] on the same device, each in [0, num_rows) (else IndexError naming the id;
// the check costs a device-to-host sync, skipped with check_ids = false when the caller has
// checked the ids). Host memory the device cannot read is a DeviceError. Runs on the device's
// compute stream.
void gather_host_rows(const Tensor& out, const void* host_rows, int64_t num_rows, int64_t row_bytes,
                      const Tensor& ids, RowAlignment alignment = RowAlignment::kAligned,
                      bool check_ids = true);

}  // namespace strata::gpu
