// Backend: the kernel interface each device implements (CPU, CUDA, Sim, Meta), and its registry.
//
// Ops (ops/) do the shape rules, dtype promotion, autograd and cost accounting, then call a
// Backend with outputs already allocated and inputs already broadcast (stride-0 views) and
// cast to the compute dtype. Kernels accept arbitrary strides unless a method says otherwise.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "strata/core/allocator.h"
#include "strata/core/device.h"
#include "strata/core/generator.h"
#include "strata/core/stream.h"
#include "strata/core/tensor.h"

// A backend's class declares the kernels of a group of backend_kernels.def it implements with
//   #define STRATA_DENSE_KERNEL STRATA_KERNEL_OVERRIDE
//   #include "strata/core/backend_kernels.def"
#define STRATA_KERNEL_OVERRIDE(ret, name, params, args) ret name params override;
// A kernel's args without their parentheses: f(STRATA_KERNEL_ARGS args).
#define STRATA_KERNEL_ARGS(...) __VA_ARGS__

namespace strata {

// Elementwise ops; the math of each lives once in ops/common as a host+device functor.
enum class EwOp : uint16_t {
  // unary: out = f(a)        (params: p0, p1 where noted)
  Copy, Neg, Exp, Log, Sqrt, Rsqrt, Tanh, Sigmoid, Relu, GeluErf, GeluTanh, Silu, Abs,
  Sign, Reciprocal, Square, Sin, Cos,
  AddScalar,   // a + p0
  MulScalar,   // a * p0
  PowScalar,   // a ^ p0
  RpowScalar,  // p0 ^ a
  Clamp,       // min(max(a, p0), p1)
  // binary: out = f(a, b)
  Add, Sub, Mul, Div, Pow, Maximum, Minimum,
  Eq, Ne, Lt, Le, Gt, Ge,  // out is bool
  // backward helpers: out = grad * f'(x) with a = grad, b = x (or y where noted)
  TanhBackward,      // b = tanh output
  SigmoidBackward,   // b = sigmoid output
  ReluBackward,      // b = input
  GeluErfBackward, GeluTanhBackward, SiluBackward,
  ClampBackward,     // b = input, params p0, p1
  // ternary: out = cond ? a : b, with a = cond (bool), b, c
  Where,
  kCount
};
const char* ew_op_name(EwOp op);
int ew_op_arity(EwOp op);

struct EwParams {
  double p0 = 0.0;
  double p1 = 0.0;
};

enum class ReduceOp : uint8_t { Sum, Mean, Max, Min, ArgMax, ArgMin };

// 2-D convolution geometry, as torch.nn.functional.conv2d: x [N, C, H, W], weight
// [K, C / groups, R, S], out [N, K, P, Q] with P = (H + 2 pad_h - dil_h (R - 1) - 1) / stride_h + 1.
struct Conv2dParams {
  int64_t stride[2] = {1, 1};
  int64_t padding[2] = {0, 0};
  int64_t dilation[2] = {1, 1};
  int64_t groups = 1;
};

// 2-D pooling over NCHW planes. Max and Avg use kernel/stride/padding (and dilation for Max);
// AdaptiveAvg takes its windows from the input and output sizes alone (torch's
// adaptive_avg_pool2d: rows [floor(i H / P), ceil((i + 1) H / P)) for output row i).
enum class PoolKind : uint8_t { Max, Avg, AdaptiveAvg };
struct Pool2dParams {
  PoolKind kind = PoolKind::Max;
  int64_t kernel[2] = {1, 1};
  int64_t stride[2] = {1, 1};
  int64_t padding[2] = {0, 0};
  int64_t dilation[2] = {1, 1};
  bool count_include_pad = true;  // Avg: divide by the whole window, padding included
};

// One parameter's AdamW update (torch.optim.AdamW, single-tensor): `step` counts this update (1 on
// the first).
struct AdamWUpdate {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 1e-2;
  double step = 1;
};
// One parameter's SGD update (torch.optim.SGD): the momentum buffer starts as the first gradient.
struct SgdUpdate {
  double lr = 1e-3, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false;
  bool first_step = false;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual DeviceType type() const = 0;
  // Devices of this type present at run time (0 for CUDA on a machine without a GPU).
  virtual int device_count() const { return 1; }
  // Bytes of memory device `device_index` has in all (the CPU: physical RAM; sim: its capacity).
  virtual uint64_t memory_capacity(int device_index = 0);
  virtual Allocator& allocator(int device_index = 0) = 0;
  // Allocator for host memory this device can copy from asynchronously (pinned on CUDA).
  virtual Allocator& host_allocator() = 0;
  virtual std::unique_ptr<Stream> create_stream(int device_index = 0) = 0;
  virtual std::unique_ptr<Event> create_event() = 0;
  virtual void synchronize(int device_index = 0) = 0;

  // ---- Raw transfers between this device's memory and host memory (the tensor cache) ----
  // Page-locks [host, host + bytes) so copies to and from it run asynchronously at full speed
  // (CUDA: cudaHostRegister); done once, at set-up. The default does nothing.
  virtual void register_host_memory(void* host, size_t bytes) {}
  virtual void unregister_host_memory(void* host) {}
  // out[i] = the row_bytes bytes at host_rows + ids[i] * row_bytes: rows of host memory the device
  // reads itself (page-locked by register_host_memory), gathered into this device's memory by the
  // device (CUDA: a zero-copy kernel whose reads start on 128-byte lines,
  // ops/cuda/cuda_feature_gather.cu). out: contiguous, ids.numel() * row_bytes bytes; ids:
  // contiguous i64 [M] on this device, each in [0, num_rows) (checked by the caller). Ordered on the
  // compute stream. The default copies the rows on the calling thread, for devices whose memory the
  // host addresses (CPU, sim).
  virtual void gather_host_rows(const Tensor& out, const void* host_rows, int64_t num_rows, int64_t row_bytes,
                                const Tensor& ids);
  // An event recorded now on `device`'s compute stream, for a transfer to wait for; null when
  // the device computes synchronously (CPU: everything issued has finished).
  virtual std::unique_ptr<Event> record_compute(int device_index) { return nullptr; }
  // Copies `bytes` from `src` to `dst` (host and device memory either way, or both this device's) on a
  // copy stream of the backend's own, once `after` (may be null) has completed, overlapping the
  // compute stream. Returns the event that completes with the copy; neither range may be reused
  // before then. Null when the copy is already done (the default: a memcpy on the caller's
  // thread, which is what the CPU does).
  virtual std::unique_ptr<Event> copy_bytes_async(void* dst, const void* src, size_t bytes,
                                                  int device_index, Event* after);
  // The CRC-32C (crc32c() of core) of `bytes` at `ptr` in `device`'s memory, computed where the
  // data lives: the tensor cache checksums chunks that go from a GPU straight to NVMe
  // (GPUDirect Storage). Waits for the device's copy work. The default reads host memory.
  virtual uint32_t crc32c_of(const void* ptr, size_t bytes, int device_index);

  // ---- The kernels: listed once, with their contracts, in strata/core/backend_kernels.def ----
#define STRATA_DENSE_KERNEL(ret, name, params, args) virtual ret name params = 0;
#define STRATA_NN_KERNEL(ret, name, params, args) virtual ret name params;
#define STRATA_GRAPH_KERNEL(ret, name, params, args) virtual ret name params;
#define STRATA_FUSED_KERNEL(ret, name, params, args) virtual ret name params;
#define STRATA_COMPOSED_KERNEL(ret, name, params, args) virtual ret name params;
#include "strata/core/backend_kernels.def"
};

// Process-wide registry (the hardware is process-wide): one backend per device type.
class BackendRegistry {
 public:
  static BackendRegistry& instance();
  void add(DeviceType type, std::unique_ptr<Backend> backend);
  // Tests: puts a stand-in in place and returns what was there (to be put back the same way).
  std::unique_ptr<Backend> replace(DeviceType type, std::unique_ptr<Backend> backend);
  bool has(DeviceType type) const;
  // Throws DeviceError when no backend for `type` was compiled or registered.
  Backend& get(DeviceType type) const;

 private:
  std::unique_ptr<Backend> backends_[kNumDeviceTypes];
};

inline Backend& backend_for(Device d) { return BackendRegistry::instance().get(d.type); }

// The allocator tensors on `d` come from (the CPU's caching allocator for kCPU).
inline Allocator& allocator_for(Device d) {
  return d.is_cpu() ? cpu_allocator() : backend_for(d).allocator(d.index);
}

}  // namespace strata
