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

  // dst = src, any strides; dtypes may differ (converted); both on this backend's device,
  // or one of them on the CPU (host <-> device copy).
  virtual void copy(const Tensor& dst, const Tensor& src) = 0;
  virtual void fill(const Tensor& dst, double value) = 0;
  // dst[i] = start + i * step, computed in double and converted as fill converts; dst is a
  // contiguous 1-D tensor on this backend's device. The default writes the values on the host
  // and copies them over.
  virtual void arange(const Tensor& dst, double start, double step);
  // Elementwise op; `inputs` have out's shape (broadcast as stride-0 views).
  virtual void elementwise(EwOp op, const Tensor& out, std::span<const Tensor> inputs,
                           const EwParams& params = {}) = 0;
  // Reduces the trailing `reduce_numel` elements of each row of a contiguous `in` viewed as
  // [out.numel(), reduce_numel]; `out` is contiguous. Deterministic: fixed summation order
  // regardless of threads or alignment.
  virtual void reduce_rows(ReduceOp op, const Tensor& out, const Tensor& in,
                           int64_t reduce_numel) = 0;
  // out[b] = alpha * op(a[b]) @ op(b[b]) + beta * out[b] on 3-D tensors [batch, rows, cols];
  // a and b may have batch stride 0; each matrix has unit stride in one of its two dims.
  // Mixed precision (autocast): the CPU also takes bf16 a and b with an f32 out.
  virtual void bmm(const Tensor& out, const Tensor& a, const Tensor& b, double alpha,
                   double beta) = 0;
  // out[b] = op(a[b]) @ op(b[b]) + bias, the bias [cols] (out's dtype) added to every row:
  // linear's forward. The default copies the bias into out and runs bmm with beta = 1; a backend
  // may add it in the GEMM's epilogue instead (one pass over out, not three).
  virtual void bmm_bias(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias);

  // Row-wise kernels over contiguous [rows, cols] tensors.
  virtual void softmax(const Tensor& out, const Tensor& in, bool log) = 0;
  virtual void softmax_backward(const Tensor& grad_in, const Tensor& grad_out,
                                const Tensor& out, bool log) = 0;
  // mean, rstd: [rows] f32/f64; weight, bias: [cols] or undefined.
  virtual void layer_norm(const Tensor& out, const Tensor& mean, const Tensor& rstd,
                          const Tensor& x, const Tensor& weight, const Tensor& bias,
                          double eps) = 0;
  // grad_weight / grad_bias may be undefined (not needed).
  virtual void layer_norm_backward(const Tensor& grad_x, const Tensor& grad_weight,
                                   const Tensor& grad_bias, const Tensor& grad_out,
                                   const Tensor& x, const Tensor& mean, const Tensor& rstd,
                                   const Tensor& weight) = 0;
  // loss[r] = lse[r] - logits[r, target[r]] (0 where target == ignore_index); lse saved.
  virtual void cross_entropy(const Tensor& loss, const Tensor& lse, const Tensor& logits,
                             const Tensor& target, int64_t ignore_index) = 0;
  // grad_logits[r] = grad_loss[r] * (softmax(logits[r]) - onehot(target[r])). CUDA also writes a
  // bf16/f16 grad_logits for f32 logits (each element rounded once, as a cast would).
  virtual void cross_entropy_backward(const Tensor& grad_logits, const Tensor& grad_loss,
                                      const Tensor& logits, const Tensor& lse,
                                      const Tensor& target, int64_t ignore_index) = 0;
  // Both at once, for a loss whose gradient is wanted right away (the fused LM head): loss and
  // lse as cross_entropy, then grad_logits as cross_entropy_backward with that lse. grad_logits
  // may be logits itself (overwritten in place). The default calls the two; CUDA reads each row
  // from memory once for both.
  virtual void cross_entropy_with_grad(const Tensor& loss, const Tensor& lse, const Tensor& grad_logits,
                                       const Tensor& grad_loss, const Tensor& logits, const Tensor& target,
                                       int64_t ignore_index);

  // Indexing, on contiguous tensors viewed as [outer, dim, inner]; index is i64.
  virtual void index_select(const Tensor& out, const Tensor& in, int64_t dim,
                            const Tensor& index) = 0;
  // out.index_select(dim, index) += src (deterministic: sequential over index).
  virtual void index_add(const Tensor& out, int64_t dim, const Tensor& index,
                         const Tensor& src) = 0;
  virtual void gather(const Tensor& out, const Tensor& in, int64_t dim,
                      const Tensor& index) = 0;
  virtual void scatter_add(const Tensor& out, int64_t dim, const Tensor& index,
                           const Tensor& src) = 0;

  // Fused attention on 4-D tensors q [B, H, T, D], k [B, H, S, D], v [B, H, S, Dv]
  // (contiguous); mask: undefined or an additive f32/f64 [B, H, T, S] view (stride 0 where
  // broadcast); causal: key s attends query t only when s <= t. Writes out [B, H, T, Dv] and the
  // row log-sum-exp lse [B, H, T] that backward needs; out (and backward's out and grad_out) may
  // be any view with unit stride along Dv: the ops lay it out [B, T, H, Dv], so that merging the
  // heads is a view. bf16/f16 q, k, v (where a backend takes them: CUDA) write out in their dtype
  // and keep lse and the additive mask in f32. Default: not implemented.
  virtual void attention(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k,
                         const Tensor& v, const Tensor& mask, bool causal, double scale);
  virtual void attention_backward(const Tensor& grad_q, const Tensor& grad_k, const Tensor& grad_v,
                                  const Tensor& grad_out, const Tensor& q, const Tensor& k,
                                  const Tensor& v, const Tensor& out, const Tensor& lse,
                                  const Tensor& mask, bool causal, double scale);

  // Convolution, batch norm and pooling on contiguous NCHW tensors of one floating dtype
  // (f32 or f64). Default: not implemented.
  // out = conv2d(x, weight) + bias (bias undefined or [K]).
  virtual void conv2d(const Tensor& out, const Tensor& x, const Tensor& weight, const Tensor& bias,
                      const Conv2dParams& p);
  // The gradients wanted (the others undefined): grad_x [N, C, H, W], grad_weight like weight,
  // grad_bias [K]; all are overwritten.
  virtual void conv2d_backward(const Tensor& grad_x, const Tensor& grad_weight, const Tensor& grad_bias,
                               const Tensor& grad_out, const Tensor& x, const Tensor& weight,
                               const Conv2dParams& p);
  // Batch norm over (N, H, W) per channel C. training: normalizes with the batch statistics,
  // writes mean and invstd = 1 / sqrt(var + eps) (biased var) [C], and, when running_mean /
  // running_var are defined, blends them in with `momentum` (running_var takes the unbiased
  // var), as torch.nn.functional.batch_norm. Not training: normalizes with the running
  // statistics and writes them, as mean and invstd, for backward. weight / bias may be
  // undefined (1 and 0).
  virtual void batch_norm(const Tensor& out, const Tensor& mean, const Tensor& invstd, const Tensor& x,
                          const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                          const Tensor& running_var, bool training, double momentum, double eps);
  // grad_x (training: through the batch statistics; else the affine map only), grad_weight,
  // grad_bias [C]: any may be undefined.
  virtual void batch_norm_backward(const Tensor& grad_x, const Tensor& grad_weight, const Tensor& grad_bias,
                                   const Tensor& grad_out, const Tensor& x, const Tensor& weight,
                                   const Tensor& mean, const Tensor& invstd, bool training);
  // out [N, C, P, Q]; Max also writes indices (i64, h * W + w within the input plane, as torch).
  virtual void pool2d(const Tensor& out, const Tensor& indices, const Tensor& x, const Pool2dParams& p);
  // grad_x [N, C, H, W] (overwritten) from grad_out [N, C, P, Q] (and Max's indices).
  virtual void pool2d_backward(const Tensor& grad_x, const Tensor& grad_out, const Tensor& indices,
                               const Pool2dParams& p);

  // ---- Message passing over a compressed graph (ops/graph_ops.h). Deterministic: each output row
  // or edge is summed in a fixed order, no atomics. Default: not implemented. ----
  // For every row r of out [R, F]: out[r, f] = sum over k in [offsets[r], offsets[r + 1]) of
  // w(k, h) * x[indices[k], f], with w(k, h) = weights[weight_index[k], h] (weight_index undefined:
  // weights[k, h]; weights undefined: 1). weights is [E] (one per edge) or [E, H] (one per edge and
  // head; head h owns the columns [h F/H, (h + 1) F/H)). offsets i64 [R + 1]; indices and
  // weight_index i32 or i64; x [N, F], out and weights of x's floating dtype; all contiguous.
  virtual void spmm(const Tensor& out, const Tensor& offsets, const Tensor& indices, const Tensor& weights,
                    const Tensor& weight_index, const Tensor& x);
  // The extreme instead of the sum: out[r, f] = max (minimum: min) over k in row r's range of
  // x[indices[k], f], and arg[r, f] (i64 [R, F]) = the first k reaching it, given as
  // weight_index[k] (undefined: k); an empty row writes 0 and arg -1.
  virtual void spmm_extreme(const Tensor& out, const Tensor& arg, const Tensor& offsets,
                            const Tensor& indices, const Tensor& weight_index, const Tensor& x, bool minimum);
  // spmm_extreme's gradient, gathered through the transpose: for every row r of grad_x [N, F],
  // grad_x[r, f] = sum over k in [offsets[r], offsets[r + 1]) with arg[rows[k], f] == positions[k] of
  // grad_out[rows[k], f]. offsets i64 [N + 1]; positions, rows i32 or i64 [K]; arg i64 [R, F].
  virtual void spmm_extreme_backward(const Tensor& grad_x, const Tensor& offsets, const Tensor& positions,
                                     const Tensor& rows, const Tensor& arg, const Tensor& grad_out);
  // For every edge k and head h: out[k, h] = sum over f of head h's columns of
  // a[a_index[k], f] * b[b_index[k], f]; out [E] (one head) or [E, H], a [Na, F], b [Nb, F] of one
  // floating dtype, contiguous.
  virtual void sddmm_dot(const Tensor& out, const Tensor& a_index, const Tensor& a, const Tensor& b_index,
                         const Tensor& b);

  // Softmax over segments of rows: for every segment s, rows [offsets[s], offsets[s + 1]) of
  // scores [E, H] are normalized per column h (an empty segment writes nothing). offsets i64 [S + 1]
  // covering [0, E); scores and out contiguous f32/f64.
  virtual void segment_softmax(const Tensor& out, const Tensor& offsets, const Tensor& scores);
  // grad_scores = out * (grad_out - sum over the segment of grad_out * out), per column.
  virtual void segment_softmax_backward(const Tensor& grad_scores, const Tensor& offsets,
                                        const Tensor& grad_out, const Tensor& out);

  // ---- Relational GEMMs (ops/relational_ops.h): rows cut into segments, each segment multiplied
  // by its own matrix, all in one call. Default: not implemented. ----
  // Segment s holds the rows i in [offsets[s], offsets[s + 1]) (offsets i64 [S + 1] on the CPU,
  // from 0 to M). Row i computes y_i = scale[i] * x[gather[i]] @ weight[s] (gather undefined: x[i];
  // scale undefined: 1) and stores it to out[scatter[i]] (scatter undefined: out[i]), or adds it
  // there with `accumulate`. Rows sent to one output row more than once add up in increasing i
  // (the CPU: the same bits for any thread count; CUDA: atomics); without accumulate a scattered-to
  // row must be written once. Output rows nobody writes keep their values. x [*, K] and out [*, N]
  // contiguous; weight [S, K, N] with unit stride along N or along K (a transposed view); gather,
  // scatter i32 or i64 [M]; scale [M]; x, weight, out, scale of one floating dtype.
  virtual void segment_mm(const Tensor& out, const Tensor& x, const Tensor& gather, const Tensor& weight,
                          const Tensor& offsets, const Tensor& scatter, const Tensor& scale, bool accumulate);
  // The weights' gradient: grad_weight[s] (+)= sum over segment s's rows i of
  // scale[i] * x[gather[i]]^T grad_y[scatter[i]], grad_weight [S, K, N] contiguous; summed in a
  // fixed order on the CPU.
  virtual void segment_mm_weight_grad(const Tensor& grad_weight, const Tensor& x, const Tensor& gather,
                                      const Tensor& grad_y, const Tensor& scatter, const Tensor& scale,
                                      const Tensor& offsets, bool accumulate);

  // ---- Optimizer updates of parameters in this device's memory (host memory is updated in place
  // by the optimizers' own loops) on contiguous tensors of one floating dtype. The defaults compose
  // elementwise kernels; a backend may fuse them. ----
  virtual void adamw_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                            const Tensor& exp_avg_sq, const AdamWUpdate& u);
  // `momentum_buffer` is undefined without momentum.
  virtual void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer,
                          const SgdUpdate& u);
  // sum(|t|^norm_type) over t's elements in double (norm_type infinite: max |t|): a gradient norm's part.
  virtual double norm_power_sum(const Tensor& t, double norm_type);

  // Philox random numbers for element i of `out` from `state` (same on every backend).
  virtual void random_uniform(const Tensor& out, RngState state, double low, double high) = 0;
  virtual void random_normal(const Tensor& out, RngState state, double mean, double std) = 0;
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
