// CpuBackend: the CPU implementation of the Backend interface (OpenMP + OpenBLAS + Eigen).
#pragma once

#include "strata/core/backend.h"

namespace strata::cpu {

class CpuBackend final : public Backend {
 public:
  DeviceType type() const override { return DeviceType::CPU; }
  Allocator& allocator(int) override { return cpu_allocator(); }
  Allocator& host_allocator() override { return cpu_allocator(); }
  std::unique_ptr<Stream> create_stream(int) override;
  std::unique_ptr<Event> create_event() override;
  void synchronize(int) override {}

  void copy(const Tensor& dst, const Tensor& src) override;
  void fill(const Tensor& dst, double value) override;
  void elementwise(EwOp op, const Tensor& out, std::span<const Tensor> inputs,
                   const EwParams& params) override;
  void reduce_rows(ReduceOp op, const Tensor& out, const Tensor& in, int64_t reduce_numel) override;
  void bmm(const Tensor& out, const Tensor& a, const Tensor& b, double alpha, double beta) override;
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
};

// Helpers shared by the CPU kernel files.
// A contiguous f32/f64 copy of `t` in dtype `dt` (returns `t` itself when it already is one).
Tensor contiguous_as(const Tensor& t, DType dt);
// C[M, N] (f32, row stride ldc) = alpha * op(A) @ op(B) + beta * C with bf16 A, B (oneDNN; only
// when built with it). ta / tb: the operand is stored column-major with leading dim lda / ldb.
void gemm_bf16_f32(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const void* A, int64_t lda,
                   const void* B, int64_t ldb, float beta, float* C, int64_t ldc);
// The direct convolution kernels (any dtype the backend computes in, any geometry): the oracle
// the oneDNN path is checked against, and the path for f64 and shapes oneDNN refuses.
void conv2d_direct(const Tensor& out, const Tensor& x, const Tensor& weight, const Tensor& bias,
                   const Conv2dParams& p);
void conv2d_backward_direct(const Tensor& grad_x, const Tensor& grad_weight, const Tensor& grad_bias,
                            const Tensor& grad_out, const Tensor& x, const Tensor& weight, const Conv2dParams& p);
// oneDNN convolution (f32 only; built with oneDNN only). Return false when oneDNN has no
// implementation for the problem (the caller falls back to the direct kernels).
bool conv2d_dnnl(const Tensor& out, const Tensor& x, const Tensor& weight, const Tensor& bias,
                 const Conv2dParams& p);
bool conv2d_backward_dnnl(const Tensor& grad_x, const Tensor& grad_weight, const Tensor& grad_bias,
                          const Tensor& grad_out, const Tensor& x, const Tensor& weight, const Conv2dParams& p);
// Checks that every defined tensor of an NCHW kernel (conv, batch norm, pooling) is contiguous
// with dtype `dt`, and that `dt` is f32 or f64; TypeError naming `op` otherwise.
void check_nchw_kernel_inputs(const char* op, std::initializer_list<const Tensor*> ts, DType dt);
// Checks that `t` is a contiguous tensor of a dtype the row kernels support.
void check_row_kernel_input(const Tensor& t, const char* kernel);

}  // namespace strata::cpu
