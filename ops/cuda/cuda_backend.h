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

  void copy(const Tensor& dst, const Tensor& src) override;
  void fill(const Tensor& dst, double value) override;
  void arange(const Tensor& dst, double start, double step) override;  // cuda_copy_kernels.cu
  void elementwise(EwOp op, const Tensor& out, std::span<const Tensor> inputs,
                   const EwParams& params) override;
  void reduce_rows(ReduceOp op, const Tensor& out, const Tensor& in, int64_t reduce_numel) override;
  void bmm(const Tensor& out, const Tensor& a, const Tensor& b, double alpha, double beta) override;
  void bmm_bias(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias) override;
  void softmax(const Tensor& out, const Tensor& in, bool log) override;
  void softmax_backward(const Tensor& grad_in, const Tensor& grad_out, const Tensor& out,
                        bool log) override;
  void layer_norm(const Tensor& out, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                  const Tensor& weight, const Tensor& bias, double eps) override;
  void layer_norm_backward(const Tensor& grad_x, const Tensor& grad_weight,
                           const Tensor& grad_bias, const Tensor& grad_out, const Tensor& x,
                           const Tensor& mean, const Tensor& rstd, const Tensor& weight) override;
  void cross_entropy(const Tensor& loss, const Tensor& lse, const Tensor& logits,
                     const Tensor& target, int64_t ignore_index) override;
  void cross_entropy_backward(const Tensor& grad_logits, const Tensor& grad_loss,
                              const Tensor& logits, const Tensor& lse, const Tensor& target,
                              int64_t ignore_index) override;
  void cross_entropy_with_grad(const Tensor& loss, const Tensor& lse, const Tensor& grad_logits,
                               const Tensor& grad_loss, const Tensor& logits, const Tensor& target,
                               int64_t ignore_index) override;
  void index_select(const Tensor& out, const Tensor& in, int64_t dim, const Tensor& index) override;
  void index_add(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src) override;
  void gather(const Tensor& out, const Tensor& in, int64_t dim, const Tensor& index) override;
  void scatter_add(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src) override;
  void attention(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                 const Tensor& mask, bool causal, double scale) override;
  void attention_backward(const Tensor& grad_q, const Tensor& grad_k, const Tensor& grad_v,
                          const Tensor& grad_out, const Tensor& q, const Tensor& k, const Tensor& v,
                          const Tensor& out, const Tensor& lse, const Tensor& mask, bool causal,
                          double scale) override;
  // cuda_cudnn.cpp (cuDNN) and cuda_norm_pool.cu (pooling)
  void conv2d(const Tensor& out, const Tensor& x, const Tensor& weight, const Tensor& bias,
              const Conv2dParams& p) override;
  void conv2d_backward(const Tensor& grad_x, const Tensor& grad_weight, const Tensor& grad_bias,
                       const Tensor& grad_out, const Tensor& x, const Tensor& weight,
                       const Conv2dParams& p) override;
  void batch_norm(const Tensor& out, const Tensor& mean, const Tensor& invstd, const Tensor& x,
                  const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                  const Tensor& running_var, bool training, double momentum, double eps) override;
  void batch_norm_backward(const Tensor& grad_x, const Tensor& grad_weight, const Tensor& grad_bias,
                           const Tensor& grad_out, const Tensor& x, const Tensor& weight,
                           const Tensor& mean, const Tensor& invstd, bool training) override;
  void pool2d(const Tensor& out, const Tensor& indices, const Tensor& x, const Pool2dParams& p) override;
  void pool2d_backward(const Tensor& grad_x, const Tensor& grad_out, const Tensor& indices,
                       const Pool2dParams& p) override;
  void random_uniform(const Tensor& out, RngState state, double low, double high) override;
  void random_normal(const Tensor& out, RngState state, double mean, double std) override;
  void adamw_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                    const AdamWUpdate& u) override;
  void spmm(const Tensor& out, const Tensor& offsets, const Tensor& indices, const Tensor& weights,
            const Tensor& weight_index, const Tensor& x) override;
  void spmm_extreme(const Tensor& out, const Tensor& arg, const Tensor& offsets, const Tensor& indices,
                    const Tensor& weight_index, const Tensor& x, bool minimum) override;
  void spmm_extreme_backward(const Tensor& grad_x, const Tensor& offsets, const Tensor& positions,
                             const Tensor& rows, const Tensor& arg, const Tensor& grad_out) override;
  void sddmm_dot(const Tensor& out, const Tensor& a_index, const Tensor& a, const Tensor& b_index,
                 const Tensor& b) override;
  void segment_softmax(const Tensor& out, const Tensor& offsets, const Tensor& scores) override;
  void segment_softmax_backward(const Tensor& grad_scores, const Tensor& offsets, const Tensor& grad_out,
                                const Tensor& out) override;
  void segment_mm(const Tensor& out, const Tensor& x, const Tensor& gather, const Tensor& weight,
                  const Tensor& offsets, const Tensor& scatter, const Tensor& scale,
                  bool accumulate) override;
  void segment_mm_weight_grad(const Tensor& grad_weight, const Tensor& x, const Tensor& gather,
                              const Tensor& grad_y, const Tensor& scatter, const Tensor& scale,
                              const Tensor& offsets, bool accumulate) override;

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
