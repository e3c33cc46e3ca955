// Zero-copy gather of feature rows from page-locked host memory (PyTorch-Direct, Wu, arXiv 2412.04747,
// chapter 4): a team of lanes per row reads the row over the bus in words of up to 16 bytes, its
// lanes shifted so that each step reads whole 128-byte lines of host memory
// (ops/common/aligned_row_reads.h), and writes it to its place in the output.
#include <cuda_runtime.h>

#include "ops/common/aligned_row_reads.h"
#include "ops/cuda/cuda_backend.h"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_feature_gather.h"
#include "ops/cuda/cuda_strided.h"

namespace strata::gpu {

namespace {

template <int W>
struct Word;
template <>
struct Word<1> {
  using type = uint8_t;
};
template <>
struct Word<2> {
  using type = uint16_t;
};
template <>
struct Word<4> {
  using type = uint32_t;
};
template <>
struct Word<8> {
  using type = uint2;
};
template <>
struct Word<16> {
  using type = uint4;
};

__global__ void check_row_ids_kernel(const int64_t* ids, int64_t m, int64_t num_rows, int64_t* bad) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < m;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t v = ids[i];
    if (v < 0 || v >= num_rows) {
      bad[0] = 1;
      bad[1] = v;
    }
  }
}

// Teams of `team` lanes (a power of two dividing blockDim.x) each take rows i, i + teams, ...
template <int W, bool Aligned>
__global__ void gather_host_rows_kernel(char* out, const char* rows, const int64_t* ids, int64_t m,
                                        int64_t row_bytes, int team) {
  using T = typename Word<W>::type;
  const int lane = int(threadIdx.x) % team;
  const int64_t per_block = blockDim.x / team;
  const int64_t teams = int64_t(gridDim.x) * per_block;
  for (int64_t i = int64_t(blockIdx.x) * per_block + threadIdx.x / team; i < m; i += teams) {
    const char* src = rows + ids[i] * row_bytes;
    const common::RowReadPlan p = Aligned ? common::aligned_row_plan(uint64_t(src), row_bytes, W, team)
                                          : common::naive_row_plan(row_bytes, W, team);
    const T* s = reinterpret_cast<const T*>(src);
    T* d = reinterpret_cast<T*>(out + i * row_bytes);
    for (int64_t j = 0; j < p.steps; ++j) {
      const int64_t k = common::row_read_word(p, lane, j);
      if (k >= 0) d[k] = s[k];
    }
  }
}

template <int W>
void launch_words(char* out, const char* rows, const int64_t* ids, int64_t m, int64_t row_bytes,
                  bool aligned) {
  const int team = common::row_team_threads(W, row_bytes);
  const int per_block = kThreads / team;
  const unsigned grid = grid_for(m, per_block);
  if (aligned)
    gather_host_rows_kernel<W, true>
        <<<grid, kThreads, 0, compute_stream()>>>(out, rows, ids, m, row_bytes, team);
  else
    gather_host_rows_kernel<W, false>
        <<<grid, kThreads, 0, compute_stream()>>>(out, rows, ids, m, row_bytes, team);
}

}  // namespace

void register_device_readable(void* host, size_t bytes) {
  if (bytes == 0) return;
  STRATA_CUDA_CHECK(cudaHostRegister(host, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped),
                    "page-locking and mapping ", bytes, " bytes of host memory at ", host,
                    " for device reads");
}

void unregister_device_readable(void* host) {
  cudaError_t e = cudaHostUnregister(host);
  if (e != cudaSuccess) (void)cudaGetLastError();  // never registered: nothing to undo
}

void gather_host_rows(const Tensor& out, const void* host_rows, int64_t num_rows, int64_t row_bytes,
                      const Tensor& ids, RowAlignment alignment, bool check_ids) {
  const char* op = "gather_host_rows";
  const int dev = check_on_device(op, {&out, &ids});
  STRATA_CHECK(out.is_contiguous() && ids.is_contiguous(), ValueError, op,
               ": expects contiguous tensors, got ", out.str(), " and ", ids.str());
  STRATA_CHECK(ids.dtype() == DType::i64 && ids.dim() == 1, TypeError, op, ": ids must be i64 [M], got ",
               ids.str());
  STRATA_CHECK(row_bytes > 0 && num_rows >= 0, ValueError, op, ": rows of ", row_bytes, " bytes, ", num_rows,
               " of them");
  const int64_t m = ids.numel();
  STRATA_CHECK(uint64_t(out.nbytes()) == uint64_t(m) * uint64_t(row_bytes), ShapeError, op, ": ", out.str(),
               " does not hold ", m, " rows of ", row_bytes, " bytes");
  if (m == 0) return;
  DeviceGuard guard(dev);
  void* rows = nullptr;
  STRATA_CUDA_CHECK(cudaHostGetDevicePointer(&rows, const_cast<void*>(host_rows), 0), op, ": host memory at ",
                    host_rows, " is not page-locked and mapped for cuda:", dev);
  const auto* idx = static_cast<const int64_t*>(ids.data_ptr());
  if (check_ids) {
    Tensor slot = Tensor::empty({2}, DType::i64, out.device());
    STRATA_CUDA_CHECK(cudaMemsetAsync(slot.data_ptr(), 0, 2 * sizeof(int64_t), compute_stream()), op,
                      ": clearing the id check on cuda:", dev);
    check_row_ids_kernel<<<grid_for(m), kThreads, 0, compute_stream()>>>(
        idx, m, num_rows, static_cast<int64_t*>(slot.data_ptr()));
    STRATA_CUDA_CHECK_LAUNCH(op, ": checking ", ids.str());
    int64_t host[2] = {0, 0};
    STRATA_CUDA_CHECK(cudaMemcpy(host, slot.data_ptr(), sizeof(host), cudaMemcpyDeviceToHost), op,
                      ": reading the id check on cuda:", dev);
    STRATA_CHECK(host[0] == 0, IndexError, op, ": node id ", host[1], " out of range [0, ", num_rows, ")");
  }
  char* y = static_cast<char*>(out.data_ptr());
  const char* x = static_cast<const char*>(rows);
  const bool aligned = alignment == RowAlignment::kAligned;
  switch (common::row_word_bytes(uint64_t(x), uint64_t(y), row_bytes)) {
    case 16: launch_words<16>(y, x, idx, m, row_bytes, aligned); break;
    case 8: launch_words<8>(y, x, idx, m, row_bytes, aligned); break;
    case 4: launch_words<4>(y, x, idx, m, row_bytes, aligned); break;
    case 2: launch_words<2>(y, x, idx, m, row_bytes, aligned); break;
    default: launch_words<1>(y, x, idx, m, row_bytes, aligned); break;
  }
  STRATA_CUDA_CHECK_LAUNCH(op, ": ", m, " rows of ", row_bytes, " bytes into ", out.str());
}

void CudaBackend::gather_host_rows(const Tensor& out, const void* host_rows, int64_t num_rows,
                                   int64_t row_bytes, const Tensor& ids) {
  gpu::gather_host_rows(out, host_rows, num_rows, row_bytes, ids, RowAlignment::kAligned,
                        /*check_ids=*/false);
}

}  // namespace strata::gpu
