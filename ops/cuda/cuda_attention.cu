// CUDA attention for f32/f64 inputs, materialized (not fused): the scores of each (batch, head) go through
// cuBLAS (bmm) and one row kernel that adds the mask, applies causality and turns them into
// probabilities plus the row log-sum-exp; backward recomputes the probabilities from the
// saved lse as the CPU's FlashAttention-style kernel does (ops/cpu/cpu_attention.cpp) and
// forms dS = P * (dP - rowsum(dO * O)). Same conventions as the CPU: a fully masked row
// gives a zero output, lse = -inf and no gradient. Memory is O(B H T S) for the scores.
// bf16/f16 inputs take, in order: cuDNN's fused attention where it runs the problem (no mask;
// cuda_cudnn_attention.cpp); this path in f32 while the scores stay under kMaterializedScores
// elements (on an H200, GPT-2 124M at T=1024, it measured 3x faster than Strata's own fused
// kernels); Strata's fused Tensor Core kernels (cuda_fused_attention.cu), whose memory is O(B H T),
// where those run; else this path.
#include <limits>

#include "ops/common/dtype_dispatch.h"
#include "ops/common/elementwise_math.h"
#include "ops/cpu/cpu_backend.h"
#include "ops/cuda/cuda_backend.h"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_cudnn_attention.h"
#include "ops/cuda/cuda_device_utils.cuh"
#include "ops/cuda/cuda_fused_attention.h"

namespace strata::gpu {

namespace {

struct ScoreRows {
  int64_t rows;   // B * H * T
  int64_t T, S, H;
  const char* mask;  // additive [B, H, T, S] view, or null
  int64_t ms[4];     // its strides, in elements
  bool causal;
};

// In place over the scaled scores: adds the mask and the causal -inf, then writes the
// probabilities, and `lse_out` (forward) or reads the saved `lse_in` (backward).
template <class T>
__global__ void attention_probs_kernel(T* scores, ScoreRows a, T* lse_out, const T* lse_in) {
  __shared__ double acc[32];
  __shared__ T red[32];
  const T ninf = -std::numeric_limits<T>::infinity();
  const T* mask = reinterpret_cast<const T*>(a.mask);
  for (int64_t r = blockIdx.x; r < a.rows; r += gridDim.x) {
    const int64_t t = r % a.T, bh = r / a.T, b = bh / a.H, h = bh % a.H;
    T* x = scores + r * a.S;
    T m = ninf;
    for (int64_t s = threadIdx.x; s < a.S; s += blockDim.x) {
      T v = x[s];
      if (mask) v += mask[b * a.ms[0] + h * a.ms[1] + t * a.ms[2] + s * a.ms[3]];
      if (a.causal && s > t) v = ninf;
      x[s] = v;
      m = v > m ? v : m;
    }
    if (lse_in) {
      const T l = lse_in[r];
      for (int64_t s = threadIdx.x; s < a.S; s += blockDim.x)
        x[s] = (l == ninf || x[s] == ninf) ? T(0) : common::m_exp(x[s] - l);
      continue;
    }
    m = block_max(m, red);
    if (m == ninf) {  // everything masked: zero probabilities, lse = -inf (uniform across the block)
      for (int64_t s = threadIdx.x; s < a.S; s += blockDim.x) x[s] = T(0);
      if (threadIdx.x == 0) lse_out[r] = ninf;
      continue;
    }
    double sum = 0;
    for (int64_t s = threadIdx.x; s < a.S; s += blockDim.x) sum += double(common::m_exp(x[s] - m));
    sum = block_sum(sum, acc);
    const T inv = T(1.0 / sum);
    for (int64_t s = threadIdx.x; s < a.S; s += blockDim.x) x[s] = common::m_exp(x[s] - m) * inv;
    if (threadIdx.x == 0) lse_out[r] = T(double(m) + ::log(sum));
  }
}

// Where row r = (b H + h) T + t of a [B, H, T, Dv] tensor with unit stride along Dv starts:
// contiguous, or heads in place ([B, T, H, Dv] memory, merged by a view).
struct HeadRows {
  int64_t T, H, sb, sh, st;
  __device__ int64_t at(int64_t r) const {
    const int64_t t = r % T, bh = r / T;
    return (bh / H) * sb + (bh % H) * sh + t * st;
  }
};

// dS = P * (dP - sum_d dO * O), in place over dP, one block per row.
template <class T>
__global__ void attention_dscores_kernel(T* dp, const T* p, const T* dout, HeadRows dr, const T* out, HeadRows orow,
                                         int64_t rows, int64_t S, int64_t Dv) {
  __shared__ double acc[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* dor = dout + dr.at(r);
    const T* outr = out + orow.at(r);
    double d = 0;
    for (int64_t c = threadIdx.x; c < Dv; c += blockDim.x) d += double(dor[c]) * double(outr[c]);
    const T drow = T(block_sum(d, acc));
    for (int64_t s = threadIdx.x; s < S; s += blockDim.x) dp[r * S + s] = p[r * S + s] * (dp[r * S + s] - drow);
  }
}

// A [d0, d1, d2] view of `t`'s storage with the given strides, `skip` elements past t's offset
// (no autograd).
Tensor view3(const Tensor& t, int64_t d0, int64_t d1, int64_t d2, int64_t s0, int64_t s1, int64_t s2,
             int64_t skip = 0) {
  return Tensor::from_storage(t.storage(), {d0, d1, d2}, {s0, s1, s2}, t.storage_offset() + skip, t.dtype());
}
Tensor rows3(const Tensor& t, int64_t d0, int64_t d1, int64_t d2) { return view3(t, d0, d1, d2, d1 * d2, d2, 1); }
// The per-matrix transpose of a contiguous [d0, d1, d2] tensor, as a [d0, d2, d1] view.
Tensor transposed3(const Tensor& t, int64_t d0, int64_t d1, int64_t d2) { return view3(t, d0, d2, d1, d1 * d2, 1, d2); }

// Batch b of a [B, H, T, Dv] tensor with unit stride along Dv, as [H, T, Dv] (strided batched
// GEMMs take the heads in place, so an output laid out [B, T, H, Dv] needs no copy).
Tensor heads_of(const Tensor& t, int64_t b) {
  return view3(t, t.size(1), t.size(2), t.size(3), t.stride(1), t.stride(2), 1, b * t.stride(0));
}
// Batch b of a contiguous [B H, d1, d2] tensor (n heads per batch), as [n, d1, d2]; transposed
// per matrix when `t`.
Tensor batch_of(const Tensor& t, int64_t b, int64_t n, int64_t d1, int64_t d2, bool tr = false) {
  return tr ? view3(t, n, d2, d1, d1 * d2, 1, d2, b * n * d1 * d2) : view3(t, n, d1, d2, d1 * d2, d2, 1, b * n * d1 * d2);
}

HeadRows head_rows(const Tensor& t) { return {t.size(2), t.size(1), t.stride(0), t.stride(1), t.stride(2)}; }

struct AttentionShape {
  int64_t B, H, T, D, S, Dv;
};

AttentionShape check_attention(const char* op, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask) {
  for (const Tensor* t : {&q, &k, &v}) cpu::check_row_kernel_input(*t, "attention");
  STRATA_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4 && k.dtype() == q.dtype() && v.dtype() == q.dtype(),
               ShapeError, op, ": expects 4-D q, k, v of one dtype, got ", q.str(), ", ", k.str(), ", ", v.str());
  const AttentionShape a{q.size(0), q.size(1), q.size(2), q.size(3), k.size(2), v.size(3)};
  STRATA_CHECK(k.size(0) == a.B && v.size(0) == a.B && k.size(1) == a.H && v.size(1) == a.H && k.size(3) == a.D &&
                   v.size(2) == a.S,
               ShapeError, op, ": q ", shape_str(q.shape()), ", k ", shape_str(k.shape()), ", v ",
               shape_str(v.shape()), " do not fit");
  STRATA_CHECK(!mask.defined() || (mask.dim() == 4 && mask.dtype() == q.dtype() &&
                                   mask.shape() == Shape{a.B, a.H, a.T, a.S}),
               TypeError, "attention: mask must be a 4-D additive [B, H, T, S] tensor of the inputs' dtype, got ",
               mask.str());
  return a;
}

void check_output(const char* op, const Tensor& t, const Shape& shape, DType dt) {
  if (!t.defined()) return;
  STRATA_CHECK(t.is_contiguous() && t.dtype() == dt && t.shape() == shape, ShapeError, op, ": output ", t.str(),
               " should be a contiguous ", dtype_name(dt), shape_str(shape));
}

// out / dout: [B, H, T, Dv] with unit stride along Dv and rows that do not overlap (contiguous,
// or heads in place).
void check_heads(const char* op, const Tensor& t, const Shape& shape, DType dt) {
  STRATA_CHECK(t.dtype() == dt && t.shape() == shape && t.dim() == 4 && (t.stride(3) == 1 || t.size(3) <= 1) &&
                   t.stride(0) >= 0 && t.stride(1) >= 0 && t.stride(2) >= 0,
               ShapeError, op, ": ", t.str(), " should be a ", dtype_name(dt), shape_str(shape),
               " with unit stride along the last dim");
}

ScoreRows score_rows(const AttentionShape& a, const Tensor& mask, bool causal) {
  ScoreRows r{a.B * a.H * a.T, a.T, a.S, a.H, nullptr, {0, 0, 0, 0}, causal};
  if (mask.defined()) {
    r.mask = static_cast<const char*>(mask.data_ptr());
    for (int d = 0; d < 4; ++d) r.ms[d] = mask.stride(d);
  }
  return r;
}

template <class F>
void by_dtype(DType dt, F f) {
  if (dt == DType::f32) f(float{});
  else f(double{});
}

// P [B*H, T, S]: the scaled, masked scores of q and k turned into probabilities, writing the
// row lse (forward) or normalizing by the saved one (backward).
Tensor probabilities(CudaBackend& be, const AttentionShape& a, const Tensor& q, const Tensor& k, const Tensor& mask,
                     bool causal, double scale, const Tensor& lse, bool saved_lse) {
  const int64_t BH = a.B * a.H;
  Tensor p = be.empty({BH, a.T, a.S}, q.dtype(), q.device().index);
  be.bmm(p, rows3(q, BH, a.T, a.D), transposed3(k, BH, a.S, a.D), scale, 0.0);
  const ScoreRows rows = score_rows(a, mask, causal);
  by_dtype(q.dtype(), [&](auto z) {
    using T = decltype(z);
    T* l = static_cast<T*>(lse.data_ptr());
    attention_probs_kernel<T><<<grid_for(rows.rows, 1), row_block_threads(a.S), 0, compute_stream()>>>(
        static_cast<T*>(p.data_ptr()), rows, saved_lse ? nullptr : l, saved_lse ? l : nullptr);
  });
  STRATA_CUDA_CHECK_LAUNCH("attention probabilities of ", q.str(), " x ", k.str());
  return p;
}

// Checks the 16-bit contract: q, k, v, out (and dout) of one 16-bit dtype, lse f32, mask f32.
AttentionShape check_16bit(const char* op, const Tensor& q, const Tensor& k, const Tensor& v,
                           const Tensor& mask, const Tensor& lse) {
  STRATA_CHECK(
      q.dim() == 4 && k.dim() == 4 && v.dim() == 4 && k.dtype() == q.dtype() && v.dtype() == q.dtype(),
      ShapeError, op, ": expects 4-D q, k, v of one dtype, got ", q.str(), ", ", k.str(), ", ", v.str());
  for (const Tensor* t : {&q, &k, &v})
    STRATA_CHECK(t->stride(3) == 1 || t->size(3) <= 1, ShapeError, op, ": ", t->str(),
                 " needs unit stride along the head dim");
  const AttentionShape a{q.size(0), q.size(1), q.size(2), q.size(3), k.size(2), v.size(3)};
  STRATA_CHECK(k.size(0) == a.B && v.size(0) == a.B && k.size(1) == a.H && v.size(1) == a.H &&
                   k.size(3) == a.D && v.size(2) == a.S,
               ShapeError, op, ": q ", shape_str(q.shape()), ", k ", shape_str(k.shape()), ", v ",
               shape_str(v.shape()), " do not fit");
  STRATA_CHECK(!mask.defined() || (mask.dim() == 4 && mask.dtype() == DType::f32 &&
                                   mask.shape() == Shape{a.B, a.H, a.T, a.S}),
               TypeError, op, ": a 16-bit attention's mask must be an additive f32 [B, H, T, S] tensor, got ",
               mask.str());
  check_output(op, lse, {a.B, a.H, a.T}, DType::f32);
  return a;
}

// The materialized path's f32 scores (and, backward, their gradient) of at most this many elements:
// 4 GiB each.
constexpr int64_t kMaterializedScores = int64_t(1) << 30;

bool materialized_fits(const AttentionShape& a) {
  return double(a.B) * double(a.H) * double(a.T) * double(a.S) <= double(kMaterializedScores);
}

// f32 copies of 16-bit tensors, for the materialized path.
Tensor as_f32(CudaBackend& be, const Tensor& t) {
  if (!t.defined()) return t;
  Tensor f = be.empty(t.shape(), DType::f32, t.device().index);
  be.copy(f, t);
  return f;
}

void attention_16bit(CudaBackend& be, const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k,
                     const Tensor& v, const Tensor& mask, bool causal, double scale) {
  const AttentionShape a = check_16bit("attention", q, k, v, mask, lse);
  check_heads("attention", out, {a.B, a.H, a.T, a.Dv}, q.dtype());
  const int dev = check_on_device("attention", {&out, &lse, &q, &k, &v, &mask});
  if (a.B * a.H * a.T == 0) return;
  be.context(dev);
  DeviceGuard guard(dev);
  if (a.S > 0 && !mask.defined() && cudnn_attention_forward(be, out, lse, q, k, v, causal, scale)) return;
  if (a.S > 0 && !materialized_fits(a) && fused_attention_supported(dev, q.dtype(), a.D, a.Dv))
    return fused_attention_forward(out, lse, q, k, v, mask, causal, scale);
  Tensor o32 = be.empty(out.shape(), DType::f32, dev);
  be.attention(o32, lse, as_f32(be, q), as_f32(be, k), as_f32(be, v), mask, causal, scale);
  be.copy(out, o32);
}

void attention_backward_16bit(CudaBackend& be, const Tensor& dq, const Tensor& dk, const Tensor& dv,
                              const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                              const Tensor& out, const Tensor& lse, const Tensor& mask, bool causal,
                              double scale) {
  const AttentionShape a = check_16bit("attention_backward", q, k, v, mask, lse);
  for (const Tensor* t : {&dout, &out})
    check_heads("attention_backward", *t, {a.B, a.H, a.T, a.Dv}, q.dtype());
  for (const Tensor* g : {&dq, &dk, &dv})
    STRATA_CHECK(!g->defined() || (g->dtype() == q.dtype() && g->dim() == 4 && g->stride(3) == 1), ShapeError,
                 "attention_backward: gradient ", g->str(), " should be ", dtype_name(q.dtype()),
                 " with unit stride along the head dim");
  const int dev =
      check_on_device("attention_backward", {&dq, &dk, &dv, &dout, &q, &k, &v, &out, &lse, &mask});
  be.context(dev);
  DeviceGuard guard(dev);
  if (a.B * a.H * a.T == 0 || a.S == 0) {
    for (const Tensor* g : {&dq, &dk, &dv})
      if (g->defined() && g->numel() > 0) be.fill(*g, 0.0);
    return;
  }
  if (!mask.defined() && cudnn_attention_backward(be, dq, dk, dv, dout, q, k, v, out, lse, causal, scale))
    return;
  if (!materialized_fits(a) && fused_attention_supported(dev, q.dtype(), a.D, a.Dv))
    return fused_attention_backward(be, dq, dk, dv, dout, q, k, v, out, lse, mask, causal, scale);
  auto grad32 = [&](const Tensor& g) {
    return g.defined() ? be.empty(g.shape(), DType::f32, dev) : Tensor();
  };
  Tensor dq32 = grad32(dq), dk32 = grad32(dk), dv32 = grad32(dv);
  be.attention_backward(dq32, dk32, dv32, as_f32(be, dout), as_f32(be, q), as_f32(be, k), as_f32(be, v),
                        as_f32(be, out), lse, mask, causal, scale);
  for (auto [g, g32] : {std::pair{&dq, &dq32}, std::pair{&dk, &dk32}, std::pair{&dv, &dv32}})
    if (g->defined()) be.copy(*g, *g32);
}

}  // namespace

void CudaBackend::attention(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                            const Tensor& mask, bool causal, double scale) {
  if (common::is_half(q.dtype())) return attention_16bit(*this, out, lse, q, k, v, mask, causal, scale);
  const AttentionShape a = check_attention("attention", q, k, v, mask);
  const DType dt = q.dtype();
  check_heads("attention", out, {a.B, a.H, a.T, a.Dv}, dt);
  check_output("attention", lse, {a.B, a.H, a.T}, dt);
  const int dev = check_on_device("attention", {&out, &lse, &q, &k, &v, &mask});
  if (a.B * a.H * a.T == 0) return;
  context(dev);
  DeviceGuard guard(dev);
  const int64_t BH = a.B * a.H;
  if (a.S == 0) {  // no keys: every row is fully masked
    launch_fill(out, 0.0);
    launch_fill(lse, -std::numeric_limits<double>::infinity());
    return;
  }
  const Tensor p = probabilities(*this, a, q, k, mask, causal, scale, lse, /*saved_lse=*/false);
  if (out.is_contiguous()) {
    bmm(rows3(out, BH, a.T, a.Dv), p, rows3(v, BH, a.S, a.Dv), 1.0, 0.0);
    return;
  }
  for (int64_t b = 0; b < a.B; ++b)  // heads in place: one strided batch of H per b
    bmm(heads_of(out, b), batch_of(p, b, a.H, a.T, a.S), batch_of(v, b, a.H, a.S, a.Dv), 1.0, 0.0);
}

void CudaBackend::attention_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout,
                                     const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                                     const Tensor& lse, const Tensor& mask, bool causal, double scale) {
  if (common::is_half(q.dtype()))
    return attention_backward_16bit(*this, dq, dk, dv, dout, q, k, v, out, lse, mask, causal, scale);
  const AttentionShape a = check_attention("attention_backward", q, k, v, mask);
  const DType dt = q.dtype();
  check_output("attention_backward", dq, q.shape(), dt);
  check_output("attention_backward", dk, k.shape(), dt);
  check_output("attention_backward", dv, v.shape(), dt);
  for (const Tensor* t : {&dout, &out}) check_heads("attention_backward", *t, {a.B, a.H, a.T, a.Dv}, dt);
  check_output("attention_backward", lse, {a.B, a.H, a.T}, dt);
  const int dev = check_on_device("attention_backward", {&dq, &dk, &dv, &dout, &q, &k, &v, &out, &lse, &mask});
  context(dev);
  DeviceGuard guard(dev);
  const int64_t BH = a.B * a.H;
  if (BH * a.T == 0 || a.S == 0) {  // nothing attends: zero gradients
    for (const Tensor* g : {&dq, &dk, &dv})
      if (g->defined() && g->numel() > 0) launch_fill(*g, 0.0);
    return;
  }
  const Tensor p = probabilities(*this, a, q, k, mask, causal, scale, lse, /*saved_lse=*/true);
  const int64_t rows = BH * a.T;
  // dO in place (contiguous: one batch of B H; heads in place: a strided batch of H per b).
  const bool flat = dout.is_contiguous();
  auto bmm_dout = [&](const Tensor& dst, int64_t n1, int64_t n2, const Tensor& other, bool dout_first, bool tr) {
    if (flat) {
      const Tensor d3 = rows3(dout, BH, a.T, a.Dv);
      const Tensor o3 = tr ? transposed3(other, BH, n1, n2) : rows3(other, BH, n1, n2);
      return dout_first ? bmm(dst, d3, o3, 1.0, 0.0) : bmm(dst, o3, d3, 1.0, 0.0);
    }
    for (int64_t b = 0; b < a.B; ++b) {
      const Tensor db = heads_of(dout, b), ob = batch_of(other, b, a.H, n1, n2, tr);
      const Tensor xb = batch_of(dst, b, a.H, dst.size(1), dst.size(2));
      dout_first ? bmm(xb, db, ob, 1.0, 0.0) : bmm(xb, ob, db, 1.0, 0.0);
    }
  };
  if (dv.defined()) bmm_dout(rows3(dv, BH, a.S, a.Dv), a.T, a.S, p, /*dout_first=*/false, /*tr=*/true);  // P^T dO
  if (!dq.defined() && !dk.defined()) return;
  // dP = dO V^T, then dS = P * (dP - rowsum(dO * O)) in place.
  Tensor ds = empty({BH, a.T, a.S}, dt, dev);
  bmm_dout(ds, a.S, a.Dv, v, /*dout_first=*/true, /*tr=*/true);
  by_dtype(dt, [&](auto z) {
    using T = decltype(z);
    attention_dscores_kernel<T><<<grid_for(rows, 1), row_block_threads(std::max(a.S, a.Dv)), 0,
                                  compute_stream()>>>(
        static_cast<T*>(ds.data_ptr()), static_cast<const T*>(p.data_ptr()), static_cast<const T*>(dout.data_ptr()),
        head_rows(dout), static_cast<const T*>(out.data_ptr()), head_rows(out), rows, a.S, a.Dv);
  });
  STRATA_CUDA_CHECK_LAUNCH("attention_backward ", q.str(), " x ", k.str());
  if (dq.defined()) bmm(rows3(dq, BH, a.T, a.D), ds, rows3(k, BH, a.S, a.D), scale, 0.0);
  if (dk.defined()) bmm(rows3(dk, BH, a.S, a.D), transposed3(ds, BH, a.T, a.S), rows3(q, BH, a.T, a.D), scale, 0.0);
}

}  // namespace strata::gpu
