// CUDA fused attention for bf16/f16 inputs: FlashAttention-2 (Dao 2023) on Tensor Cores through
// WMMA 16x16x16 fragments with f32 accumulation. Forward: one block per (batch x head, 64 query
// rows), four warps of 16 rows, an online softmax over 64-key tiles, O rescaled in shared memory;
// it writes O (the inputs' dtype) and the row log-sum-exp (f32) and nothing of size T x S.
// Backward recomputes the probabilities from the saved lse: one kernel per key tile accumulates
// dK and dV (each warp owns 16 keys), another per query tile accumulates dQ (each warp owns 16
// queries), so every gradient element is summed by one warp in a fixed order (no atomics, the
// same bits every run). P and dS are rounded to the inputs' dtype before their products, as
// FlashAttention does. Head dims up to 128 run padded with zeros to 64 or 128. Same conventions
// as the CPU (ops/cpu/cpu_attention.cpp): additive mask, causal keeps s <= t, a fully masked row
// gives a zero output, lse = -inf and no gradient. The tiling is ops/common/attention_tiles.h.
#include <mma.h>

#include <algorithm>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <limits>

#include "ops/common/attention_tiles.h"
#include "ops/cuda/cuda_backend.h"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_fused_attention.h"

namespace strata::gpu {

namespace {

constexpr int kWarps = 4, kThreads = 32 * kWarps;
constexpr int kRows = 16 * kWarps;  // query rows per tile
constexpr int kCols = 64;           // key rows per tile

template <class E>
__device__ __forceinline__ E to_e(float x);
template <>
__device__ __forceinline__ __nv_bfloat16 to_e<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <>
__device__ __forceinline__ __half to_e<__half>(float x) {
  return __float2half_rn(x);
}
__device__ __forceinline__ float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_f(__half x) { return __half2float(x); }

__device__ __forceinline__ float warp_max_all(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = w > v ? w : v;
  }
  return v;
}
__device__ __forceinline__ float warp_sum_all(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// A [B, H, T, D] tensor with unit stride along D, element strides for b, h and t.
template <class E>
struct Heads {
  E* p;
  int64_t sb, sh, st, H;
  __device__ E* row(int64_t bh, int64_t t) const { return p + (bh / H) * sb + (bh % H) * sh + t * st; }
};

template <class E>
Heads<E> heads_of(const Tensor& t) {
  return {static_cast<E*>(t.data_ptr()), t.stride(0), t.stride(1), t.stride(2), t.size(1)};
}

struct MaskArg {
  const float* p;  // additive f32 [B, H, T, S] view, or null
  int64_t s[4];
  int64_t H;
  __device__ float at(int64_t bh, int64_t t, int64_t s_) const {
    return p[(bh / H) * s[0] + (bh % H) * s[1] + t * s[2] + s_ * s[3]];
  }
};

MaskArg mask_of(const Tensor& m, int64_t H) {
  MaskArg a{nullptr, {0, 0, 0, 0}, H};
  if (!m.defined()) return a;
  a.p = static_cast<const float*>(m.data_ptr());
  for (int d = 0; d < 4; ++d) a.s[d] = m.stride(d);
  return a;
}

struct Problem {
  int64_t T, S, D, Dv;
  float scale;
  bool causal;
  MaskArg mask;
  __host__ __device__ common::AttentionTiles tiles() const { return {T, S, kRows, kCols, causal}; }
};

// The masked, scaled score of (t, s), or -inf where the pair is not kept.
__device__ __forceinline__ float masked_score(const Problem& pb, const common::AttentionTiles& tl, int64_t bh,
                                              int64_t t, int64_t s, float raw) {
  if (!tl.kept(t, s)) return -std::numeric_limits<float>::infinity();
  float x = raw * pb.scale;
  if (pb.mask.p) x += pb.mask.at(bh, t, s);
  return x;
}

// exp(x - lse), 0 where the row is fully masked or the pair is not kept.
__device__ __forceinline__ float prob(float x, float lse) {
  const float ninf = -std::numeric_limits<float>::infinity();
  return (lse == ninf || x == ninf) ? 0.f : expf(x - lse);
}

// Rows [r0, r0 + n) of a [*, width] tile in shared memory, zero past `rows_valid` or `cols_valid`.
template <class E, int HD>
__device__ __forceinline__ void load_tile(E* dst, const Heads<const E>& src, int64_t bh, int64_t r0, int n,
                                          int64_t rows_valid, int64_t cols_valid) {
  for (int i = threadIdx.x; i < n * HD; i += kThreads) {
    const int r = i / HD, d = i % HD;
    const int64_t t = r0 + r;
    dst[i] = (t < rows_valid && d < cols_valid) ? src.row(bh, t)[d] : to_e<E>(0.f);
  }
}

using namespace nvcuda;
template <class E>
using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, E, wmma::row_major>;
template <class E>
using FragBRow = wmma::fragment<wmma::matrix_b, 16, 16, 16, E, wmma::row_major>;
template <class E>
using FragBCol = wmma::fragment<wmma::matrix_b, 16, 16, 16, E, wmma::col_major>;
using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

// out[16 x n*16] (f32, leading dim ldo) = A[16 x K] (row-major, lda) times B^T, where B is
// [n*16 x K] row-major (ldb): the products with K^T, Q^T, V^T, dO^T.
template <class E, int K, int N>
__device__ __forceinline__ void mul_bt(float* out, int ldo, const E* a, int lda, const E* b, int ldb) {
#pragma unroll
  for (int n = 0; n < N / 16; ++n) {
    FragC acc;
    wmma::fill_fragment(acc, 0.f);
#pragma unroll
    for (int k = 0; k < K / 16; ++k) {
      FragA<E> fa;
      FragBCol<E> fb;
      wmma::load_matrix_sync(fa, a + k * 16, lda);
      wmma::load_matrix_sync(fb, b + n * 16 * ldb + k * 16, ldb);
      wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(out + n * 16, acc, ldo, wmma::mem_row_major);
  }
}

// acc[n] (16 x 16 each, n < N/16) += A[16 x K] (row-major, lda) times B[K x N] (row-major, ldb).
template <class E, int K, int N>
__device__ __forceinline__ void mul_add(FragC (&acc)[N / 16], const E* a, int lda, const E* b, int ldb) {
#pragma unroll
  for (int n = 0; n < N / 16; ++n) {
#pragma unroll
    for (int k = 0; k < K / 16; ++k) {
      FragA<E> fa;
      FragBRow<E> fb;
      wmma::load_matrix_sync(fa, a + k * 16, lda);
      wmma::load_matrix_sync(fb, b + k * 16 * ldb + n * 16, ldb);
      wmma::mma_sync(acc[n], fa, fb, acc[n]);
    }
  }
}

template <int HD>
constexpr int wide() {
  return HD > kCols ? HD : kCols;
}

template <class E, int HD>
constexpr size_t forward_smem() {
  return sizeof(E) * (kRows * HD + 2 * kCols * HD + kWarps * 16 * kCols) +
         sizeof(float) * (kWarps * 16 * wide<HD>() + kWarps * 16 * HD + 3 * kRows);
}

template <class E, int HD>
__global__ void __launch_bounds__(kThreads, 1)
    fused_attention_forward_kernel(Heads<const E> q, Heads<const E> k, Heads<const E> v, Heads<E> out,
                                   float* lse, Problem pb) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  extern __shared__ __align__(128) unsigned char smem[];
  constexpr int W = wide<HD>();
  E* Qs = reinterpret_cast<E*>(smem);
  E* Ks = Qs + kRows * HD;
  E* Vs = Ks + kCols * HD;
  E* Ps = Vs + kCols * HD;                                         // per warp [16][kCols]
  float* Ws = reinterpret_cast<float*>(Ps + kWarps * 16 * kCols);  // per warp [16][W]: scores, then P V
  float* Os = Ws + kWarps * 16 * W;                                // per warp [16][HD]
  float* Ms = Os + kWarps * 16 * HD;                               // running max per row
  float* Ls = Ms + kRows;                                          // running sum per row
  float* As = Ls + kRows;                                          // this tile's rescale per row
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t bh = blockIdx.x, qt = blockIdx.y, q0 = qt * kRows;
  const common::AttentionTiles tl = pb.tiles();
  const float ninf = -std::numeric_limits<float>::infinity();

  load_tile<E, HD>(Qs, q, bh, q0, kRows, pb.T, pb.D);
  for (int i = threadIdx.x; i < kWarps * 16 * HD; i += kThreads) Os[i] = 0.f;
  for (int i = threadIdx.x; i < kRows; i += kThreads) Ms[i] = ninf, Ls[i] = 0.f;
  E* Pw = Ps + warp * 16 * kCols;
  float* Ww = Ws + warp * 16 * W;
  float* Ow = Os + warp * 16 * HD;
  const int64_t kend = tl.key_tile_end(qt);
  for (int64_t kt = 0; kt < kend; ++kt) {
    const int64_t k0 = kt * kCols;
    __syncthreads();  // the previous tile's K and V are no longer read
    load_tile<E, HD>(Ks, k, bh, k0, kCols, pb.S, pb.D);
    load_tile<E, HD>(Vs, v, bh, k0, kCols, pb.S, pb.Dv);
    __syncthreads();
    mul_bt<E, HD, kCols>(Ww, W, Qs + warp * 16 * HD, HD, Ks, HD);  // S = Q K^T
    __syncwarp();
    for (int r = 0; r < 16; ++r) {  // online softmax, a row at a time, two columns per lane
      const int row = warp * 16 + r;
      const int64_t t = q0 + row;
      const float x0 = masked_score(pb, tl, bh, t, k0 + lane, Ww[r * W + lane]);
      const float x1 = masked_score(pb, tl, bh, t, k0 + lane + 32, Ww[r * W + lane + 32]);
      const float m_old = Ms[row];
      float m_new = warp_max_all(x0 > x1 ? x0 : x1);
      m_new = m_old > m_new ? m_old : m_new;
      float p0 = 0.f, p1 = 0.f, alpha = 1.f;
      if (m_new != ninf) {
        p0 = prob(x0, m_new), p1 = prob(x1, m_new);
        alpha = m_old == ninf ? 0.f : expf(m_old - m_new);
      }
      const float sum = warp_sum_all(p0 + p1);
      Pw[r * kCols + lane] = to_e<E>(p0);
      Pw[r * kCols + lane + 32] = to_e<E>(p1);
      if (lane == 0) Ms[row] = m_new, Ls[row] = Ls[row] * alpha + sum, As[row] = alpha;
    }
    __syncwarp();
    FragC pv[HD / 16];
#pragma unroll
    for (int n = 0; n < HD / 16; ++n) wmma::fill_fragment(pv[n], 0.f);
    mul_add<E, kCols, HD>(pv, Pw, kCols, Vs, HD);  // P V
#pragma unroll
    for (int n = 0; n < HD / 16; ++n) wmma::store_matrix_sync(Ww + n * 16, pv[n], W, wmma::mem_row_major);
    __syncwarp();
    for (int i = lane; i < 16 * HD; i += 32) {
      const int r = i / HD, d = i % HD;
      Ow[i] = Ow[i] * As[warp * 16 + r] + Ww[r * W + d];
    }
    __syncwarp();
  }
  for (int i = lane; i < 16 * HD; i += 32) {
    const int r = i / HD, d = i % HD;
    const int64_t t = q0 + warp * 16 + r;
    if (t >= pb.T || d >= pb.Dv) continue;
    const float l = Ls[warp * 16 + r];
    out.row(bh, t)[d] = to_e<E>(l > 0.f ? Ow[i] / l : 0.f);
  }
  for (int r = lane; r < 16; r += 32) {
    const int64_t t = q0 + warp * 16 + r;
    if (t >= pb.T) continue;
    const float l = Ls[warp * 16 + r];
    lse[bh * pb.T + t] = l > 0.f ? Ms[warp * 16 + r] + logf(l) : ninf;
  }
#else
  __trap();
#endif
}

// delta[bh T + t] = sum_d dO[t, d] O[t, d]: one warp per row.
template <class E>
__global__ void attention_delta_kernel(Heads<const E> dout, Heads<const E> out, float* delta, int64_t rows,
                                       int64_t T, int64_t Dv) {
  const int64_t r = int64_t(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (r >= rows) return;
  const int lane = threadIdx.x % 32;
  const E* a = dout.row(r / T, r % T);
  const E* b = out.row(r / T, r % T);
  float s = 0.f;
  for (int64_t d = lane; d < Dv; d += 32) s += to_f(a[d]) * to_f(b[d]);
  s = warp_sum_all(s);
  if (lane == 0) delta[r] = s;
}

// The saved lse and delta of query rows q0.. into shared memory (-inf and 0 past the last query).
__device__ __forceinline__ void load_row_stats(float* lse_s, float* delta_s, const float* lse,
                                               const float* delta, int64_t bh, int64_t q0, int64_t T) {
  for (int i = threadIdx.x; i < kRows; i += kThreads) {
    const int64_t t = q0 + i;
    lse_s[i] = t < T ? lse[bh * T + t] : -std::numeric_limits<float>::infinity();
    delta_s[i] = t < T ? delta[bh * T + t] : 0.f;
  }
}

template <class E, int HD>
constexpr size_t dkdv_smem() {
  return sizeof(E) * (2 * kCols * HD + 2 * kRows * HD + 2 * kWarps * 16 * kRows) +
         sizeof(float) * (kWarps * 16 * (HD > kRows ? HD : kRows) + kWarps * 16 * kRows + 2 * kRows);
}

// Writes a warp's 16 x HD f32 accumulators (times `scale`) to rows r0.. of `dst`, through `stage`.
template <class E, int HD>
__device__ __forceinline__ void write_rows(Heads<E> dst, int64_t bh, int64_t r0, int64_t rows_valid,
                                           int64_t cols_valid, FragC (&acc)[HD / 16], float* stage, int ld,
                                           float scale) {
#pragma unroll
  for (int n = 0; n < HD / 16; ++n) wmma::store_matrix_sync(stage + n * 16, acc[n], ld, wmma::mem_row_major);
  __syncwarp();
  const int lane = threadIdx.x % 32;
  for (int i = lane; i < 16 * HD; i += 32) {
    const int r = i / HD, d = i % HD;
    if (r0 + r < rows_valid && d < cols_valid) dst.row(bh, r0 + r)[d] = to_e<E>(stage[r * ld + d] * scale);
  }
}

// dK and dV of one key tile: each warp owns 16 keys and visits every query tile that attends them.
template <class E, int HD>
__global__ void __launch_bounds__(kThreads, 1)
    fused_attention_dkdv_kernel(Heads<const E> q, Heads<const E> k, Heads<const E> v, Heads<const E> dout,
                                const float* lse, const float* delta, Heads<E> dk, Heads<E> dv, Problem pb) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  extern __shared__ __align__(128) unsigned char smem[];
  constexpr int W1 = HD > kRows ? HD : kRows;
  E* Ks = reinterpret_cast<E*>(smem);
  E* Vs = Ks + kCols * HD;
  E* Qs = Vs + kCols * HD;
  E* dOs = Qs + kRows * HD;
  E* Pt = dOs + kRows * HD;                                         // per warp [16 keys][kRows]
  E* dSt = Pt + kWarps * 16 * kRows;                                // per warp [16 keys][kRows]
  float* S1 = reinterpret_cast<float*>(dSt + kWarps * 16 * kRows);  // per warp [16][W1]: S^T, then staging
  float* S2 = S1 + kWarps * 16 * W1;                                // per warp [16][kRows]: dP^T
  float* lse_s = S2 + kWarps * 16 * kRows;
  float* delta_s = lse_s + kRows;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t bh = blockIdx.x, kt = blockIdx.y, k0 = kt * kCols;
  const common::AttentionTiles tl = pb.tiles();
  const float ninf = -std::numeric_limits<float>::infinity();
  load_tile<E, HD>(Ks, k, bh, k0, kCols, pb.S, pb.D);
  load_tile<E, HD>(Vs, v, bh, k0, kCols, pb.S, pb.Dv);
  E* Ptw = Pt + warp * 16 * kRows;
  E* dStw = dSt + warp * 16 * kRows;
  float* S1w = S1 + warp * 16 * W1;
  float* S2w = S2 + warp * 16 * kRows;
  FragC dk_acc[HD / 16], dv_acc[HD / 16];
#pragma unroll
  for (int n = 0; n < HD / 16; ++n) wmma::fill_fragment(dk_acc[n], 0.f), wmma::fill_fragment(dv_acc[n], 0.f);
  for (int64_t qt = tl.query_tile_begin(kt); qt < tl.query_tiles(); ++qt) {
    const int64_t q0 = qt * kRows;
    __syncthreads();  // the previous query tile is no longer read
    load_tile<E, HD>(Qs, q, bh, q0, kRows, pb.T, pb.D);
    load_tile<E, HD>(dOs, dout, bh, q0, kRows, pb.T, pb.Dv);
    load_row_stats(lse_s, delta_s, lse, delta, bh, q0, pb.T);
    __syncthreads();
    mul_bt<E, HD, kRows>(S1w, W1, Ks + warp * 16 * HD, HD, Qs, HD);      // S^T = K Q^T
    mul_bt<E, HD, kRows>(S2w, kRows, Vs + warp * 16 * HD, HD, dOs, HD);  // dP^T = V dO^T
    __syncwarp();
    for (int i = lane; i < 16 * kRows; i += 32) {
      const int r = i / kRows, c = i % kRows;
      const int64_t s = k0 + warp * 16 + r, t = q0 + c;
      const float p = prob(masked_score(pb, tl, bh, t, s, S1w[r * W1 + c]), lse_s[c]);
      Ptw[i] = to_e<E>(p);
      dStw[i] = to_e<E>(p * (S2w[i] - delta_s[c]));
    }
    __syncwarp();
    mul_add<E, kRows, HD>(dv_acc, Ptw, kRows, dOs, HD);  // dV += P^T dO
    mul_add<E, kRows, HD>(dk_acc, dStw, kRows, Qs, HD);  // dK += dS^T Q
    __syncwarp();
  }
  const int64_t r0 = k0 + warp * 16;
  if (dv.p) write_rows<E, HD>(dv, bh, r0, pb.S, pb.Dv, dv_acc, S1w, W1, 1.f);
  __syncwarp();
  if (dk.p) write_rows<E, HD>(dk, bh, r0, pb.S, pb.D, dk_acc, S1w, W1, pb.scale);
#else
  __trap();
#endif
}

template <class E, int HD>
constexpr size_t dq_smem() {
  return sizeof(E) * (2 * kRows * HD + 2 * kCols * HD + kWarps * 16 * kCols) +
         sizeof(float) * (kWarps * 16 * wide<HD>() + kWarps * 16 * kCols + 2 * kRows);
}

// dQ of one query tile: each warp owns 16 queries and visits every key tile they attend.
template <class E, int HD>
__global__ void __launch_bounds__(kThreads, 1)
    fused_attention_dq_kernel(Heads<const E> q, Heads<const E> k, Heads<const E> v, Heads<const E> dout,
                              const float* lse, const float* delta, Heads<E> dq, Problem pb) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  extern __shared__ __align__(128) unsigned char smem[];
  constexpr int W = wide<HD>();
  E* Qs = reinterpret_cast<E*>(smem);
  E* dOs = Qs + kRows * HD;
  E* Ks = dOs + kRows * HD;
  E* Vs = Ks + kCols * HD;
  E* dSs = Vs + kCols * HD;                                         // per warp [16][kCols]
  float* S1 = reinterpret_cast<float*>(dSs + kWarps * 16 * kCols);  // per warp [16][W]: S, then staging
  float* S2 = S1 + kWarps * 16 * W;                                 // per warp [16][kCols]: dP
  float* lse_s = S2 + kWarps * 16 * kCols;
  float* delta_s = lse_s + kRows;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t bh = blockIdx.x, qt = blockIdx.y, q0 = qt * kRows;
  const common::AttentionTiles tl = pb.tiles();
  const float ninf = -std::numeric_limits<float>::infinity();
  load_tile<E, HD>(Qs, q, bh, q0, kRows, pb.T, pb.D);
  load_tile<E, HD>(dOs, dout, bh, q0, kRows, pb.T, pb.Dv);
  load_row_stats(lse_s, delta_s, lse, delta, bh, q0, pb.T);
  E* dSw = dSs + warp * 16 * kCols;
  float* S1w = S1 + warp * 16 * W;
  float* S2w = S2 + warp * 16 * kCols;
  FragC dq_acc[HD / 16];
#pragma unroll
  for (int n = 0; n < HD / 16; ++n) wmma::fill_fragment(dq_acc[n], 0.f);
  const int64_t kend = tl.key_tile_end(qt);
  for (int64_t kt = 0; kt < kend; ++kt) {
    const int64_t k0 = kt * kCols;
    __syncthreads();
    load_tile<E, HD>(Ks, k, bh, k0, kCols, pb.S, pb.D);
    load_tile<E, HD>(Vs, v, bh, k0, kCols, pb.S, pb.Dv);
    __syncthreads();
    mul_bt<E, HD, kCols>(S1w, W, Qs + warp * 16 * HD, HD, Ks, HD);       // S = Q K^T
    mul_bt<E, HD, kCols>(S2w, kCols, dOs + warp * 16 * HD, HD, Vs, HD);  // dP = dO V^T
    __syncwarp();
    for (int i = lane; i < 16 * kCols; i += 32) {
      const int r = i / kCols, c = i % kCols;
      const int row = warp * 16 + r;
      const int64_t t = q0 + row, s = k0 + c;
      const float p = prob(masked_score(pb, tl, bh, t, s, S1w[r * W + c]), lse_s[row]);
      dSw[i] = to_e<E>(p * (S2w[i] - delta_s[row]));
    }
    __syncwarp();
    mul_add<E, kCols, HD>(dq_acc, dSw, kCols, Ks, HD);  // dQ += dS K
    __syncwarp();
  }
  write_rows<E, HD>(dq, bh, q0 + warp * 16, pb.T, pb.D, dq_acc, S1w, W, pb.scale);
#else
  __trap();
#endif
}

int head_tile(int64_t D, int64_t Dv) { return D <= 64 && Dv <= 64 ? 64 : 128; }

size_t max_smem(DType dt, int hd) {
  (void)dt;  // both 16-bit types take the same bytes
  return hd == 64 ? std::max({forward_smem<__nv_bfloat16, 64>(), dkdv_smem<__nv_bfloat16, 64>(),
                              dq_smem<__nv_bfloat16, 64>()})
                  : std::max({forward_smem<__nv_bfloat16, 128>(), dkdv_smem<__nv_bfloat16, 128>(),
                              dq_smem<__nv_bfloat16, 128>()});
}

template <class K>
void allow_smem(K kernel, size_t bytes) {
  STRATA_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)),
                    "fused attention: asking for ", bytes, " bytes of shared memory per block");
}

Problem problem_of(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, bool causal,
                   double scale) {
  return {q.size(2), k.size(2), q.size(3), v.size(3), float(scale), causal, mask_of(mask, q.size(1))};
}

void check_fused(const char* op, const Tensor& q, const Tensor& v, const Tensor& lse, const Tensor& mask) {
  STRATA_CHECK(lse.dtype() == DType::f32 && lse.is_contiguous(), TypeError, op,
               ": 16-bit attention keeps an f32 contiguous lse, got ", lse.str());
  STRATA_CHECK(!mask.defined() || mask.dtype() == DType::f32, TypeError, op,
               ": 16-bit attention takes an f32 additive mask, got ", mask.str());
  STRATA_CHECK(fused_attention_supported(q.device().index, q.dtype(), q.size(3), q.size(3)),
               NotImplementedError, op, ": no fused kernel for ", q.str(), " on cuda:", q.device().index);
}

template <class E, int HD>
void forward_as(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                const Problem& pb, int64_t BH) {
  constexpr size_t bytes = forward_smem<E, HD>();
  auto kernel = fused_attention_forward_kernel<E, HD>;
  allow_smem(kernel, bytes);
  const dim3 grid(unsigned(BH), unsigned(pb.tiles().query_tiles()));
  kernel<<<grid, kThreads, bytes, compute_stream()>>>(heads_of<const E>(q), heads_of<const E>(k),
                                                      heads_of<const E>(v), heads_of<E>(out),
                                                      static_cast<float*>(lse.data_ptr()), pb);
}

template <class E, int HD>
void backward_as(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout, const Tensor& q,
                 const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse, const Problem& pb,
                 int64_t BH, CudaBackend& be) {
  const int64_t rows = BH * pb.T;
  Tensor delta = be.empty({rows}, DType::f32, q.device().index);
  attention_delta_kernel<E><<<unsigned((rows + kWarps - 1) / kWarps), kThreads, 0, compute_stream()>>>(
      heads_of<const E>(dout), heads_of<const E>(out), static_cast<float*>(delta.data_ptr()), rows, pb.T,
      pb.Dv);
  STRATA_CUDA_CHECK_LAUNCH("fused attention backward (delta) of ", q.str());
  const float* l = static_cast<const float*>(lse.data_ptr());
  const float* d = static_cast<const float*>(delta.data_ptr());
  auto maybe = [](const Tensor& t) { return t.defined() ? heads_of<E>(t) : Heads<E>{nullptr, 0, 0, 0, 1}; };
  if (dk.defined() || dv.defined()) {
    constexpr size_t bytes = dkdv_smem<E, HD>();
    auto kernel = fused_attention_dkdv_kernel<E, HD>;
    allow_smem(kernel, bytes);
    const dim3 grid(unsigned(BH), unsigned(pb.tiles().key_tiles()));
    kernel<<<grid, kThreads, bytes, compute_stream()>>>(heads_of<const E>(q), heads_of<const E>(k),
                                                        heads_of<const E>(v), heads_of<const E>(dout), l, d,
                                                        maybe(dk), maybe(dv), pb);
    STRATA_CUDA_CHECK_LAUNCH("fused attention backward (dK, dV) of ", q.str());
  }
  if (dq.defined()) {
    constexpr size_t bytes = dq_smem<E, HD>();
    auto kernel = fused_attention_dq_kernel<E, HD>;
    allow_smem(kernel, bytes);
    const dim3 grid(unsigned(BH), unsigned(pb.tiles().query_tiles()));
    kernel<<<grid, kThreads, bytes, compute_stream()>>>(heads_of<const E>(q), heads_of<const E>(k),
                                                        heads_of<const E>(v), heads_of<const E>(dout), l, d,
                                                        heads_of<E>(dq), pb);
    STRATA_CUDA_CHECK_LAUNCH("fused attention backward (dQ) of ", q.str());
  }
}

// fn.template operator()<E, HD>() for the tensors' 16-bit type and the padded head dim.
template <class Fn>
void dispatch(DType dt, int hd, Fn&& fn) {
  if (dt == DType::bf16) {
    hd == 64 ? fn.template operator()<__nv_bfloat16, 64>() : fn.template operator()<__nv_bfloat16, 128>();
  } else {
    hd == 64 ? fn.template operator()<__half, 64>() : fn.template operator()<__half, 128>();
  }
}

}  // namespace

bool fused_attention_supported(int device, DType dtype, int64_t D, int64_t Dv) {
  if ((dtype != DType::bf16 && dtype != DType::f16) || D < 1 || Dv < 1 || D > 128 || Dv > 128) return false;
  int major = 0, optin = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return major >= 8 && size_t(optin) >= max_smem(dtype, head_tile(D, Dv));
}

void fused_attention_forward(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k,
                             const Tensor& v, const Tensor& mask, bool causal, double scale) {
  check_fused("attention", q, v, lse, mask);
  const Problem pb = problem_of(q, k, v, mask, causal, scale);
  const int64_t BH = q.size(0) * q.size(1);
  STRATA_CHECK(BH <= int64_t(INT32_MAX) && pb.tiles().query_tiles() <= 65535, ShapeError,
               "attention: ", q.str(), " has more heads or query tiles than one grid holds");
  dispatch(q.dtype(), head_tile(pb.D, pb.Dv),
           [&]<class E, int HD>() { forward_as<E, HD>(out, lse, q, k, v, pb, BH); });
  STRATA_CUDA_CHECK_LAUNCH("fused attention of ", q.str(), " x ", k.str());
}

void fused_attention_backward(CudaBackend& be, const Tensor& dq, const Tensor& dk, const Tensor& dv,
                              const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                              const Tensor& out, const Tensor& lse, const Tensor& mask, bool causal,
                              double scale) {
  check_fused("attention_backward", q, v, lse, mask);
  const Problem pb = problem_of(q, k, v, mask, causal, scale);
  const int64_t BH = q.size(0) * q.size(1);
  STRATA_CHECK(
      BH <= int64_t(INT32_MAX) && pb.tiles().query_tiles() <= 65535 && pb.tiles().key_tiles() <= 65535,
      ShapeError, "attention_backward: ", q.str(), " has more heads or tiles than one grid holds");
  dispatch(q.dtype(), head_tile(pb.D, pb.Dv),
           [&]<class E, int HD>() { backward_as<E, HD>(dq, dk, dv, dout, q, k, v, out, lse, pb, BH, be); });
}

}  // namespace strata::gpu
