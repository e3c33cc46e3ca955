// CPU fused attention (FlashAttention-2 style tiling, Dao 2023): forward keeps an online
// softmax per query block and saves only the row log-sum-exp; backward recomputes the
// probabilities block by block. Memory is linear in sequence length. Parallel over (b, h)
// so every output element is written by one thread in a fixed order (deterministic).
#define EIGEN_DONT_PARALLELIZE
#include <Eigen/Core>

#include <cmath>
#include <limits>

#include "ops/cpu/cpu_backend.h"
#include "ops/cpu/cpu_vec_math.h"

namespace strata::cpu {

namespace {

constexpr int64_t kBlockQ = 64, kBlockK = 64;

template <class T>
using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
// Row-major blocks whose rows are `stride` elements apart (q/k/v may be head views of a packed
// [B, T, 3C] projection, out/grads head views of [B, T, C]).
template <class T>
using CMap = Eigen::Map<const Mat<T>, 0, Eigen::OuterStride<>>;
template <class T>
using MMap = Eigen::Map<Mat<T>, 0, Eigen::OuterStride<>>;

// A 4-D [B, H, T, D] tensor with unit stride along D: the first row of (b, h) and the row stride.
template <class T>
struct Heads {
  T* base;
  int64_t sb, sh, st;
  explicit Heads(const Tensor& t)
      : base(static_cast<T*>(t.data_ptr())), sb(t.stride(0)), sh(t.stride(1)), st(t.stride(2)) {}
  T* at(int64_t b, int64_t h, int64_t t) const { return base + b * sb + h * sh + t * st; }
};


// Additive mask and causal mask applied to a score block S[r, c] for queries q0.. and keys k0..
template <class T>
void mask_scores(Mat<T>& S, const Tensor& mask, int64_t b, int64_t h, int64_t q0, int64_t k0, bool causal) {
  const T ninf = -std::numeric_limits<T>::infinity();
  if (mask.defined()) {
    const T* m = mask.data<T>();
    const int64_t s0 = mask.stride(0), s1 = mask.stride(1), s2 = mask.stride(2), s3 = mask.stride(3);
    for (int64_t r = 0; r < S.rows(); ++r)
      for (int64_t c = 0; c < S.cols(); ++c) S(r, c) += m[b * s0 + h * s1 + (q0 + r) * s2 + (k0 + c) * s3];
  }
  if (causal)
    for (int64_t r = 0; r < S.rows(); ++r)
      for (int64_t c = std::max<int64_t>(0, q0 + r + 1 - k0); c < S.cols(); ++c) S(r, c) = ninf;
}

template <class T>
void attention_fwd(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                   const Tensor& mask, bool causal, T scale) {
  const int64_t B = q.size(0), H = q.size(1), Tq = q.size(2), D = q.size(3), S = k.size(2), Dv = v.size(3);
  const T ninf = -std::numeric_limits<T>::infinity();
  const Heads<T> hq(q), hk(k), hv(v), ho(out);
#pragma omp parallel for schedule(dynamic) collapse(2) if (B * H * Tq * S * D > (int64_t(1) << 18))
  for (int64_t bh = 0; bh < B * H; ++bh) {
    for (int64_t q0 = 0; q0 < Tq; q0 += kBlockQ) {
      const int64_t b = bh / H, h = bh % H;
      const int64_t rows = std::min(kBlockQ, Tq - q0);
      CMap<T> Q(hq.at(b, h, q0), rows, D, Eigen::OuterStride<>(hq.st));
      Mat<T> acc = Mat<T>::Zero(rows, Dv);
      Eigen::Matrix<T, Eigen::Dynamic, 1> m = Eigen::Matrix<T, Eigen::Dynamic, 1>::Constant(rows, ninf);
      Eigen::Matrix<T, Eigen::Dynamic, 1> l = Eigen::Matrix<T, Eigen::Dynamic, 1>::Zero(rows);
      const int64_t k_end = causal ? std::min(S, q0 + rows) : S;
      Mat<T> Sc;
      for (int64_t k0 = 0; k0 < k_end; k0 += kBlockK) {
        const int64_t cols = std::min(kBlockK, S - k0);
        CMap<T> K(hk.at(b, h, k0), cols, D, Eigen::OuterStride<>(hk.st));
        CMap<T> V(hv.at(b, h, k0), cols, Dv, Eigen::OuterStride<>(hv.st));
        Sc.noalias() = (Q * K.transpose()) * scale;
        mask_scores(Sc, mask, b, h, q0, k0, causal);
        for (int64_t r = 0; r < rows; ++r) {
          T mx = std::max(m(r), Sc.row(r).maxCoeff());
          if (mx == ninf) {  // everything masked so far
            Sc.row(r).setZero();
            continue;
          }
          T corr = exp_nonpos(m(r) - mx);
          const T sum = T(exp_shifted_sum(&Sc(r, 0), cols, mx));  // vectorized (cpu_vec_math.h)
          l(r) = l(r) * corr + sum;
          acc.row(r) *= corr;
          m(r) = mx;
        }
        acc.noalias() += Sc * V;
      }
      MMap<T> O(ho.at(b, h, q0), rows, Dv, Eigen::OuterStride<>(ho.st));
      T* L = lse.data<T>() + bh * Tq + q0;
      for (int64_t r = 0; r < rows; ++r) {
        if (l(r) > 0) {
          O.row(r) = acc.row(r) / l(r);
          L[r] = m(r) + std::log(l(r));
        } else {  // fully masked row: zero output, and backward sends no gradient
          O.row(r).setZero();
          L[r] = ninf;
        }
      }
    }
  }
}

template <class T>
void attention_bwd(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout, const Tensor& q,
                   const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse, const Tensor& mask,
                   bool causal, T scale) {
  const int64_t B = q.size(0), H = q.size(1), Tq = q.size(2), D = q.size(3), S = k.size(2), Dv = v.size(3);
  const T ninf = -std::numeric_limits<T>::infinity();
  const Heads<T> hq(q), hk(k), hv(v), ho(out), hdo(dout), hdq(dq), hdk(dk), hdv(dv);
#pragma omp parallel for schedule(dynamic) if (B * H * Tq * S * D > (int64_t(1) << 18))
  for (int64_t bh = 0; bh < B * H; ++bh) {
    const int64_t b = bh / H, h = bh % H;
    CMap<T> O(ho.at(b, h, 0), Tq, Dv, Eigen::OuterStride<>(ho.st));
    CMap<T> dO(hdo.at(b, h, 0), Tq, Dv, Eigen::OuterStride<>(hdo.st));
    const T* L = lse.data<T>() + bh * Tq;
    Eigen::Matrix<T, Eigen::Dynamic, 1> Drow = (dO.cwiseProduct(O)).rowwise().sum();
    MMap<T> dQ(hdq.at(b, h, 0), Tq, D, Eigen::OuterStride<>(hdq.st));
    dQ.setZero();
    Mat<T> P, dS;
    for (int64_t k0 = 0; k0 < S; k0 += kBlockK) {
      const int64_t cols = std::min(kBlockK, S - k0);
      CMap<T> K(hk.at(b, h, k0), cols, D, Eigen::OuterStride<>(hk.st));
      CMap<T> V(hv.at(b, h, k0), cols, Dv, Eigen::OuterStride<>(hv.st));
      Mat<T> dK = Mat<T>::Zero(cols, D), dV = Mat<T>::Zero(cols, Dv);
      const int64_t q_begin = causal ? (k0 / kBlockQ) * kBlockQ : 0;
      for (int64_t q0 = q_begin; q0 < Tq; q0 += kBlockQ) {
        const int64_t rows = std::min(kBlockQ, Tq - q0);
        CMap<T> Q(hq.at(b, h, q0), rows, D, Eigen::OuterStride<>(hq.st));
        P.noalias() = (Q * K.transpose()) * scale;
        mask_scores(P, mask, b, h, q0, k0, causal);
        for (int64_t r = 0; r < rows; ++r) {
          const T lr = L[q0 + r];
          T* row = &P(r, 0);
          if (lr == ninf) {
            for (int64_t c = 0; c < cols; ++c) row[c] = T(0);
            continue;
          }
          scaled_exp_shifted(row, row, cols, lr, T(1));  // exp(-inf) = 0
        }
        auto dOb = dO.middleRows(q0, rows);
        dV.noalias() += P.transpose() * dOb;
        dS.noalias() = dOb * V.transpose();
        for (int64_t r = 0; r < rows; ++r) dS.row(r) = P.row(r).cwiseProduct((dS.row(r).array() - Drow(q0 + r)).matrix());
        dQ.middleRows(q0, rows).noalias() += (dS * K) * scale;
        dK.noalias() += (dS.transpose() * Q) * scale;
      }
      MMap<T>(hdk.at(b, h, k0), cols, D, Eigen::OuterStride<>(hdk.st)) = dK;
      MMap<T>(hdv.at(b, h, k0), cols, Dv, Eigen::OuterStride<>(hdv.st)) = dV;
    }
  }
}

void check_attention_inputs(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask) {
  for (const Tensor* t : {&q, &k, &v})
    STRATA_CHECK(t->dim() == 4 && (t->dtype() == DType::f32 || t->dtype() == DType::f64) &&
                     (t->stride(3) == 1 || t->size(3) <= 1),
                 TypeError, "attention: needs 4-D f32/f64 views with unit stride along the last dim, got ", t->str());
  STRATA_CHECK(!mask.defined() || (mask.dim() == 4 && mask.dtype() == q.dtype()), TypeError,
               "attention: mask must be a 4-D additive tensor of the inputs' dtype, got ", mask.str());
}

}  // namespace

void CpuBackend::attention(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                           const Tensor& mask, bool causal, double scale) {
  check_attention_inputs(q, k, v, mask);
  if (q.dtype() == DType::f32) attention_fwd<float>(out, lse, q, k, v, mask, causal, float(scale));
  else attention_fwd<double>(out, lse, q, k, v, mask, causal, scale);
}

void CpuBackend::attention_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout,
                                    const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                                    const Tensor& lse, const Tensor& mask, bool causal, double scale) {
  check_attention_inputs(q, k, v, mask);
  if (q.dtype() == DType::f32) attention_bwd<float>(dq, dk, dv, dout, q, k, v, out, lse, mask, causal, float(scale));
  else attention_bwd<double>(dq, dk, dv, dout, q, k, v, out, lse, mask, causal, scale);
}

}  // namespace strata::cpu
