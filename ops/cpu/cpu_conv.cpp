// CPU 2-D convolution: the direct (im2col + GEMM, per image and group) kernels that are the
// oracle for the oneDNN path (cpu_conv_dnnl.cpp), and the dispatch between the two.
#include <cblas.h>

#include <algorithm>
#include <vector>

#include "ops/cpu/cpu_backend.h"
#include "strata/config.h"

namespace strata::cpu {

namespace {

struct Geometry {
  int64_t N, C, H, W, K, R, S, P, Q, G, Cg, Kg;
  int64_t sh, sw, ph, pw, dh, dw;
  int64_t crs() const { return Cg * R * S; }
  int64_t pq() const { return P * Q; }
};

Geometry geometry(const Tensor& x, const Tensor& w, const Tensor& y, const Conv2dParams& p) {
  Geometry g;
  g.N = x.size(0), g.C = x.size(1), g.H = x.size(2), g.W = x.size(3);
  g.K = w.size(0), g.R = w.size(2), g.S = w.size(3), g.P = y.size(2), g.Q = y.size(3);
  g.G = p.groups, g.Cg = g.C / g.G, g.Kg = g.K / g.G;
  g.sh = p.stride[0], g.sw = p.stride[1], g.ph = p.padding[0], g.pw = p.padding[1];
  g.dh = p.dilation[0], g.dw = p.dilation[1];
  return g;
}

// C[M, N] = A[M, K] @ B[K, N] (row-major, ta / tb: the operand is stored transposed) + beta C.
template <class T>
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb,
          T beta, T* C, int64_t ldc) {
  const auto a = ta ? CblasTrans : CblasNoTrans, b = tb ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, a, b, int(M), int(N), int(K), 1.f, A, int(lda), B, int(ldb), beta, C, int(ldc));
  else
    cblas_dgemm(CblasRowMajor, a, b, int(M), int(N), int(K), 1.0, A, int(lda), B, int(ldb), beta, C, int(ldc));
}

// col[(c R + r) S + s, p Q + q] = x[c, p sh - ph + r dh, q sw - pw + s dw] (0 outside): the
// Cg input channels of one group of one image.
template <class T>
void im2col(const Geometry& g, const T* x, T* col) {
#pragma omp parallel for schedule(static) if (g.crs() * g.pq() > 32768)
  for (int64_t row = 0; row < g.crs(); ++row) {
    const int64_t c = row / (g.R * g.S), r = row / g.S % g.R, s = row % g.S;
    const T* xc = x + c * g.H * g.W;
    T* out = col + row * g.pq();
    for (int64_t p = 0; p < g.P; ++p) {
      const int64_t h = p * g.sh - g.ph + r * g.dh;
      T* o = out + p * g.Q;
      if (h < 0 || h >= g.H) {
        std::fill(o, o + g.Q, T(0));
        continue;
      }
      for (int64_t q = 0; q < g.Q; ++q) {
        const int64_t w = q * g.sw - g.pw + s * g.dw;
        o[q] = w >= 0 && w < g.W ? xc[h * g.W + w] : T(0);
      }
    }
  }
}

// x[c, ...] += the col entries that im2col read from it; one thread per input channel, each
// adding in a fixed order (deterministic).
template <class T>
void col2im(const Geometry& g, const T* col, T* x) {
#pragma omp parallel for schedule(static) if (g.crs() * g.pq() > 32768)
  for (int64_t c = 0; c < g.Cg; ++c) {
    T* xc = x + c * g.H * g.W;
    for (int64_t r = 0; r < g.R; ++r)
      for (int64_t s = 0; s < g.S; ++s) {
        const T* in = col + ((c * g.R + r) * g.S + s) * g.pq();
        for (int64_t p = 0; p < g.P; ++p) {
          const int64_t h = p * g.sh - g.ph + r * g.dh;
          if (h < 0 || h >= g.H) continue;
          for (int64_t q = 0; q < g.Q; ++q) {
            const int64_t w = q * g.sw - g.pw + s * g.dw;
            if (w >= 0 && w < g.W) xc[h * g.W + w] += in[p * g.Q + q];
          }
        }
      }
  }
}

// 1x1, stride 1, no padding: the input plane is its own column matrix.
bool is_pointwise(const Geometry& g) {
  return g.R == 1 && g.S == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0;
}

// The column matrix [CRS, PQ] of group `gi` of image `n`: the input itself for pointwise
// convolutions, else im2col'ed into `col`.
template <class T>
const T* columns(const Geometry& g, const T* x, int64_t n, int64_t gi, std::vector<T>& col) {
  const T* xg = x + (n * g.C + gi * g.Cg) * g.H * g.W;
  if (is_pointwise(g)) return xg;
  im2col(g, xg, col.data());
  return col.data();
}

template <class T>
void conv_forward(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dParams& p) {
  const Geometry g = geometry(x, w, out, p);
  const T* xp = x.data<T>();
  const T* wp = w.data<T>();
  T* yp = out.data<T>();
  std::vector<T> col(is_pointwise(g) ? 0 : size_t(g.crs() * g.pq()));
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t gi = 0; gi < g.G; ++gi) {
      const T* cm = columns(g, xp, n, gi, col);
      // y[n, group] [Kg, PQ] = w[group] [Kg, CRS] @ col [CRS, PQ]
      gemm<T>(false, false, g.Kg, g.pq(), g.crs(), wp + gi * g.Kg * g.crs(), g.crs(), cm, g.pq(), T(0),
              yp + (n * g.K + gi * g.Kg) * g.pq(), g.pq());
    }
  if (bias.defined()) {
    const T* b = bias.data<T>();
#pragma omp parallel for schedule(static) if (out.numel() > 32768)
    for (int64_t nk = 0; nk < g.N * g.K; ++nk) {
      T* y = yp + nk * g.pq();
      const T bv = b[nk % g.K];
      for (int64_t i = 0; i < g.pq(); ++i) y[i] += bv;
    }
  }
}

template <class T>
void conv_backward(const Tensor& gx, const Tensor& gw, const Tensor& gb, const Tensor& gy, const Tensor& x,
                   const Tensor& w, const Conv2dParams& p) {
  const Geometry g = geometry(x, w, gy, p);
  const T* gyp = gy.data<T>();
  const bool direct = is_pointwise(g);
  std::vector<T> col(size_t(g.crs() * g.pq()));
  if (gb.defined()) {
    T* b = gb.data<T>();
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < g.K; ++k) {
      double s = 0;
      for (int64_t n = 0; n < g.N; ++n) {
        const T* y = gyp + (n * g.K + k) * g.pq();
        for (int64_t i = 0; i < g.pq(); ++i) s += double(y[i]);
      }
      b[k] = T(s);
    }
  }
  if (gw.defined()) {
    const T* xp = x.data<T>();
    T* wp = gw.data<T>();
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t gi = 0; gi < g.G; ++gi) {
        const T* cm = columns(g, xp, n, gi, col);
        // gw[group] [Kg, CRS] (+)= gy[n, group] [Kg, PQ] @ col^T [PQ, CRS]
        gemm<T>(false, true, g.Kg, g.crs(), g.pq(), gyp + (n * g.K + gi * g.Kg) * g.pq(), g.pq(), cm, g.pq(),
                n == 0 ? T(0) : T(1), wp + gi * g.Kg * g.crs(), g.crs());
      }
  }
  if (gx.defined()) {
    const T* wp = w.data<T>();
    T* xp = gx.data<T>();
    if (!direct) std::fill(xp, xp + gx.numel(), T(0));
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t gi = 0; gi < g.G; ++gi) {
        T* xg = xp + (n * g.C + gi * g.Cg) * g.H * g.W;
        // col [CRS, PQ] = w[group]^T [CRS, Kg] @ gy[n, group] [Kg, PQ]
        gemm<T>(true, false, g.crs(), g.pq(), g.Kg, wp + gi * g.Kg * g.crs(), g.crs(),
                gyp + (n * g.K + gi * g.Kg) * g.pq(), g.pq(), T(0), direct ? xg : col.data(), g.pq());
        if (!direct) col2im(g, col.data(), xg);
      }
  }
}

}  // namespace

void check_nchw_kernel_inputs(const char* op, std::initializer_list<const Tensor*> ts, DType dt) {
  STRATA_CHECK(dt == DType::f32 || dt == DType::f64, TypeError, op, ": computes in f32 or f64, got ",
               dtype_name(dt));
  for (const Tensor* t : ts)
    STRATA_CHECK(!t->defined() || (t->is_contiguous() && t->dtype() == dt), TypeError, op,
                 ": expects contiguous tensors of one dtype, got ", t->str());
}

void conv2d_direct(const Tensor& out, const Tensor& x, const Tensor& weight, const Tensor& bias,
                   const Conv2dParams& p) {
  check_nchw_kernel_inputs("conv2d", {&out, &x, &weight, &bias}, out.dtype());
  if (out.numel() == 0) return;
  if (out.dtype() == DType::f32)
    conv_forward<float>(out, x, weight, bias, p);
  else
    conv_forward<double>(out, x, weight, bias, p);
}

void conv2d_backward_direct(const Tensor& grad_x, const Tensor& grad_weight, const Tensor& grad_bias,
                            const Tensor& grad_out, const Tensor& x, const Tensor& weight, const Conv2dParams& p) {
  check_nchw_kernel_inputs("conv2d_backward", {&grad_x, &grad_weight, &grad_bias, &grad_out, &x, &weight},
                    grad_out.dtype());
  if (grad_out.numel() == 0) {  // nothing flows back
    for (const Tensor* t : {&grad_x, &grad_weight, &grad_bias})
      if (t->defined() && t->numel() > 0) std::fill_n(static_cast<char*>(t->data_ptr()), t->nbytes(), 0);
    return;
  }
  if (grad_out.dtype() == DType::f32)
    conv_backward<float>(grad_x, grad_weight, grad_bias, grad_out, x, weight, p);
  else
    conv_backward<double>(grad_x, grad_weight, grad_bias, grad_out, x, weight, p);
}

#if !STRATA_HAVE_DNNL
bool conv2d_dnnl(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Conv2dParams&) { return false; }
bool conv2d_backward_dnnl(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                          const Conv2dParams&) {
  return false;
}
#endif

void CpuBackend::conv2d(const Tensor& out, const Tensor& x, const Tensor& weight, const Tensor& bias,
                        const Conv2dParams& p) {
  if (out.dtype() == DType::f32 && out.numel() > 0 && conv2d_dnnl(out, x, weight, bias, p)) return;
  conv2d_direct(out, x, weight, bias, p);
}

void CpuBackend::conv2d_backward(const Tensor& grad_x, const Tensor& grad_weight, const Tensor& grad_bias,
                                 const Tensor& grad_out, const Tensor& x, const Tensor& weight,
                                 const Conv2dParams& p) {
  if (grad_out.dtype() == DType::f32 && grad_out.numel() > 0 && x.numel() > 0 &&
      conv2d_backward_dnnl(grad_x, grad_weight, grad_bias, grad_out, x, weight, p))
    return;
  conv2d_backward_direct(grad_x, grad_weight, grad_bias, grad_out, x, weight, p);
}

}  // namespace strata::cpu
