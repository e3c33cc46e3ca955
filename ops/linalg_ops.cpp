// matmul / bmm / linear: batch dims broadcast, reduced to the Backend's 3-D bmm.
#include "ops/dispatch.h"
#include "ops/op_node.h"
#include "strata/ops/autocast.h"
#include "strata/ops/elementwise.h"
#include "strata/ops/factory.h"
#include "strata/ops/linalg.h"
#include "strata/ops/reduction.h"
#include "strata/ops/shape_ops.h"

namespace strata::ops {

using detail::make_node;
using detail::OpNode;
using detail::set_outputs;

namespace {

// [batch..., R, C] viewed as 3-D [prod(batch), R, C] (a copy only when the batch dims cannot
// be merged into one stride).
Tensor as_3d(const Tensor& t) {
  const int64_t n = t.dim();
  int64_t batch = 1;
  for (int64_t i = 0; i < n - 2; ++i) batch *= t.size(i);
  Shape s{batch, t.size(n - 2), t.size(n - 1)};
  // mergeable if batch dims are "contiguous among themselves" (or all size 1 / stride 0)
  int64_t stride = 0;
  bool ok = true, first = true;
  int64_t expect = 0;
  for (int64_t i = n - 3; i >= 0; --i) {
    if (t.size(i) == 1) continue;
    if (first) {
      stride = t.stride(i);
      expect = t.stride(i) * t.size(i);
      first = false;
    } else {
      ok = ok && t.stride(i) == expect;
      expect = t.stride(i) * t.size(i);
    }
  }
  if (ok) return detail::raw_view(t, s, {stride, t.stride(n - 2), t.stride(n - 1)}, t.storage_offset());
  Tensor c = detail::raw_contiguous(t);
  return detail::raw_view(c, s, contiguous_strides(s), 0);
}

// out[B, M, N] = a @ b through the backend (no autograd).
Tensor bmm_raw(const Tensor& a3, const Tensor& b3, DType dt) {
  Device dev = a3.device();
  Tensor out = detail::alloc({a3.size(0), a3.size(1), b3.size(2)}, dt, dev);
  detail::kernels(dev).bmm(out, detail::raw_cast(a3, dt), detail::raw_cast(b3, dt), 1.0, 0.0);
  detail::record("matmul", dev, 2.0 * double(a3.size(0)) * double(a3.size(1)) * double(a3.size(2)) * double(b3.size(2)),
                 double(a3.nbytes() + b3.nbytes()), double(out.nbytes()));
  return out;
}

// Forward of matmul for a >= 2-D and b >= 2-D, no autograd.
Tensor matmul_raw(const Tensor& a, const Tensor& b) {
  DType dt = promote_types(a.dtype(), b.dtype());
  STRATA_CHECK(is_floating(dt), TypeError, "matmul: needs floating tensors, got ", a.str(), " @ ", b.str());
  const int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
  STRATA_CHECK(b.size(-2) == K, ShapeError, "matmul: shapes ", shape_str(a.shape()), " and ", shape_str(b.shape()),
               " do not match (", K, " != ", b.size(-2), ")");
  if (b.dim() == 2) {
    // Fold a's batch dims into M: one GEMM.
    int64_t rows = 1;
    for (int64_t d = 0; d + 1 < a.dim(); ++d) rows *= a.size(d);
    Tensor a2 = detail::raw_reshape(a, {rows, K});
    Shape os(a.shape().begin(), a.shape().end() - 1);
    os.push_back(N);
    Tensor o = bmm_raw(detail::raw_view(a2, {1, a2.size(0), K}, {0, a2.stride(0), a2.stride(1)}, a2.storage_offset()),
                       detail::raw_view(b, {1, K, N}, {0, b.stride(0), b.stride(1)}, b.storage_offset()), dt);
    return detail::raw_view(o, os, contiguous_strides(os), 0);
  }
  Shape ba(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
  Shape batch = broadcast_shapes(ba, bb, "matmul");
  Shape sa = batch, sb = batch;
  sa.insert(sa.end(), {M, K});
  sb.insert(sb.end(), {K, N});
  Tensor o = bmm_raw(as_3d(detail::raw_expand(a, sa)), as_3d(detail::raw_expand(b, sb)), dt);
  Shape os = batch;
  os.insert(os.end(), {M, N});
  return detail::raw_view(o, os, contiguous_strides(os), 0);
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  detail::common_device("matmul", {&a, &b});
  STRATA_CHECK(a.dim() >= 1 && b.dim() >= 1, ShapeError, "matmul: 0-d operand (", a.str(), " @ ", b.str(), ")");
  if (a.dim() == 1) return squeeze(matmul(unsqueeze(a, 0), b), b.dim() == 1 ? -1 : -2);
  if (b.dim() == 1) return squeeze(matmul(a, unsqueeze(b, 1)), -1);
  Tensor out = matmul_raw(a, b);
  if (auto node = make_node("MatmulBackward", {a, b})) {
    node->save(node->needs_grad(1) ? a : Tensor());
    node->save(node->needs_grad(0) ? b : Tensor());
    node->backward = [sa = a.shape(), sb = b.shape()](OpNode& n, std::vector<Tensor>& g) -> std::vector<Tensor> {
      Tensor ga, gb;
      if (n.needs_grad(0)) ga = sum_to(matmul(g[0], transpose(n.saved(1), -1, -2)), sa);
      if (n.needs_grad(1)) {
        Tensor av = n.saved(0);
        if (sb.size() == 2) {  // one GEMM over all of a's rows
          Tensor a2 = reshape(av, {-1, av.size(-1)});
          Tensor g2 = reshape(g[0], {-1, g[0].size(-1)});
          gb = matmul(transpose(a2, 0, 1), g2);
        } else {
          gb = sum_to(matmul(transpose(av, -1, -2), g[0]), sb);
        }
      }
      return {ga, gb};
    };
    set_outputs(node, {&out});
  }
  return out;
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  STRATA_CHECK(a.dim() == 3 && b.dim() == 3 && a.size(0) == b.size(0), ShapeError, "bmm: expects [B, M, K] @ [B, K, N], got ",
               shape_str(a.shape()), " @ ", shape_str(b.shape()));
  return matmul(a, b);
}

namespace {
Tensor batch1(const Tensor& m) {
  return detail::raw_view(m, {1, m.size(0), m.size(1)}, {0, m.stride(0), m.stride(1)}, m.storage_offset());
}
Tensor transposed2d(const Tensor& m) {
  return detail::raw_view(m, {m.size(1), m.size(0)}, {m.stride(1), m.stride(0)}, m.storage_offset());
}
// [rows, O] = x2 [rows, K] @ w [O, K]^T + bias (Backend::bmm_bias), in dtype dt:
// linear's forward, and its forward_again with the same operands (so the same bits).
Tensor biased_gemm(const Tensor& x2, const Tensor& w, const Tensor& bias, DType dt) {
  Device dev = x2.device();
  Backend& be = detail::kernels(dev);
  Tensor out = detail::alloc({x2.size(0), w.size(0)}, dt, dev);
  if (bias.defined())
    be.bmm_bias(batch1(out), batch1(x2), batch1(transposed2d(w)),
                detail::raw_contiguous(detail::raw_cast(bias, dt)));
  else
    be.bmm(batch1(out), batch1(x2), batch1(transposed2d(w)), 1.0, 0.0);
  return out;
}
}  // namespace

// One op (one GEMM, bias added by the GEMM) instead of matmul + add: no transposed copy of
// the weight gradient (dW = g^T x comes out in the weight's [out, in] layout, so AccumulateGrad
// adopts it), no broadcast-add node, and the bias gradient is one column-sum GEMV.
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias, AutocastResult result) {
  const char* op = "linear";
  Device dev = detail::common_device(op, {&x, &w, &bias});
  STRATA_CHECK(w.dim() == 2 && x.dim() >= 1 && x.size(-1) == w.size(1), ShapeError, "linear: input ",
               shape_str(x.shape()), " and weight ", shape_str(w.shape()), " (weight is [out, in])");
  if (bias.defined())
    STRATA_CHECK(bias.dim() == 1 && bias.size(0) == w.size(0), ShapeError, "linear: bias ", shape_str(bias.shape()),
                 " for weight ", shape_str(w.shape()));
  DType dt = promote_types(x.dtype(), w.dtype());
  if (bias.defined()) dt = promote_types(dt, bias.dtype());
  STRATA_CHECK(is_floating(dt), TypeError, "linear: needs floating tensors, got ", x.str(), " and ", w.str());
  const int64_t K = w.size(1), O = w.size(0), N = x.numel() / std::max<int64_t>(K, 1);
  // Under autocast the GEMM operands are bf16 (the f32 weight is the master copy).
  const bool amp = autocast_applies(dev, dt);
  const DType gemm_dt = amp ? DType::bf16 : dt;
  // The result's dtype: f32, or the GEMM's 16-bit one when the caller takes it narrow.
  const DType odt = amp && result == AutocastResult::Narrow ? gemm_dt : dt;
  Tensor x2 = detail::raw_cast(detail::raw_reshape(x, {x.dim() == 1 ? 1 : N, K}), gemm_dt);
  Tensor wc = detail::raw_cast(w, gemm_dt);
  Tensor out = biased_gemm(x2, wc, bias, odt);
  detail::record(op, dev, 2.0 * double(N) * double(K) * double(O) + (bias.defined() ? double(N * O) : 0.0),
                 double(x.nbytes() + w.nbytes()), double(out.nbytes()));
  Shape os(x.shape().begin(), x.shape().end() - 1);
  os.push_back(O);
  Tensor y = detail::raw_view(out, os, contiguous_strides(os), 0);
  if (auto node = make_node("LinearBackward", {x, w, bias})) {
    // Under autocast the bf16 operands are saved (half the bytes, and backward multiplies in bf16).
    node->save(node->needs_grad(1) ? (amp ? x2 : x) : Tensor());
    node->save(node->needs_grad(0) ? (amp ? wc : w) : Tensor());
    if (node->needs_grad(0) && node->needs_grad(1)) {
      // Both GEMM operands are saved anyway: the output can be made again (op-level recompute,
      // a GEMM's worth of work; the planner weighs it). Same operands, same kernel, same bits.
      node->save(bias);  // a parameter (never moved), or undefined
      node->forward_again = [odt, gemm_dt, K, O, os](OpNode& n) {
        Tensor xv = detail::raw_cast(detail::raw_reshape(n.saved(0), {-1, K}), gemm_dt);
        Tensor out = biased_gemm(xv, detail::raw_cast(n.saved(1), gemm_dt), n.saved(2), odt);
        detail::record("linear", xv.device(), 2.0 * double(xv.size(0)) * double(K) * double(O), double(xv.nbytes()),
                       double(out.nbytes()));
        return detail::raw_view(out, os, contiguous_strides(os), 0);
      };
    }
    node->backward = [dt, gemm_dt, K, O, xs = x.shape(), xdt = x.dtype(), wdt = w.dtype(),
                      bdt = bias.defined() ? bias.dtype() : dt](OpNode& n, std::vector<Tensor>& g) -> std::vector<Tensor> {
      Device dev = g[0].device();
      Backend& be = detail::kernels(dev);
      // g in f32, or bf16 for a narrow result (then no cast: the GEMMs take it as it is).
      Tensor g2 = detail::raw_reshape(g[0], {-1, O});
      if (g2.dtype() != gemm_dt) g2 = detail::raw_cast(g2, dt);
      const int64_t rows = g2.size(0);
      Tensor gg = detail::raw_cast(g2, gemm_dt);  // the GEMMs' copy of g (bf16 under autocast)
      Tensor gx, gw, gb;
      if (n.needs_grad(0)) {
        Tensor wv = detail::raw_cast(n.saved(1), gemm_dt);
        // dx straight in x's dtype when that is the GEMM's (x was a narrow result itself).
        Tensor dx = detail::alloc({rows, K}, xdt == gemm_dt ? gemm_dt : dt, dev);
        be.bmm(batch1(dx), batch1(gg), batch1(wv), 1.0, 0.0);
        detail::record("linear_backward_input", dev, 2.0 * double(rows) * double(K) * double(O),
                       double(g2.nbytes() + wv.nbytes()), double(dx.nbytes()));
        gx = detail::raw_cast(detail::raw_view(dx, xs, contiguous_strides(xs), 0), xdt);
      }
      if (n.needs_grad(1)) {
        Tensor xv = detail::raw_cast(detail::raw_reshape(n.saved(0), {rows, K}), gemm_dt);
        Tensor dw = detail::alloc({O, K}, dt, dev);
        be.bmm(batch1(dw), batch1(transposed2d(gg)), batch1(xv), 1.0, 0.0);
        detail::record("linear_backward_weight", dev, 2.0 * double(rows) * double(K) * double(O),
                       double(g2.nbytes() + xv.nbytes()), double(dw.nbytes()));
        gw = detail::raw_cast(dw, wdt);
      }
      if (n.needs_grad(2)) {
        // Column sums of g as it came (bf16 values are exact in the f32 sum).
        Tensor ones = full({1, rows}, 1.0, TensorOptions(g2.dtype()).device(dev));
        Tensor db = detail::alloc({1, O}, dt, dev);
        be.bmm(batch1(db), batch1(ones), batch1(g2), 1.0, 0.0);
        detail::record("linear_backward_bias", dev, 2.0 * double(rows) * double(O), double(g2.nbytes()),
                       double(db.nbytes()));
        gb = detail::raw_cast(detail::raw_view(db, {O}, {1}, 0), bdt);
      }
      return {gx, gw, gb};
    };
    set_outputs(node, {&y});
  }
  return y;
}

}  // namespace strata::ops
