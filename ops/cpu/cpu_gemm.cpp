// CPU batched GEMM: f32 through oneDNN's sgemm (kernels picked by CPU features; OpenBLAS's, the
// OpenMP build, without oneDNN), f64 through OpenBLAS; bf16 x bf16 -> f32 (autocast) through
// oneDNN (gemm_bf16_f32, cpu_gemm_bf16.cpp); other 16-bit outputs are computed in f32.
#include <cblas.h>

#include "ops/cpu/cpu_backend.h"
#include "strata/config.h"

#if STRATA_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif

namespace strata::cpu {

namespace {

struct MatrixLayout {
  bool transposed;  // stored column-major (unit stride along rows)
  int64_t ld;
};

// BLAS can take a matrix whose last dim or first dim has unit stride; the leading dimension
// of a single row (or column) is free, so it is set to what BLAS requires.
bool blas_layout(const Tensor& m, MatrixLayout* layout) {
  int64_t r = m.size(1), c = m.size(2), sr = m.stride(1), sc = m.stride(2);
  if (sc == 1 || c <= 1) {
    const int64_t ld = r <= 1 ? std::max<int64_t>(c, 1) : sr;
    if (ld >= std::max<int64_t>(1, c)) {
      *layout = {false, ld};
      return true;
    }
  }
  if (sr == 1 || r <= 1) {
    const int64_t ld = c <= 1 ? std::max<int64_t>(r, 1) : sc;
    if (ld >= std::max<int64_t>(1, r)) {
      *layout = {true, ld};
      return true;
    }
  }
  return false;
}

}  // namespace

void CpuBackend::bmm(const Tensor& out, const Tensor& a, const Tensor& b, double alpha, double beta) {
  STRATA_CHECK(a.dim() == 3 && b.dim() == 3 && out.dim() == 3, ShapeError, "bmm: expects 3-D tensors, got ",
               a.str(), " @ ", b.str(), " -> ", out.str());
  const int64_t B = out.size(0), M = out.size(1), N = out.size(2), K = a.size(2);
  STRATA_CHECK(a.size(0) == B && b.size(0) == B && a.size(1) == M && b.size(1) == K && b.size(2) == N,
               ShapeError, "bmm: shapes ", shape_str(a.shape()), " @ ", shape_str(b.shape()), " -> ",
               shape_str(out.shape()));
  if (out.numel() == 0) return;
  if (K == 0) {  // empty sum: out = beta * out
    if (beta == 0.0) {
      fill(out, 0.0);
    } else {
      Tensor in[1] = {out};
      elementwise(EwOp::MulScalar, out, in, {beta, 0});
    }
    return;
  }
  DType dt = out.dtype();
#if STRATA_HAVE_DNNL
  // bf16 operands, f32 result: mixed precision (autocast), products accumulated in f32. A bf16
  // result (autocast's narrow linear) is that f32 product rounded once.
  if ((dt == DType::f32 || dt == DType::bf16) && a.dtype() == DType::bf16 && b.dtype() == DType::bf16) {
    MatrixLayout la, lb, lo;
    Tensor ac = a, bc = b, oc = out;
    if (!blas_layout(ac, &la)) blas_layout(ac = contiguous_as(a, DType::bf16), &la);
    if (!blas_layout(bc, &lb)) blas_layout(bc = contiguous_as(b, DType::bf16), &lb);
    const bool out_ok = dt == DType::f32 && blas_layout(out, &lo) && !lo.transposed;
    if (!out_ok) blas_layout(oc = contiguous_as(out, DType::f32), &lo);
    for (int64_t i = 0; i < B; ++i)
      gemm_bf16_f32(la.transposed, lb.transposed, M, N, K, float(alpha),
                    static_cast<const uint16_t*>(ac.data_ptr()) + i * ac.stride(0), la.ld,
                    static_cast<const uint16_t*>(bc.data_ptr()) + i * bc.stride(0), lb.ld, float(beta),
                    static_cast<float*>(oc.data_ptr()) + i * oc.stride(0), lo.ld);
    if (!out_ok) copy(out, oc);
    return;
  }
#endif
  if (dt != DType::f32 && dt != DType::f64) {
    STRATA_CHECK(is_floating(dt), TypeError, "bmm: not defined for ", dtype_name(dt));
    Tensor o32 = contiguous_as(out, DType::f32);
    bmm(o32, contiguous_as(a, DType::f32), contiguous_as(b, DType::f32), alpha, beta);
    copy(out, o32);
    return;
  }
  MatrixLayout la, lb, lo;
  Tensor ac = a, bc = b;
  if (!blas_layout(ac, &la)) {
    ac = contiguous_as(a, dt);
    blas_layout(ac, &la);
  }
  if (!blas_layout(bc, &lb)) {
    bc = contiguous_as(b, dt);
    blas_layout(bc, &lb);
  }
  Tensor oc = out;
  bool out_ok = blas_layout(out, &lo) && !lo.transposed;
  if (!out_ok) {
    oc = contiguous_as(out, dt);
    blas_layout(oc, &lo);
  }
  const auto ta = la.transposed ? CblasTrans : CblasNoTrans;
  const auto tb = lb.transposed ? CblasTrans : CblasNoTrans;
  const size_t es = element_size(dt);
  char* pa = static_cast<char*>(ac.data_ptr());
  char* pb = static_cast<char*>(bc.data_ptr());
  char* po = static_cast<char*>(oc.data_ptr());
  for (int64_t i = 0; i < B; ++i) {
    void* A = pa + i * ac.stride(0) * es;
    void* Bm = pb + i * bc.stride(0) * es;
    void* C = po + i * oc.stride(0) * es;
    if (dt == DType::f32) {
#if STRATA_HAVE_DNNL
      // oneDNN picks its kernels by CPU features (AVX-512 where present); row-major like ours.
      dnnl_status_t st = dnnl_sgemm(la.transposed ? 'T' : 'N', lb.transposed ? 'T' : 'N', M, N, K, float(alpha),
                                    static_cast<const float*>(A), la.ld, static_cast<const float*>(Bm), lb.ld,
                                    float(beta), static_cast<float*>(C), lo.ld);
      STRATA_CHECK(st == dnnl_success, Error, "bmm: dnnl_sgemm failed (status ", int(st), ") for ", M, "x", K,
                   " @ ", K, "x", N);
      continue;
#endif
      cblas_sgemm(CblasRowMajor, ta, tb, int(M), int(N), int(K), float(alpha), static_cast<float*>(A),
                  int(la.ld), static_cast<float*>(Bm), int(lb.ld), float(beta), static_cast<float*>(C),
                  int(lo.ld));
    } else {
      cblas_dgemm(CblasRowMajor, ta, tb, int(M), int(N), int(K), alpha, static_cast<double*>(A),
                  int(la.ld), static_cast<double*>(Bm), int(lb.ld), beta, static_cast<double*>(C),
                  int(lo.ld));
    }
  }
  if (!out_ok) copy(out, oc);
}

}  // namespace strata::cpu
