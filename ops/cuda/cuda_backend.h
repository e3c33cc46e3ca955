// CudaBackend: the CUDA implementation of the Backend interface (custom kernels built from
// ops/common functors, cuBLASLt GEMM, caching device allocator, pinned host memory).
//
// Construction makes no CUDA call (the backend is registered at library load time, also on
// machines without a GPU); devices, handles and memory are set up on first use. All kernels
// and library calls run on the legacy default stream of the tensors' device, so backend calls
// are ordered among themselves and with the blocking streams create_stream() returns;
// copies to the host return once the data has arrived.
//
// Namespace strata::gpu, not strata::cuda: that name is the Device factory in device.h.
#pragma once

#include <cublasLt.h>
#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ops/cuda/cuda_allocator.h"
#include "strata/core/backend.h"

namespace strata::gpu {

// The stream every backend kernel and library call is issued on: the NULL stream, which is
// the legacy default stream (ops/cuda must not be compiled with --default-stream per-thread).
inline cudaStream_t compute_stream() { return nullptr; }

// Per-device state. Contexts exist for every device once the count is known; their CUDA
// resources (memory, library handles) are created on first use.
struct DeviceContext {
  explicit DeviceContext(int index) : index(index), allocator(index) {}
  int index;
  CudaCachingAllocator allocator;
  std::mutex mu;  // guards the lazily created handles below
  cublasLtHandle_t lt = nullptr;
  cublasHandle_t blas = nullptr;
  void* workspace = nullptr;  // cuBLASLt workspace, from `allocator`
  size_t workspace_bytes = 0;
  cudaStream_t copy_stream = nullptr;  // the tensor cache's transfers (cuda_transfer.cpp)
};

class CudaBackend final : public Backend {
 public:
  CudaBackend();
  ~CudaBackend() override;

  DeviceType type() const override { return DeviceType::CUDA; }
  int device_count() const override;
  uint64_t memory_capacity(int device_index) override;
  Allocator& allocator(int device_index) override;
  Allocator& host_allocator() override;
  std::unique_ptr<Stream> create_stream(int device_index) override;
  std::unique_ptr<Event> create_event() override;
  void synchronize(int device_index) override;
  void register_host_memory(void* host, size_t bytes) override;
  void unregister_host_memory(void* host) override;
  void gather_host_rows(const Tensor& out, const void* host_rows, int64_t num_rows, int64_t row_bytes,
                        const Tensor& ids) override;
  std::unique_ptr<Event> record_compute(int device_index) override;
  std::unique_ptr<Event> copy_bytes_async(void* dst, const void* src, size_t bytes, int device_index,
                                          Event* after) override;
  uint32_t crc32c_of(const void* ptr, size_t bytes, int device_index) override;  // cuda_crc32c.cu

  // Kernel files: cuda_copy_kernels.cu (copy, fill, arange), cuda_cudnn.cpp (convolution, batch norm),
  // cuda_norm_pool.cu (pooling), one .cu file per family for the rest.
#define STRATA_DENSE_KERNEL STRATA_KERNEL_OVERRIDE
#define STRATA_NN_KERNEL STRATA_KERNEL_OVERRIDE
#define STRATA_GRAPH_KERNEL STRATA_KERNEL_OVERRIDE
#define STRATA_FUSED_KERNEL STRATA_KERNEL_OVERRIDE
#include "strata/core/backend_kernels.def"

  // The context of device `index`; throws DeviceError when there is no such device.
  DeviceContext& context(int index);
  // An uninitialized contiguous tensor on cuda:`device` from this backend's allocator.
  Tensor empty(const Shape& shape, DType dtype, int device);

 private:
  // A GEMM operand cuBLAS can read: `m`, or a contiguous copy when neither dim has unit stride.
  Tensor gemm_operand(const Tensor& m, int device);
  void copy_same_device(const Tensor& dst, const Tensor& src);
  void copy_host_to_device(const Tensor& dst, const Tensor& src);
  void copy_device_to_host(const Tensor& dst, const Tensor& src);
  void copy_peer(const Tensor& dst, const Tensor& src);
  void init_devices() const;

  // Filled once by init_devices(); DeviceContext construction makes no CUDA call.
  mutable std::once_flag devices_once_;
  mutable int device_count_ = 0;
  mutable std::string device_error_;  // why device_count() is 0, for error messages
  // Per device: why this build cannot run there (its compute capability is not among
  // STRATA_CUDA_ARCHITECTURES), or empty.
  mutable std::vector<std::string> arch_errors_;
  mutable std::vector<std::unique_ptr<DeviceContext>> contexts_;
  CudaHostAllocator host_allocator_;
};

// The factory ops/dispatch.cpp registers (when STRATA_HAVE_CUDA).
std::unique_ptr<Backend> make_cuda_backend();

// ---- helpers shared by the CUDA source files ----

// Throws DeviceError unless every defined tensor lives on cuda:`device` (returns that index;
// `device` < 0 takes the first tensor's).
int check_on_device(const char* op, std::initializer_list<const Tensor*> ts, int device = -1);

// A zeroed device pair {flag, value} that kernels set on bad input (an index out of range);
// read() waits for the kernels before it. Costs one device-to-host sync per checked op.
class DeviceErrorSlot {
 public:
  DeviceErrorSlot(CudaBackend& backend, int device);
  int64_t* ptr() const { return static_cast<int64_t*>(slot_.data_ptr()); }
  // True when a kernel set the flag; `value` receives the offending value.
  bool read(int64_t* value) const;

 private:
  Tensor slot_;
};

// Kernel launchers, one per .cu file; the caller has checked shapes and made the device
// current. Defined in cuda_copy_kernels.cu.
void launch_convert(const Tensor& dst, const Tensor& src);  // same device, any dtypes/strides
void launch_fill(const Tensor& dst, double value);

}  // namespace strata::gpu
