// Double-precision reference loops for convolution, batch norm and pooling (NCHW), written
// straight from the definitions for the conformance harness and the conv tests.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>

#include "support/op_reference.h"

namespace strata::testing::ref {

struct ConvGeom {
  int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, groups = 1;
};

// y[n, k, p, q] = b[k] + sum_{c in group(k), r, s} x[n, c, p sh - ph + r dh, q sw - pw + s dw] w[k, c', r, s]
inline Ref conv2d(const Ref& x, const Ref& w, const Ref* b, ConvGeom g) {
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t K = w.shape[0], Cg = w.shape[1], R = w.shape[2], S = w.shape[3], Kg = K / g.groups;
  const int64_t P = (H + 2 * g.ph - g.dh * (R - 1) - 1) / g.sh + 1, Q = (W + 2 * g.pw - g.dw * (S - 1) - 1) / g.sw + 1;
  (void)C;
  Ref y({N, K, P, Q});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t p = 0; p < P; ++p)
        for (int64_t q = 0; q < Q; ++q) {
          double s = b ? b->v[size_t(k)] : 0.0;
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t r = 0; r < R; ++r)
              for (int64_t t = 0; t < S; ++t) {
                const int64_t h = p * g.sh - g.ph + r * g.dh, v = q * g.sw - g.pw + t * g.dw;
                if (h < 0 || h >= H || v < 0 || v >= W) continue;
                s += x.at({n, (k / Kg) * Cg + c, h, v}) * w.at({k, c, r, t});
              }
          y.at({n, k, p, q}) = s;
        }
  return y;
}

// Batch norm with batch statistics (training) or the given running ones; returns {y, new
// running mean, new running var} (the running ones only when given and training).
inline std::vector<Ref> batch_norm(const Ref& x, const Ref* rm, const Ref* rv, const Ref* w, const Ref* b,
                                   bool training, double momentum, double eps) {
  const int64_t N = x.shape[0], C = x.shape[1], HW = x.numel() / (N * C), M = N * HW;
  Ref y(x.shape);
  Ref nrm = rm ? *rm : Ref(), nrv = rv ? *rv : Ref();
  for (int64_t c = 0; c < C; ++c) {
    double mean = 0, var = 0;
    if (training) {
      for (int64_t n = 0; n < N; ++n)
        for (int64_t i = 0; i < HW; ++i) mean += x.v[size_t((n * C + c) * HW + i)];
      mean /= double(M);
      for (int64_t n = 0; n < N; ++n)
        for (int64_t i = 0; i < HW; ++i) var += std::pow(x.v[size_t((n * C + c) * HW + i)] - mean, 2);
      if (rm) nrm.v[size_t(c)] = (1 - momentum) * rm->v[size_t(c)] + momentum * mean;
      if (rv) nrv.v[size_t(c)] = (1 - momentum) * rv->v[size_t(c)] + momentum * var / double(M - 1);
      var /= double(M);
    } else {
      mean = rm->v[size_t(c)], var = rv->v[size_t(c)];
    }
    const double inv = 1 / std::sqrt(var + eps);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < HW; ++i) {
        const size_t at = size_t((n * C + c) * HW + i);
        y.v[at] = (x.v[at] - mean) * inv * (w ? w->v[size_t(c)] : 1.0) + (b ? b->v[size_t(c)] : 0.0);
      }
  }
  std::vector<Ref> out{y};
  if (training && rm) out.push_back(nrm), out.push_back(nrv);
  return out;
}

// Max or average pooling (torch semantics, ceil_mode included); adaptive average when
// `adaptive` (then kernel/stride/padding are ignored and out_h x out_w is the output).
struct PoolGeom {
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  bool max = true, ceil_mode = false, count_include_pad = true, adaptive = false;
  int64_t out_h = 0, out_w = 0;
};

inline int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  const double span = double(in + 2 * p - d * (k - 1) - 1) / double(s);
  int64_t o = int64_t(ceil_mode ? std::ceil(span) : std::floor(span)) + 1;
  if (ceil_mode && (o - 1) * s >= in + p) --o;
  return o;
}

inline Ref pool2d(const Ref& x, PoolGeom g) {
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t P = g.adaptive ? g.out_h : pool_out(H, g.kh, g.sh, g.ph, g.dh, g.ceil_mode);
  const int64_t Q = g.adaptive ? g.out_w : pool_out(W, g.kw, g.sw, g.pw, g.dw, g.ceil_mode);
  Ref y({N, C, P, Q});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t p = 0; p < P; ++p)
        for (int64_t q = 0; q < Q; ++q) {
          double out;
          if (g.adaptive) {
            const int64_t h0 = int64_t(std::floor(double(p * H) / double(P))), h1 = int64_t(std::ceil(double((p + 1) * H) / double(P)));
            const int64_t w0 = int64_t(std::floor(double(q * W) / double(Q))), w1 = int64_t(std::ceil(double((q + 1) * W) / double(Q)));
            double s = 0;
            for (int64_t h = h0; h < h1; ++h)
              for (int64_t v = w0; v < w1; ++v) s += x.at({n, c, h, v});
            out = s / double((h1 - h0) * (w1 - w0));
          } else if (g.max) {
            out = -std::numeric_limits<double>::infinity();
            for (int64_t i = 0; i < g.kh; ++i)
              for (int64_t j = 0; j < g.kw; ++j) {
                const int64_t h = p * g.sh - g.ph + i * g.dh, v = q * g.sw - g.pw + j * g.dw;
                if (h >= 0 && h < H && v >= 0 && v < W) out = nan_max(out, x.at({n, c, h, v}));
              }
          } else {
            const int64_t h0 = p * g.sh - g.ph, w0 = q * g.sw - g.pw;
            const int64_t h1 = std::min(h0 + g.kh, H + g.ph), w1 = std::min(w0 + g.kw, W + g.pw);
            double s = 0;
            int64_t inside = 0;
            for (int64_t h = std::max<int64_t>(h0, 0); h < std::min(h1, H); ++h)
              for (int64_t v = std::max<int64_t>(w0, 0); v < std::min(w1, W); ++v) s += x.at({n, c, h, v}), ++inside;
            out = s / double(g.count_include_pad ? (h1 - h0) * (w1 - w0) : inside);
          }
          y.at({n, c, p, q}) = out;
        }
  return y;
}

}  // namespace strata::testing::ref
