// The CUDA message-passing kernels, the CPU's (ops/cpu/cpu_graph.cpp) on a GPU. The summing SpMM is
// edge-balanced (ops/common/spmm_chunks.h): a warp walks a chunk of 256 edges for 32 features, so a
// hub row is split over many warps and summed again in chunk order by a fix-up; its bits differ from
// the CPU's sequential sum only for rows that cross a chunk boundary, and are the same on every run.
// Max/min SpMM and its gathered gradient keep one thread per (row, feature) walking the row's edges
// in stored order, and the edge-wise dot one thread per (edge, head). The segment softmax and its
// backward fold each segment over the same edge chunks, one thread per (chunk, head). No atomics.
#include "ops/common/spmm_chunks.h"
#include "ops/cuda/cuda_backend.h"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_device_utils.cuh"

namespace strata::gpu {

namespace {

constexpr int64_t kSpmmChunk = 256;  // edges a warp walks
constexpr int kSpmmWarps = 4;        // chunks per block

// One warp per chunk of edges, a lane per feature (blockIdx.y picks 32 of them): rows inside the
// chunk are written, crossing rows leave their piece in partial[chunk][slot][F].
template <class T, class I, class W>
__global__ void spmm_chunk_kernel(T* out, T* partial, common::SpmmChunks ch, const I* idx, const T* w,
                                  const W* widx, const T* x, int64_t F, int64_t H) {
  const int64_t c = int64_t(blockIdx.x) * kSpmmWarps + threadIdx.x / 32;
  const int64_t f = int64_t(blockIdx.y) * 32 + threadIdx.x % 32;
  if (c >= ch.chunks() || f >= F) return;
  const int64_t h = f / (F / H);
  ch.walk<T>(
      c,
      [&](int64_t k) {
        const T v = x[int64_t(idx[k]) * F + f];
        return w ? w[(widx ? int64_t(widx[k]) : k) * H + h] * v : v;
      },
      [&](int64_t r, T s) { out[r * F + f] = s; },
      [&](int64_t r, int slot, T s) { partial[(c * 2 + slot) * F + f] = s; });
}

// The rows no chunk wrote: empty rows (zero) and rows crossing chunks (their pieces in chunk order).
template <class T>
__global__ void spmm_fixup_kernel(T* out, const T* partial, common::SpmmChunks ch, int64_t F) {
  STRATA_GRID_STRIDE(i, ch.R * F) {
    const int64_t r = i / F, f = i % F;
    if (ch.off[r + 1] == ch.off[r])
      out[i] = T(0);
    else if (ch.crosses(r))
      out[i] = ch.gather<T>(r, [&](int64_t c, int slot) { return partial[(c * 2 + slot) * F + f]; });
  }
}

template <class T, class I, class W>
__global__ void spmm_extreme_kernel(T* out, int64_t* arg, const int64_t* off, const I* idx, const W* widx,
                                    const T* x, int64_t R, int64_t F, bool minimum) {
  STRATA_GRID_STRIDE(i, R * F) {
    const int64_t r = i / F, f = i % F;
    T best = T(0);
    int64_t at = -1;
    for (int64_t k = off[r]; k < off[r + 1]; ++k) {
      const T v = x[int64_t(idx[k]) * F + f];
      // NaN propagates (the first one is kept), as on the CPU.
      if (at < 0 || (v != v && best == best) || (minimum ? v < best : v > best))
        best = v, at = widx ? int64_t(widx[k]) : k;
    }
    out[i] = best;
    arg[i] = at;
  }
}

template <class T, class P, class Q>
__global__ void spmm_extreme_backward_kernel(T* gx, const int64_t* off, const P* pos, const Q* rows,
                                             const int64_t* arg, const T* g, int64_t N, int64_t F) {
  STRATA_GRID_STRIDE(i, N * F) {
    const int64_t n = i / F, f = i % F;
    T acc = T(0);
    for (int64_t k = off[n]; k < off[n + 1]; ++k) {
      const int64_t r = int64_t(rows[k]);
      if (arg[r * F + f] == int64_t(pos[k])) acc += g[r * F + f];
    }
    gx[i] = acc;
  }
}

template <class T, class IA, class IB>
__global__ void sddmm_dot_kernel(T* out, const IA* ai, const T* a, const IB* bi, const T* b, int64_t E,
                                 int64_t F, int64_t H) {
  STRATA_GRID_STRIDE(i, E * H) {
    const int64_t k = i / H, h = i % H, C = F / H;
    const T* x = a + int64_t(ai[k]) * F + h * C;
    const T* y = b + int64_t(bi[k]) * F + h * C;
    T s = T(0);
    for (int64_t c = 0; c < C; ++c) s += x[c] * y[c];
    out[i] = s;
  }
}

// The segment softmax on the same edge chunks (SpmmChunks), one thread per (chunk, head): each
// segment's maximum and then its sum of exp(x - max) are folded per chunk and fixed up in chunk
// order, then every edge is normalized by its segment's. A hub segment is spread over many
// threads instead of walked three times by one.
enum class SegmentFold { Max, SumExp, Dot };

template <class T, SegmentFold Mode>
__global__ void segment_fold_kernel(T* rows, T* partial, common::SpmmChunks ch, const T* x, const T* y,
                                    const T* m, int64_t H) {
  STRATA_GRID_STRIDE(i, ch.chunks() * H) {
    const int64_t c = i / H, h = i % H;
    auto value = [&](int64_t k, int64_t r) -> T {
      if constexpr (Mode == SegmentFold::Max)
        return x[k * H + h];
      else if constexpr (Mode == SegmentFold::SumExp)
        return exp(x[k * H + h] - m[r * H + h]);
      else
        return x[k * H + h] * y[k * H + h];  // x: the gradient, y: the softmax
    };
    auto combine = [](T a, T v) -> T {
      if constexpr (Mode == SegmentFold::Max)
        return max(a, v);
      else
        return a + v;
    };
    const T init = Mode == SegmentFold::Max ? T(-INFINITY) : T(0);
    ch.walk_fold<T>(
        c, init, value, combine, [&](int64_t r, T a) { rows[r * H + h] = a; },
        [&](int64_t, int slot, T a) { partial[(c * 2 + slot) * H + h] = a; });
  }
}

template <class T, SegmentFold Mode>
__global__ void segment_fixup_kernel(T* rows, const T* partial, common::SpmmChunks ch, int64_t H) {
  STRATA_GRID_STRIDE(i, ch.R * H) {
    const int64_t r = i / H, h = i % H;
    if (!ch.crosses(r)) continue;
    auto combine = [](T a, T v) -> T {
      if constexpr (Mode == SegmentFold::Max)
        return max(a, v);
      else
        return a + v;
    };
    rows[i] = ch.gather_fold<T>(
        r, Mode == SegmentFold::Max ? T(-INFINITY) : T(0),
        [&](int64_t c, int slot) { return partial[(c * 2 + slot) * H + h]; }, combine);
  }
}

// y = exp(x - max) / sum (forward), or gs = y (g - dot) (backward: x = g, m = y, s = dot).
template <class T, bool Backward>
__global__ void segment_apply_kernel(T* out, common::SpmmChunks ch, const T* x, const T* m, const T* s,
                                     int64_t H) {
  STRATA_GRID_STRIDE(i, ch.chunks() * H) {
    const int64_t c = i / H, h = i % H;
    ch.for_each_edge(c, [&](int64_t k, int64_t r) {
      if constexpr (Backward)
        out[k * H + h] = m[k * H + h] * (x[k * H + h] - s[r * H + h]);
      else
        out[k * H + h] = exp(x[k * H + h] - m[r * H + h]) / s[r * H + h];
    });
  }
}

}  // namespace

void CudaBackend::spmm(const Tensor& out, const Tensor& offsets, const Tensor& indices, const Tensor& weights,
                       const Tensor& weight_index, const Tensor& x) {
  const int dev = check_on_device("spmm", {&out, &offsets, &indices, &weights, &weight_index, &x});
  const int64_t R = out.size(0), F = x.size(1);
  const int64_t H = weights.defined() && weights.dim() == 2 ? weights.size(1) : 1;
  STRATA_CHECK(H >= 1 && F % H == 0, ShapeError, "spmm: weights ", weights.str(),
               " must be [E] or [E, H] with H dividing ", F);
  if (R * F == 0) return;
  context(dev);
  DeviceGuard guard(dev);
  const common::SpmmChunks ch{offsets.data<int64_t>(), R, kSpmmChunk};
  // The rows' edges are positions in `indices`, so its length bounds their count: the grid is sized
  // by it without reading the offsets back (chunks past the last edge return at once).
  const int64_t chunks = (indices.numel() + kSpmmChunk - 1) / kSpmmChunk;
  with_float(x, "spmm", [&](auto tf) {
    using T = decltype(tf);
    const T* w = weights.defined() ? static_cast<const T*>(weights.data_ptr()) : nullptr;
    Tensor partial = empty({std::max<int64_t>(chunks, 1) * 2 * F}, x.dtype(), dev);
    T* part = static_cast<T*>(partial.data_ptr());
    with_index(indices, [&](auto idx) {
      auto launch = [&](auto widx) {
        if (chunks > 0) {
          const dim3 grid(unsigned((chunks + kSpmmWarps - 1) / kSpmmWarps), unsigned((F + 31) / 32));
          spmm_chunk_kernel<<<grid, 32 * kSpmmWarps, 0, compute_stream()>>>(
              static_cast<T*>(out.data_ptr()), part, ch, idx, w, widx, static_cast<const T*>(x.data_ptr()), F,
              H);
        }
        spmm_fixup_kernel<<<grid_for(R * F), kThreads, 0, compute_stream()>>>(static_cast<T*>(out.data_ptr()),
                                                                              part, ch, F);
      };
      if (weight_index.defined())
        with_index(weight_index, launch);
      else
        launch(static_cast<const int64_t*>(nullptr));
    });
  });
  STRATA_CUDA_CHECK_LAUNCH("spmm ", out.str());
}

void CudaBackend::spmm_extreme(const Tensor& out, const Tensor& arg, const Tensor& offsets,
                               const Tensor& indices, const Tensor& weight_index, const Tensor& x,
                               bool minimum) {
  const int dev = check_on_device("spmm_extreme", {&out, &arg, &offsets, &indices, &weight_index, &x});
  const int64_t R = out.size(0), F = x.size(1);
  if (R * F == 0) return;
  context(dev);
  DeviceGuard guard(dev);
  with_float(x, "spmm_extreme", [&](auto tf) {
    using T = decltype(tf);
    with_index(indices, [&](auto idx) {
      auto launch = [&](auto widx) {
        spmm_extreme_kernel<<<grid_for(R * F), kThreads, 0, compute_stream()>>>(
            static_cast<T*>(out.data_ptr()), arg.data<int64_t>(), offsets.data<int64_t>(), idx, widx,
            static_cast<const T*>(x.data_ptr()), R, F, minimum);
      };
      if (weight_index.defined())
        with_index(weight_index, launch);
      else
        launch(static_cast<const int64_t*>(nullptr));
    });
  });
  STRATA_CUDA_CHECK_LAUNCH("spmm_extreme ", out.str());
}

void CudaBackend::spmm_extreme_backward(const Tensor& grad_x, const Tensor& offsets, const Tensor& positions,
                                        const Tensor& rows, const Tensor& arg, const Tensor& grad_out) {
  const int dev =
      check_on_device("spmm_extreme_backward", {&grad_x, &offsets, &positions, &rows, &arg, &grad_out});
  const int64_t N = grad_x.size(0), F = grad_out.size(1);
  if (N * F == 0) return;
  context(dev);
  DeviceGuard guard(dev);
  with_float(grad_out, "spmm_extreme_backward", [&](auto tf) {
    using T = decltype(tf);
    with_index(positions, [&](auto pos) {
      with_index(rows, [&](auto rw) {
        spmm_extreme_backward_kernel<<<grid_for(N * F), kThreads, 0, compute_stream()>>>(
            static_cast<T*>(grad_x.data_ptr()), offsets.data<int64_t>(), pos, rw, arg.data<int64_t>(),
            static_cast<const T*>(grad_out.data_ptr()), N, F);
      });
    });
  });
  STRATA_CUDA_CHECK_LAUNCH("spmm_extreme_backward ", grad_x.str());
}

void CudaBackend::sddmm_dot(const Tensor& out, const Tensor& a_index, const Tensor& a, const Tensor& b_index,
                            const Tensor& b) {
  const int dev = check_on_device("sddmm_dot", {&out, &a_index, &a, &b_index, &b});
  const int64_t E = out.size(0), F = a.size(1), H = out.dim() == 2 ? out.size(1) : 1;
  STRATA_CHECK(H >= 1 && F % H == 0, ShapeError, "sddmm_dot: out ", out.str(),
               " must be [E] or [E, H] with H dividing ", F);
  if (E * H == 0) return;
  context(dev);
  DeviceGuard guard(dev);
  with_float(a, "sddmm_dot", [&](auto tf) {
    using T = decltype(tf);
    with_index(a_index, [&](auto ai) {
      with_index(b_index, [&](auto bi) {
        sddmm_dot_kernel<<<grid_for(E * H), kThreads, 0, compute_stream()>>>(
            static_cast<T*>(out.data_ptr()), ai, static_cast<const T*>(a.data_ptr()), bi,
            static_cast<const T*>(b.data_ptr()), E, F, H);
      });
    });
  });
  STRATA_CUDA_CHECK_LAUNCH("sddmm_dot ", out.str());
}

void CudaBackend::segment_softmax(const Tensor& out, const Tensor& offsets, const Tensor& scores) {
  const int dev = check_on_device("segment_softmax", {&out, &offsets, &scores});
  const int64_t S = offsets.numel() - 1, H = scores.size(0) > 0 ? scores.numel() / scores.size(0) : 1;
  if (S * H == 0 || scores.numel() == 0) return;
  context(dev);
  DeviceGuard guard(dev);
  const common::SpmmChunks ch{offsets.data<int64_t>(), S, kSpmmChunk};
  const int64_t chunks = (scores.size(0) + kSpmmChunk - 1) / kSpmmChunk;  // edges <= scores' rows
  with_float(scores, "segment_softmax", [&](auto tf) {
    using T = decltype(tf);
    Tensor m = empty({S * H}, scores.dtype(), dev), sum = empty({S * H}, scores.dtype(), dev);
    Tensor partial = empty({chunks * 2 * H}, scores.dtype(), dev);
    T *mp = static_cast<T*>(m.data_ptr()), *sp = static_cast<T*>(sum.data_ptr()),
      *pp = static_cast<T*>(partial.data_ptr());
    const T* x = static_cast<const T*>(scores.data_ptr());
    segment_fold_kernel<T, SegmentFold::Max>
        <<<grid_for(chunks * H), kThreads, 0, compute_stream()>>>(mp, pp, ch, x, nullptr, nullptr, H);
    segment_fixup_kernel<T, SegmentFold::Max>
        <<<grid_for(S * H), kThreads, 0, compute_stream()>>>(mp, pp, ch, H);
    segment_fold_kernel<T, SegmentFold::SumExp>
        <<<grid_for(chunks * H), kThreads, 0, compute_stream()>>>(sp, pp, ch, x, nullptr, mp, H);
    segment_fixup_kernel<T, SegmentFold::SumExp>
        <<<grid_for(S * H), kThreads, 0, compute_stream()>>>(sp, pp, ch, H);
    segment_apply_kernel<T, false><<<grid_for(chunks * H), kThreads, 0, compute_stream()>>>(
        static_cast<T*>(out.data_ptr()), ch, x, mp, sp, H);
  });
  STRATA_CUDA_CHECK_LAUNCH("segment_softmax ", out.str());
}

void CudaBackend::segment_softmax_backward(const Tensor& grad_scores, const Tensor& offsets,
                                           const Tensor& grad_out, const Tensor& out) {
  const int dev = check_on_device("segment_softmax_backward", {&grad_scores, &offsets, &grad_out, &out});
  const int64_t S = offsets.numel() - 1, H = out.size(0) > 0 ? out.numel() / out.size(0) : 1;
  if (S * H == 0 || out.numel() == 0) return;
  context(dev);
  DeviceGuard guard(dev);
  const common::SpmmChunks ch{offsets.data<int64_t>(), S, kSpmmChunk};
  const int64_t chunks = (out.size(0) + kSpmmChunk - 1) / kSpmmChunk;
  with_float(out, "segment_softmax_backward", [&](auto tf) {
    using T = decltype(tf);
    Tensor dot = empty({S * H}, out.dtype(), dev), partial = empty({chunks * 2 * H}, out.dtype(), dev);
    T *dp = static_cast<T*>(dot.data_ptr()), *pp = static_cast<T*>(partial.data_ptr());
    const T *g = static_cast<const T*>(grad_out.data_ptr()), *y = static_cast<const T*>(out.data_ptr());
    segment_fold_kernel<T, SegmentFold::Dot>
        <<<grid_for(chunks * H), kThreads, 0, compute_stream()>>>(dp, pp, ch, g, y, nullptr, H);
    segment_fixup_kernel<T, SegmentFold::Dot>
        <<<grid_for(S * H), kThreads, 0, compute_stream()>>>(dp, pp, ch, H);
    segment_apply_kernel<T, true><<<grid_for(chunks * H), kThreads, 0, compute_stream()>>>(
        static_cast<T*>(grad_scores.data_ptr()), ch, g, y, dp, H);
  });
  STRATA_CUDA_CHECK_LAUNCH("segment_softmax_backward ", out.str());
}

}  // namespace strata::gpu
