// CudaBackend::bmm: strided-batched GEMM through cuBLASLt (f32 with f32 compute, TF32 only
// inside ops::AllowTf32Guard; bf16/f16 with f32 compute, into a bf16/f16 result or, as autocast's
// GEMMs and the CPU backend's, an f32 one), and cublasGemmStridedBatchedEx for
// f64, batch-broadcast operands and shapes cuBLASLt has no algorithm for. Row-major products are computed as
// the column-major transposed product: out^T = b^T a^T. bmm_bias adds linear's bias in cuBLASLt's
// epilogue.
#include <cublas_v2.h>
#include <cublasLt.h>

#include <cstdint>
#include <utility>

#include "ops/cuda/cuda_backend.h"
#include "ops/cuda/cuda_check.h"
#include "strata/ops/matmul_precision.h"

namespace strata::gpu {

namespace {

constexpr size_t kLtWorkspaceBytes = size_t(32) << 20;  // cuBLAS's recommendation for Hopper

// Same rule as the CPU's blas_layout: a matrix whose last or first dim has unit stride.
struct MatrixLayout {
  bool transposed;  // unit stride along rows: stored column-major
  int64_t ld;
};

bool gemm_layout(const Tensor& m, MatrixLayout* layout) {
  const int64_t r = m.size(1), c = m.size(2), sr = m.stride(1), sc = m.stride(2);
  if ((sc == 1 || c == 1) && sr >= std::max<int64_t>(1, c)) {
    *layout = {false, sr};
    return true;
  }
  if ((sr == 1 || r == 1) && sc >= std::max<int64_t>(1, r)) {
    *layout = {true, sc};
    return true;
  }
  return false;
}

cudaDataType_t cuda_dtype(DType dt) {
  switch (dt) {
    case DType::f64: return CUDA_R_64F;
    case DType::bf16: return CUDA_R_16BF;
    case DType::f16: return CUDA_R_16F;
    default: return CUDA_R_32F;
  }
}

// f64 multiplies in f64; everything else accumulates in f32, f32 operands on TF32 Tensor Cores
// only inside ops::AllowTf32Guard. `dt` is the operands' type.
cublasComputeType_t compute_type(DType dt) {
  if (dt == DType::f64) return CUBLAS_COMPUTE_64F;
  return dt == DType::f32 && ops::tf32_allowed() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

uint32_t pointer_alignment(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  uint32_t al = 256;
  while (al > 1 && a % al != 0) al >>= 1;
  return al;
}

// Owners of cuBLASLt descriptors.
struct LtMatmulDesc {
  cublasLtMatmulDesc_t d = nullptr;
  ~LtMatmulDesc() {
    if (d) cublasLtMatmulDescDestroy(d);
  }
};
struct LtLayout {
  cublasLtMatrixLayout_t d = nullptr;
  ~LtLayout() {
    if (d) cublasLtMatrixLayoutDestroy(d);
  }
};
struct LtPreference {
  cublasLtMatmulPreference_t d = nullptr;
  ~LtPreference() {
    if (d) cublasLtMatmulPreferenceDestroy(d);
  }
};

// One column-major strided-batched problem: C (m x n) = alpha op(A) op(B) + beta C.
struct GemmProblem {
  cublasOperation_t ta, tb;
  int64_t m, n, k;
  const void* A;
  int64_t lda, stride_a;
  const void* B;
  int64_t ldb, stride_b;
  void* C;
  int64_t ldc, stride_c;
  int64_t batch;
  DType in_dtype;  // A's and B's
  DType dtype;     // C's: in_dtype, or f32 for 16-bit operands
  double alpha, beta;
  const void* bias = nullptr;  // [m] of C's dtype, added to every column in the epilogue
};

void ensure_handles(DeviceContext& ctx) {
  std::lock_guard<std::mutex> lk(ctx.mu);
  if (!ctx.lt) STRATA_CUBLASLT_CHECK(cublasLtCreate(&ctx.lt), "bmm on cuda:", ctx.index);
  if (!ctx.blas) {
    STRATA_CUBLAS_CHECK(cublasCreate(&ctx.blas), "bmm on cuda:", ctx.index);
    STRATA_CUBLAS_CHECK(cublasSetStream(ctx.blas, compute_stream()), "bmm on cuda:", ctx.index);
  }
  if (!ctx.workspace) {
    ctx.workspace = ctx.allocator.allocate(kLtWorkspaceBytes, MemoryCategory::Temporary);
    ctx.workspace_bytes = kLtWorkspaceBytes;
  }
}

// Returns false when cuBLASLt has no algorithm for the problem.
bool gemm_lt(DeviceContext& ctx, const GemmProblem& p, const std::string& what) {
  const cudaDataType_t in_ty = cuda_dtype(p.in_dtype), out_ty = cuda_dtype(p.dtype);
  LtMatmulDesc op;
  STRATA_CUBLASLT_CHECK(cublasLtMatmulDescCreate(&op.d, compute_type(p.in_dtype), CUDA_R_32F), what);
  STRATA_CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(op.d, CUBLASLT_MATMUL_DESC_TRANSA, &p.ta, sizeof(p.ta)), what);
  STRATA_CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(op.d, CUBLASLT_MATMUL_DESC_TRANSB, &p.tb, sizeof(p.tb)), what);
  if (p.bias) {
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    STRATA_CUBLASLT_CHECK(
        cublasLtMatmulDescSetAttribute(op.d, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)),
        what);
    STRATA_CUBLASLT_CHECK(
        cublasLtMatmulDescSetAttribute(op.d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &p.bias, sizeof(p.bias)),
        what);
  }
  auto layout = [&](LtLayout& l, cudaDataType_t ty, bool trans, int64_t rows, int64_t cols, int64_t ld,
                    int64_t stride) {
    // The stored matrix, before op(): op(X) is rows x cols, so X is cols x rows when transposed.
    STRATA_CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&l.d, ty, uint64_t(trans ? cols : rows),
                                                     uint64_t(trans ? rows : cols), ld),
                          what);
    if (p.batch > 1) {
      const int32_t count = int32_t(p.batch);
      STRATA_CUBLASLT_CHECK(
          cublasLtMatrixLayoutSetAttribute(l.d, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)), what);
      STRATA_CUBLASLT_CHECK(cublasLtMatrixLayoutSetAttribute(l.d, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                             &stride, sizeof(stride)),
                            what);
    }
  };
  LtLayout a, b, c;
  layout(a, in_ty, p.ta == CUBLAS_OP_T, p.m, p.k, p.lda, p.stride_a);
  layout(b, in_ty, p.tb == CUBLAS_OP_T, p.k, p.n, p.ldb, p.stride_b);
  layout(c, out_ty, false, p.m, p.n, p.ldc, p.stride_c);

  LtPreference pref;
  STRATA_CUBLASLT_CHECK(cublasLtMatmulPreferenceCreate(&pref.d), what);
  const uint64_t ws = ctx.workspace_bytes;
  STRATA_CUBLASLT_CHECK(
      cublasLtMatmulPreferenceSetAttribute(pref.d, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)), what);
  // The actual pointer alignments, so the heuristic only offers kernels that can load them
  // (views at odd offsets are legal operands).
  const std::pair<cublasLtMatmulPreferenceAttributes_t, const void*> aligned[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, p.A},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, p.B},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, p.C},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, p.C}};
  for (const auto& [attr, ptr] : aligned) {
    const uint32_t al = pointer_alignment(ptr);
    STRATA_CUBLASLT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.d, attr, &al, sizeof(al)), what);
  }
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  // No algorithm (or a layout the heuristic rejects): the caller falls back to cuBLAS, which
  // reports a genuinely bad problem itself.
  const cublasStatus_t st =
      cublasLtMatmulAlgoGetHeuristic(ctx.lt, op.d, a.d, b.d, c.d, c.d, pref.d, 1, &result, &found);
  if (st != CUBLAS_STATUS_SUCCESS || found == 0) return false;
  const float alpha = float(p.alpha), beta = float(p.beta);
  STRATA_CUBLASLT_CHECK(cublasLtMatmul(ctx.lt, op.d, &alpha, p.A, a.d, p.B, b.d, &beta, p.C, c.d, p.C, c.d,
                                       &result.algo, ctx.workspace, ctx.workspace_bytes, compute_stream()),
                        what);
  return true;
}

void gemm_cublas(DeviceContext& ctx, const GemmProblem& p, const std::string& what) {
  const cudaDataType_t in_ty = cuda_dtype(p.in_dtype), out_ty = cuda_dtype(p.dtype);
  const bool f64 = p.dtype == DType::f64;
  const double alpha_d = p.alpha, beta_d = p.beta;
  const float alpha_f = float(p.alpha), beta_f = float(p.beta);
  const void* alpha = f64 ? static_cast<const void*>(&alpha_d) : &alpha_f;
  const void* beta = f64 ? static_cast<const void*>(&beta_d) : &beta_f;
  STRATA_CUBLAS_CHECK(
      cublasGemmStridedBatchedEx_64(ctx.blas, p.ta, p.tb, p.m, p.n, p.k, alpha, p.A, in_ty, p.lda, p.stride_a,
                                    p.B, in_ty, p.ldb, p.stride_b, beta, p.C, out_ty, p.ldc, p.stride_c,
                                    p.batch, compute_type(p.in_dtype), CUBLAS_GEMM_DEFAULT),
      what);
}

// Checks a product's shapes and dtypes; returns the device.
int check_bmm(const Tensor& out, const Tensor& a, const Tensor& b) {
  STRATA_CHECK(a.dim() == 3 && b.dim() == 3 && out.dim() == 3, ShapeError, "bmm: expects 3-D tensors, got ", a.str(),
               " @ ", b.str(), " -> ", out.str());
  const int64_t B = out.size(0), M = out.size(1), N = out.size(2), K = a.size(2);
  STRATA_CHECK(a.size(0) == B && b.size(0) == B && a.size(1) == M && b.size(1) == K && b.size(2) == N, ShapeError,
               "bmm: shapes ", shape_str(a.shape()), " @ ", shape_str(b.shape()), " -> ", shape_str(out.shape()));
  const int dev = check_on_device("bmm", {&out, &a, &b});
  const DType dt = out.dtype(), in_dt = a.dtype();
  // Same-type products, or 16-bit operands into an f32 result (autocast's GEMMs).
  const bool mixed = dt == DType::f32 && (in_dt == DType::bf16 || in_dt == DType::f16);
  STRATA_CHECK(is_floating(dt) && b.dtype() == in_dt && (in_dt == dt || mixed), TypeError,
               "bmm: not defined for ", a.str(), " @ ", b.str(), " -> ", out.str());
  return dev;
}

// out = alpha a @ b + beta out (+ bias) as cuBLAS's column-major problem, for operands it can read
// (gemm_operand) and a row-major out: out^T (N x M) = op(b^T) (N x K) @ op(a^T) (K x M).
GemmProblem column_major_problem(const Tensor& out, const Tensor& a, const Tensor& b, double alpha,
                                 double beta, const void* bias = nullptr) {
  MatrixLayout la, lb, lo;
  gemm_layout(a, &la);
  gemm_layout(b, &lb);
  gemm_layout(out, &lo);
  const int64_t B = out.size(0);
  return GemmProblem{lb.transposed ? CUBLAS_OP_T : CUBLAS_OP_N,
                     la.transposed ? CUBLAS_OP_T : CUBLAS_OP_N,
                     out.size(2),
                     out.size(1),
                     a.size(2),
                     b.data_ptr(),
                     lb.ld,
                     B > 1 ? b.stride(0) : 0,
                     a.data_ptr(),
                     la.ld,
                     B > 1 ? a.stride(0) : 0,
                     out.data_ptr(),
                     lo.ld,
                     B > 1 ? out.stride(0) : 0,
                     B,
                     a.dtype(),
                     out.dtype(),
                     alpha,
                     beta,
                     bias};
}

}  // namespace

// An operand cuBLAS can read (unit stride in one of its two dims): `m` itself, or a contiguous copy.
Tensor CudaBackend::gemm_operand(const Tensor& m, int device) {
  MatrixLayout l;
  if (gemm_layout(m, &l)) return m;
  Tensor c = empty(m.shape(), m.dtype(), device);
  copy_same_device(c, m);
  return c;
}

void CudaBackend::bmm(const Tensor& out, const Tensor& a, const Tensor& b, double alpha, double beta) {
  const int dev = check_bmm(out, a, b);
  if (out.numel() == 0) return;
  const int64_t B = out.size(0), K = a.size(2);
  const DType dt = out.dtype();
  DeviceContext& ctx = context(dev);
  DeviceGuard guard(dev);
  if (K == 0) {  // BLAS semantics: out = beta * out (cuBLASLt rejects k = 0)
    if (beta == 0.0) return launch_fill(out, 0.0);
    const Tensor in[1] = {out};
    return elementwise(EwOp::MulScalar, out, in, EwParams{beta, 0.0});
  }
  MatrixLayout lo;
  const Tensor ac = gemm_operand(a, dev), bc = gemm_operand(b, dev);
  Tensor oc = out;
  const bool out_ok = gemm_layout(out, &lo) && !lo.transposed && (B == 1 || out.stride(0) != 0);
  if (!out_ok) {
    oc = empty(out.shape(), dt, dev);
    if (beta != 0.0) copy_same_device(oc, out);
  }
  ensure_handles(ctx);
  const GemmProblem p = column_major_problem(oc, ac, bc, alpha, beta);
  const std::string what = detail::concat("bmm ", a.str(), " @ ", b.str(), " -> ", out.str());
  const bool broadcast = B > 1 && (p.stride_a == 0 || p.stride_b == 0);
  const bool lt_ok = dt != DType::f64 && !broadcast && B <= INT32_MAX;
  if (!lt_ok || !gemm_lt(ctx, p, what)) gemm_cublas(ctx, p, what);
  if (!out_ok) copy_same_device(out, oc);
}

// One matrix, a row-major out and a contiguous bias of out's dtype: the bias is cuBLASLt's
// epilogue (out^T's column vector), so out is written once. Anything else, or a problem the
// heuristic has no biased algorithm for, takes the default (bias copied in, then beta = 1).
void CudaBackend::bmm_bias(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias) {
  const int dev = check_bmm(out, a, b);
  MatrixLayout lo;
  const bool fits = out.size(0) == 1 && a.size(2) > 0 && out.numel() > 0 && out.dtype() != DType::f64 &&
                    bias.defined() && bias.dim() == 1 && bias.size(0) == out.size(2) &&
                    bias.dtype() == out.dtype() && bias.stride(0) == 1 && bias.device() == out.device() &&
                    gemm_layout(out, &lo) && !lo.transposed;
  if (fits) {
    DeviceContext& ctx = context(dev);
    DeviceGuard guard(dev);
    const Tensor ac = gemm_operand(a, dev), bc = gemm_operand(b, dev);
    ensure_handles(ctx);
    const GemmProblem p = column_major_problem(out, ac, bc, 1.0, 0.0, bias.data_ptr());
    if (gemm_lt(ctx, p,
                detail::concat("bmm_bias ", a.str(), " @ ", b.str(), " + ", bias.str(), " -> ", out.str())))
      return;
  }
  Backend::bmm_bias(out, a, b, bias);
}

}  // namespace strata::gpu
