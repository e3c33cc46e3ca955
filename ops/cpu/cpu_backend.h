// CpuBackend: the CPU implementation of the Backend interface (OpenMP + OpenBLAS + Eigen); the sim
// device derives from it (its kernels, its own memory).
#pragma once

#include "strata/core/backend.h"

namespace strata::cpu {

class CpuBackend : public Backend {
 public:
  DeviceType type() const override { return DeviceType::CPU; }
  Allocator& allocator(int) override { return cpu_allocator(); }
  Allocator& host_allocator() override { return cpu_allocator(); }
  std::unique_ptr<Stream> create_stream(int) override;
  std::unique_ptr<Event> create_event() override;
  void synchronize(int) override {}

#define STRATA_DENSE_KERNEL STRATA_KERNEL_OVERRIDE
#define STRATA_NN_KERNEL STRATA_KERNEL_OVERRIDE
#define STRATA_GRAPH_KERNEL STRATA_KERNEL_OVERRIDE
#include "strata/core/backend_kernels.def"
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
