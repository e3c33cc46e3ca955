// CPU relational GEMMs (Backend::segment_mm, segment_mm_weight_grad). Rows go in fixed tiles: each
// tile's rows are gathered (and scaled) into a packed block and multiplied by its segment's matrix
// with a single-threaded GEMM inside the OpenMP loop over tiles. Scattered rows are added to the
// output in increasing row order with the columns split over threads, and the weight gradient sums
// per-tile partial products in tile order: the same bits for any thread count, no atomics.
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <vector>

#include "ops/common/index_rows.h"
#include "ops/cpu/cpu_backend.h"
#include "strata/config.h"

#if STRATA_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif

namespace strata::cpu {

namespace {

constexpr int64_t kTile = 128;  // rows per GEMM
constexpr int64_t kWave = 32;   // tiles computed before their rows are scattered or summed

// C[M, N] = op(A) @ op(B) + beta * C, all row-major; ta / tb: use the transpose of the stored
// matrix. Single-threaded when called inside an OpenMP region (OpenBLAS and oneDNN check).
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
          int64_t ldb, float beta, float* C, int64_t ldc) {
#if STRATA_HAVE_DNNL
  dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
#else
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(M), int(N),
              int(K), 1.0f, A, int(lda), B, int(ldb), beta, C, int(ldc));
#endif
}

void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const double* A, int64_t lda, const double* B,
          int64_t ldb, double beta, double* C, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(M), int(N),
              int(K), 1.0, A, int(lda), B, int(ldb), beta, C, int(ldc));
}

using Rows = common::IndexRows;

struct Tile {
  int64_t seg, begin, end;
};

// offsets as host int64, checked: from 0, non-decreasing.
std::vector<int64_t> host_offsets(const char* op, const Tensor& offsets) {
  STRATA_CHECK(offsets.defined() && offsets.dim() == 1 && offsets.dtype() == DType::i64 &&
                   offsets.numel() >= 1 && offsets.device().is_cpu(),
               TypeError, op, ": offsets must be a CPU i64 [S + 1] tensor, got ",
               offsets.defined() ? offsets.str() : std::string("an undefined tensor"));
  std::vector<int64_t> off = offsets.contiguous().to_vector<int64_t>();
  STRATA_CHECK(off.front() == 0, ValueError, op, ": offsets must start at 0, not ", off.front());
  for (size_t s = 1; s < off.size(); ++s)
    STRATA_CHECK(off[s] >= off[s - 1], ValueError, op, ": offsets[", s, "] = ", off[s], " is below offsets[",
                 s - 1, "] = ", off[s - 1]);
  return off;
}

std::vector<Tile> tiles_of(const std::vector<int64_t>& off) {
  std::vector<Tile> tiles;
  for (size_t s = 0; s + 1 < off.size(); ++s)
    for (int64_t b = off[s]; b < off[s + 1]; b += kTile)
      tiles.push_back({int64_t(s), b, std::min(b + kTile, off[s + 1])});
  return tiles;
}

// Rows [t.begin, t.end) of scale[i] * src[index[i]] packed into buf [rows, D].
template <class T>
void pack(T* buf, const T* src, int64_t D, const Tile& t, Rows index, const T* scale) {
  for (int64_t i = t.begin; i < t.end; ++i) {
    const T* from = src + index[i] * D;
    T* to = buf + (i - t.begin) * D;
    if (scale) {
      const T c = scale[i];
      for (int64_t d = 0; d < D; ++d) to[d] = c * from[d];
    } else {
      std::copy(from, from + D, to);
    }
  }
}

// Weight [S, K, N] as row-major matrices: unit stride along N (ld = stride 1) or, transposed,
// along K (ld = stride 2).
struct WeightLayout {
  bool transposed;
  int64_t ld;
};

bool weight_layout(const Tensor& w, WeightLayout* l) {
  const int64_t K = w.size(1), N = w.size(2);
  if (w.stride(2) == 1 || N <= 1) {
    const int64_t ld = K <= 1 ? std::max<int64_t>(N, 1) : w.stride(1);
    if (ld >= std::max<int64_t>(N, 1)) return *l = {false, ld}, true;
  }
  if (w.stride(1) == 1 || K <= 1) {
    const int64_t ld = N <= 1 ? std::max<int64_t>(K, 1) : w.stride(2);
    if (ld >= std::max<int64_t>(K, 1)) return *l = {true, ld}, true;
  }
  return false;
}

template <class T>
void segment_mm_typed(const Tensor& out, const Tensor& x, Rows gather, const Tensor& weight,
                      const std::vector<int64_t>& off, Rows scatter, const T* scale, bool accumulate) {
  const int64_t K = x.size(1), N = out.size(1);
  WeightLayout wl;
  Tensor w = weight;
  if (!weight_layout(w, &wl)) weight_layout(w = weight.contiguous(), &wl);
  const T* wp = static_cast<const T*>(w.data_ptr());
  const T* xp = static_cast<const T*>(x.data_ptr());
  T* op = static_cast<T*>(out.data_ptr());
  const std::vector<Tile> tiles = tiles_of(off);
  const int64_t nt = int64_t(tiles.size());
  const bool packed = gather.defined() || scale;
  const T beta = accumulate ? T(1) : T(0);
  const int64_t lda = std::max<int64_t>(K, 1);
  if (!scatter.defined()) {  // each tile writes its own rows
#pragma omp parallel
    {
      std::vector<T> buf(packed ? size_t(kTile * K) : 0);
#pragma omp for schedule(dynamic, 1)
      for (int64_t j = 0; j < nt; ++j) {
        const Tile& t = tiles[size_t(j)];
        const T* a = xp + t.begin * K;
        if (packed) pack(buf.data(), xp, K, t, gather, scale), a = buf.data();
        gemm(false, wl.transposed, t.end - t.begin, N, K, a, lda, wp + t.seg * w.stride(0), wl.ld, beta,
             op + t.begin * N, N);
      }
    }
    return;
  }
  std::vector<T> results(size_t(std::min(nt, kWave) * kTile * N));
  for (int64_t w0 = 0; w0 < nt; w0 += kWave) {
    const int64_t w1 = std::min(nt, w0 + kWave);
#pragma omp parallel
    {
      std::vector<T> buf(size_t(kTile * K));
#pragma omp for schedule(dynamic, 1)
      for (int64_t j = w0; j < w1; ++j) {
        const Tile& t = tiles[size_t(j)];
        const T* a = xp + t.begin * K;
        if (packed) pack(buf.data(), xp, K, t, gather, scale), a = buf.data();
        gemm(false, wl.transposed, t.end - t.begin, N, K, a, lda, wp + t.seg * w.stride(0), wl.ld, T(0),
             results.data() + (j - w0) * kTile * N, N);
      }
      // Scatter in increasing row order, each thread owning a slice of the columns.
      const int64_t nth = omp_get_num_threads(), me = omp_get_thread_num();
      const int64_t c0 = N * me / nth, c1 = N * (me + 1) / nth;
      for (int64_t j = w0; j < w1; ++j) {
        const Tile& t = tiles[size_t(j)];
        for (int64_t i = t.begin; i < t.end; ++i) {
          const T* from = results.data() + ((j - w0) * kTile + (i - t.begin)) * N;
          T* to = op + scatter[i] * N;
          if (accumulate)
            for (int64_t c = c0; c < c1; ++c) to[c] += from[c];
          else
            for (int64_t c = c0; c < c1; ++c) to[c] = from[c];
        }
      }
    }
  }
}

template <class T>
void weight_grad_typed(const Tensor& grad_w, const Tensor& x, Rows gather, const Tensor& grad_y, Rows scatter,
                       const T* scale, const std::vector<int64_t>& off) {
  const int64_t K = x.size(1), N = grad_y.size(1), KN = K * N;
  const T* xp = static_cast<const T*>(x.data_ptr());
  const T* gp = static_cast<const T*>(grad_y.data_ptr());
  T* wp = static_cast<T*>(grad_w.data_ptr());
  const std::vector<Tile> tiles = tiles_of(off);
  const int64_t nt = int64_t(tiles.size());
  const bool pack_x = gather.defined() || scale, pack_g = scatter.defined();
  std::vector<T> partial(size_t(std::min(nt, kWave) * KN));
  for (int64_t w0 = 0; w0 < nt; w0 += kWave) {
    const int64_t w1 = std::min(nt, w0 + kWave);
#pragma omp parallel
    {
      std::vector<T> bx(pack_x ? size_t(kTile * K) : 0), bg(pack_g ? size_t(kTile * N) : 0);
#pragma omp for schedule(dynamic, 1)
      for (int64_t j = w0; j < w1; ++j) {
        const Tile& t = tiles[size_t(j)];
        const T* a = xp + t.begin * K;
        const T* b = gp + t.begin * N;
        if (pack_x) pack(bx.data(), xp, K, t, gather, scale), a = bx.data();
        if (pack_g) pack(bg.data(), gp, N, t, scatter, static_cast<const T*>(nullptr)), b = bg.data();
        gemm(true, false, K, N, t.end - t.begin, a, K, b, N, T(0), partial.data() + (j - w0) * KN, N);
      }
      // Sum the partials into their segments in tile order, each thread owning a slice of K x N.
      const int64_t nth = omp_get_num_threads(), me = omp_get_thread_num();
      const int64_t e0 = KN * me / nth, e1 = KN * (me + 1) / nth;
      for (int64_t j = w0; j < w1; ++j) {
        const T* from = partial.data() + (j - w0) * KN;
        T* to = wp + tiles[size_t(j)].seg * KN;
        for (int64_t e = e0; e < e1; ++e) to[e] += from[e];
      }
    }
  }
}

void check_rows(const char* op, const char* what, const Tensor& index, int64_t m, int64_t limit) {
  if (!index.defined()) return;
  STRATA_CHECK(index.dim() == 1 && index.numel() == m &&
                   (index.dtype() == DType::i32 || index.dtype() == DType::i64) && index.is_contiguous(),
               TypeError, op, ": ", what, " must be a contiguous i32 or i64 [", m, "], got ", index.str());
  const Rows r(index);
  for (int64_t i = 0; i < m; ++i)
    STRATA_CHECK(r[i] >= 0 && r[i] < limit, IndexError, op, ": ", what, "[", i, "] = ", r[i],
                 " is outside [0, ", limit, ")");
}

}  // namespace

void CpuBackend::segment_mm(const Tensor& out, const Tensor& x, const Tensor& gather, const Tensor& weight,
                            const Tensor& offsets, const Tensor& scatter, const Tensor& scale,
                            bool accumulate) {
  const char* op = "segment_mm";
  STRATA_CHECK(x.dim() == 2 && out.dim() == 2 && weight.dim() == 3 && weight.size(1) == x.size(1) &&
                   weight.size(2) == out.size(1) && weight.size(0) == offsets.numel() - 1,
               ShapeError, op, ": x ", x.str(), " @ weight ", weight.str(), " -> out ", out.str(),
               " need x [*, K], weight [S, K, N] with S + 1 = ", offsets.numel(), " offsets, out [*, N]");
  const std::vector<int64_t> off = host_offsets(op, offsets);
  const int64_t M = off.back();
  check_rows(op, "gather", gather, M, x.size(0));
  check_rows(op, "scatter", scatter, M, out.size(0));
  STRATA_CHECK(gather.defined() || x.size(0) == M, ShapeError, op, ": x ", x.str(), " needs ", M,
               " rows without a gather index");
  STRATA_CHECK(scatter.defined() || out.size(0) == M, ShapeError, op, ": out ", out.str(), " needs ", M,
               " rows without a scatter index");
  STRATA_CHECK(!scale.defined() || (scale.dim() == 1 && scale.numel() == M), ShapeError, op, ": scale ",
               scale.str(), " must be [", M, "]");
  const DType dt = out.dtype();
  STRATA_CHECK(
      is_floating(dt) && x.dtype() == dt && weight.dtype() == dt && (!scale.defined() || scale.dtype() == dt),
      TypeError, op, ": x ", x.str(), ", weight ", weight.str(), ", out ", out.str(),
      scale.defined() ? ", scale " + scale.str() : std::string(), " must share one floating dtype");
  STRATA_CHECK(out.is_contiguous() && x.is_contiguous(), ValueError, op, ": x ", x.str(), " and out ",
               out.str(), " must be contiguous");
  if (M == 0 || out.size(1) == 0) return;
  if (dt != DType::f32 && dt != DType::f64) {  // 16-bit: computed in f32
    Tensor o32 = contiguous_as(out, DType::f32);
    segment_mm(o32, contiguous_as(x, DType::f32), gather, contiguous_as(weight, DType::f32), offsets, scatter,
               scale.defined() ? contiguous_as(scale, DType::f32) : Tensor(), accumulate);
    copy(out, o32);
    return;
  }
  Tensor sc = scale.defined() ? scale.contiguous() : Tensor();
  if (dt == DType::f32)
    segment_mm_typed<float>(out, x, Rows(gather), weight, off, Rows(scatter),
                            sc.defined() ? sc.data<float>() : nullptr, accumulate);
  else
    segment_mm_typed<double>(out, x, Rows(gather), weight, off, Rows(scatter),
                             sc.defined() ? sc.data<double>() : nullptr, accumulate);
}

void CpuBackend::segment_mm_weight_grad(const Tensor& grad_weight, const Tensor& x, const Tensor& gather,
                                        const Tensor& grad_y, const Tensor& scatter, const Tensor& scale,
                                        const Tensor& offsets, bool accumulate) {
  const char* op = "segment_mm_weight_grad";
  STRATA_CHECK(
      x.dim() == 2 && grad_y.dim() == 2 && grad_weight.dim() == 3 && grad_weight.size(1) == x.size(1) &&
          grad_weight.size(2) == grad_y.size(1) && grad_weight.size(0) == offsets.numel() - 1,
      ShapeError, op, ": x ", x.str(), ", grad_y ", grad_y.str(), " -> grad_weight ", grad_weight.str(),
      " need x [*, K], grad_y [*, N], grad_weight [S, K, N] with S + 1 = ", offsets.numel(), " offsets");
  const std::vector<int64_t> off = host_offsets(op, offsets);
  const int64_t M = off.back();
  check_rows(op, "gather", gather, M, x.size(0));
  check_rows(op, "scatter", scatter, M, grad_y.size(0));
  STRATA_CHECK(gather.defined() || x.size(0) == M, ShapeError, op, ": x ", x.str(), " needs ", M,
               " rows without a gather index");
  STRATA_CHECK(scatter.defined() || grad_y.size(0) == M, ShapeError, op, ": grad_y ", grad_y.str(), " needs ",
               M, " rows without a scatter index");
  STRATA_CHECK(!scale.defined() || (scale.dim() == 1 && scale.numel() == M), ShapeError, op, ": scale ",
               scale.str(), " must be [", M, "]");
  const DType dt = grad_weight.dtype();
  STRATA_CHECK(
      is_floating(dt) && x.dtype() == dt && grad_y.dtype() == dt && (!scale.defined() || scale.dtype() == dt),
      TypeError, op, ": x ", x.str(), ", grad_y ", grad_y.str(), ", grad_weight ", grad_weight.str(),
      " must share one floating dtype");
  STRATA_CHECK(grad_weight.is_contiguous() && x.is_contiguous() && grad_y.is_contiguous(), ValueError, op,
               ": x, grad_y and grad_weight must be contiguous");
  if (dt != DType::f32 && dt != DType::f64) {
    Tensor g32 = contiguous_as(grad_weight, DType::f32);
    segment_mm_weight_grad(g32, contiguous_as(x, DType::f32), gather, contiguous_as(grad_y, DType::f32),
                           scatter, scale.defined() ? contiguous_as(scale, DType::f32) : Tensor(), offsets,
                           accumulate);
    copy(grad_weight, g32);
    return;
  }
  if (!accumulate) fill(grad_weight, 0.0);
  if (M == 0 || grad_weight.numel() == 0) return;
  Tensor sc = scale.defined() ? scale.contiguous() : Tensor();
  if (dt == DType::f32)
    weight_grad_typed<float>(grad_weight, x, Rows(gather), grad_y, Rows(scatter),
                             sc.defined() ? sc.data<float>() : nullptr, off);
  else
    weight_grad_typed<double>(grad_weight, x, Rows(gather), grad_y, Rows(scatter),
                              sc.defined() ? sc.data<double>() : nullptr, off);
}

}  // namespace strata::cpu
