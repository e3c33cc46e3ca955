// linear_cross_entropy: the fused, chunked LM head + softmax cross-entropy.
#include <algorithm>
#include <limits>

#include "ops/dispatch.h"
#include "ops/op_node.h"
#include "strata/autograd/grad_mode.h"
#include "strata/autograd/saved_tensor.h"
#include "strata/ops/autocast.h"
#include "strata/ops/elementwise.h"
#include "strata/ops/factory.h"
#include "strata/ops/nn.h"
#include "strata/ops/reduction.h"

namespace strata::ops {

using detail::make_node;
using detail::OpNode;
using detail::set_outputs;

namespace {

// A [rows, cols] matrix as the 3-D [1, rows, cols] view bmm takes.
Tensor as_batch1(const Tensor& m) {
  return detail::raw_view(m, {1, m.size(0), m.size(1)}, {0, m.stride(0), m.stride(1)}, m.storage_offset());
}

Tensor transposed(const Tensor& m) {
  return detail::raw_view(m, {m.size(1), m.size(0)}, {m.stride(1), m.stride(0)}, m.storage_offset());
}

// The op's output: the row losses summed (times `scale` for Mean), in the inputs' dtype.
Tensor reduce_loss(const Tensor& loss_rows, Reduction reduction, double scale, DType out_dtype) {
  autograd::NoGradGuard ng;
  Tensor total = sum(loss_rows);
  if (reduction == Reduction::Mean) total = mul(total, scale);
  return detail::raw_cast(total, out_dtype);
}

// logits [rows, V] = x_chunk @ w^T (+ bias on every row).
void chunk_logits(Backend& be, const Tensor& logits, const Tensor& xc, const Tensor& w, const Tensor& bias) {
  if (bias.defined()) be.copy(logits, detail::raw_view(bias, logits.shape(), {0, 1}, bias.storage_offset()));
  be.bmm(as_batch1(logits), as_batch1(xc), as_batch1(transposed(w)), 1.0, bias.defined() ? 1.0 : 0.0);
}

// db [V] (+)= column sums of dlogits [rows, V] (f32/f64, never the bf16 copy), as ones[1, rows] @ dlogits.
void accumulate_dbias(Backend& be, const Tensor& db, const Tensor& dlogits, bool first) {
  const int64_t rows = dlogits.size(0), V = dlogits.size(1);
  Tensor ones = full({1, rows}, 1.0, TensorOptions(dlogits.dtype()).device(dlogits.device()));
  be.bmm(as_batch1(detail::raw_view(db, {1, V}, {V, 1}, db.storage_offset())), as_batch1(ones), as_batch1(dlogits),
         1.0, first ? 0.0 : 1.0);
}

// chunk_bytes 0: the device's default (see nn.h).
int64_t rows_per_chunk(Device dev, int64_t V, int64_t chunk_bytes, size_t esize) {
  if (chunk_bytes <= 0) {
    chunk_bytes = int64_t(128) << 20;
    if (dev.is_cuda())
      chunk_bytes = std::clamp<int64_t>(int64_t(detail::kernels(dev).memory_capacity(dev.index) / 64),
                                        chunk_bytes, int64_t(1) << 30);
  }
  return std::max<int64_t>(1, chunk_bytes / std::max<int64_t>(1, V * int64_t(esize)));
}

}  // namespace

// With gradients wanted, each chunk's backward is done in forward, right after its loss (as
// Liger's fused linear cross-entropy): the softmax gradient overwrites the chunk's logits, then
// dx and dweight are two GEMMs. The op saves dx [N, C] and dweight [V, C] (for the unit output
// gradient) instead of x and the lse, so backward only scales them: no logits recompute (a third
// of the LM head's FLOPs) and no second pass over the vocabulary.
Tensor linear_cross_entropy(const Tensor& x, const Tensor& weight, const Tensor& target, int64_t ignore_index,
                            Reduction reduction, int64_t chunk_bytes) {
  return linear_cross_entropy(x, weight, Tensor(), target, ignore_index, reduction, chunk_bytes);
}

// With a bias (BERT's MLM decoder), each chunk's logits start as the bias rows (the GEMM then
// accumulates onto them) and dbias is the column sum of the chunk's softmax gradient, formed by a
// ones-row GEMM (fixed order: deterministic) and accumulated over chunks like dweight.
Tensor linear_cross_entropy(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& target,
                            int64_t ignore_index, Reduction reduction, int64_t chunk_bytes) {
  const char* op = "linear_cross_entropy";
  Device dev = detail::common_device(op, {&x, &weight, &bias, &target});
  STRATA_CHECK(reduction != Reduction::None, ValueError, op, ": reduction must be Mean or Sum");
  STRATA_CHECK(weight.dim() == 2 && x.dim() >= 1 && x.size(-1) == weight.size(1), ShapeError, op, ": x ",
               shape_str(x.shape()), " and weight ", shape_str(weight.shape()), " (weight is [V, C])");
  STRATA_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == weight.size(0)), ShapeError, op, ": bias ",
               shape_str(bias.shape()), " does not fit weight ", shape_str(weight.shape()), " (bias is [V])");
  STRATA_CHECK(target.dtype() == DType::i64, TypeError, op, ": target must be i64, got ", target.str());
  Shape tshape(x.shape().begin(), x.shape().end() - 1);
  STRATA_CHECK(target.shape() == tshape, ShapeError, op, ": x ", shape_str(x.shape()), " needs targets of shape ",
               shape_str(tshape), ", got ", shape_str(target.shape()));
  const int64_t C = weight.size(1), V = weight.size(0), N = target.numel();
  const DType dt = promote_types(x.dtype(), weight.dtype()) == DType::f64 ? DType::f64 : DType::f32;
  // Under autocast the GEMM operands are bf16; logits, the softmax and the sums stay f32.
  const bool amp = autocast_applies(dev, dt);
  const DType gemm_dt = amp ? DType::bf16 : dt;
  Tensor x2 = detail::raw_contiguous(detail::raw_cast(detail::raw_reshape(x, {N, C}), gemm_dt));
  Tensor w = detail::raw_contiguous(detail::raw_cast(weight, gemm_dt));
  Tensor t = detail::raw_contiguous(detail::raw_reshape(target, {N}));
  Tensor b1 = bias.defined() ? detail::raw_contiguous(detail::raw_cast(bias, dt)) : Tensor();
  Backend& be = detail::kernels(dev);
  const int64_t R = rows_per_chunk(dev, V, chunk_bytes, element_size(dt));

  double scale = 1.0;
  if (reduction == Reduction::Mean) {
    autograd::NoGradGuard ng;
    int64_t count = N;
    if (!dev.is_meta())
      count = int64_t(sum(ne(t, scalar_tensor(double(ignore_index), TensorOptions(DType::i64).device(dev)))).item());
    scale = count > 0 ? 1.0 / double(count) : std::numeric_limits<double>::quiet_NaN();
  }
  auto node = make_node("LinearCrossEntropyBackward", {x, weight, bias});
  if (node && autograd::current_save_policy().prefers_lean(op)) {
    // The lean variant: forward keeps only the row log-sum-exp; backward recomputes each
    // chunk's logits (a third more LM-head FLOPs, no [V, C] dW held across the step).
    Tensor loss_rows = detail::alloc({N}, dt, dev), lse = detail::alloc({N}, dt, dev);
    for (int64_t r0 = 0; r0 < N; r0 += R) {
      const int64_t rows = std::min(R, N - r0);
      Tensor logits = detail::alloc({rows, V}, dt, dev);
      chunk_logits(be, logits, detail::raw_view(x2, {rows, C}, {C, 1}, r0 * C), w, b1);
      be.cross_entropy(detail::raw_view(loss_rows, {rows}, {1}, r0), detail::raw_view(lse, {rows}, {1}, r0), logits,
                       detail::raw_view(t, {rows}, {1}, r0), ignore_index);
    }
    detail::record(op, dev, 2.0 * double(N) * double(C) * double(V) + 4.0 * double(N) * double(V),
                   double(x.nbytes() + weight.nbytes()), double(N) * double(element_size(dt)));
    Tensor out = reduce_loss(loss_rows, reduction, scale, promote_types(x.dtype(), weight.dtype()));
    node->save(x);
    node->save(weight);
    node->save(target);
    node->save(lse);
    node->save(b1);
    // Captures sizes and scalars only (the saved tensors come back through n.saved).
    node->backward = [N, C, V, R, dt, dev, scale, ignore_index, xs = x.shape(), amp_gemm = gemm_dt,
                      bdt = bias.defined() ? bias.dtype() : dt](
                         OpNode& n, std::vector<Tensor>& g) -> std::vector<Tensor> {
      Tensor xv = n.saved(0), wv = n.saved(1), tv = n.saved(2), lv = n.saved(3), bv = n.saved(4);
      Tensor xr = detail::raw_contiguous(detail::raw_cast(detail::raw_reshape(xv, {N, C}), amp_gemm));
      Tensor wr = detail::raw_contiguous(detail::raw_cast(wv, amp_gemm));
      Tensor tr = detail::raw_contiguous(detail::raw_reshape(tv, {N}));
      Backend& b = detail::kernels(dev);
      const double gs = (g[0].device().is_meta() ? 1.0 : g[0].item()) * scale;  // Meta: shapes and cost only
      Tensor dx = n.needs_grad(0) ? detail::alloc({N, C}, dt, dev) : Tensor();
      Tensor dw = n.needs_grad(1) ? detail::alloc({V, C}, dt, dev) : Tensor();
      Tensor db = n.needs_grad(2) ? zeros({V}, TensorOptions(dt).device(dev)) : Tensor();
      for (int64_t r0 = 0; r0 < N; r0 += R) {
        const int64_t rows = std::min(R, N - r0);
        Tensor xc = detail::raw_view(xr, {rows, C}, {C, 1}, r0 * C);
        Tensor logits = detail::alloc({rows, V}, dt, dev);
        chunk_logits(b, logits, xc, wr, bv);
        Tensor lse_c = detail::raw_view(lv, {rows}, {1}, r0), t_c = detail::raw_view(tr, {rows}, {1}, r0);
        b.cross_entropy_backward(logits, full({rows}, gs, TensorOptions(dt).device(dev)), logits, lse_c, t_c,
                                 ignore_index);
        if (db.defined()) accumulate_dbias(b, db, logits, r0 == 0);
        Tensor dl = detail::raw_cast(logits, amp_gemm);
        if (dx.defined())
          b.bmm(as_batch1(detail::raw_view(dx, {rows, C}, {C, 1}, r0 * C)), as_batch1(dl), as_batch1(wr), 1.0, 0.0);
        if (dw.defined()) b.bmm(as_batch1(dw), as_batch1(transposed(dl)), as_batch1(xc), 1.0, r0 == 0 ? 0.0 : 1.0);
      }
      detail::record("linear_cross_entropy_backward", dev, 6.0 * double(N) * double(C) * double(V),
                     double(xv.nbytes() + wv.nbytes()), double(xv.nbytes() + wv.nbytes()));
      return {dx.defined() ? detail::raw_cast(detail::raw_reshape(dx, xs), xv.dtype()) : Tensor(),
              dw.defined() ? detail::raw_cast(dw, wv.dtype()) : Tensor(),
              db.defined() ? detail::raw_cast(db, bdt) : Tensor()};
    };
    set_outputs(node, {&out});
    return out;
  }
  const bool want_dx = node && node->needs_grad(0), want_dw = node && node->needs_grad(1);
  const bool want_db = node && node->needs_grad(2);
  Tensor db = want_db ? zeros({V}, TensorOptions(dt).device(dev)) : Tensor();
  Tensor dx = want_dx ? detail::alloc({N, C}, dt, dev) : Tensor();
  Tensor dw = want_dw ? (N > 0 ? detail::alloc({V, C}, dt, dev) : zeros({V, C}, TensorOptions(dt).device(dev)))
                      : Tensor();
  Tensor loss_rows = detail::alloc({N}, dt, dev), lse = detail::alloc({N}, dt, dev);
  for (int64_t r0 = 0; r0 < N; r0 += R) {
    const int64_t rows = std::min(R, N - r0);
    Tensor xc = detail::raw_view(x2, {rows, C}, {C, 1}, r0 * C);
    Tensor logits = detail::alloc({rows, V}, dt, dev);
    Tensor lse_c = detail::raw_view(lse, {rows}, {1}, r0), t_c = detail::raw_view(t, {rows}, {1}, r0);
    chunk_logits(be, logits, xc, w, b1);
    const Tensor loss_c = detail::raw_view(loss_rows, {rows}, {1}, r0);
    if (!node) {
      be.cross_entropy(loss_c, lse_c, logits, t_c, ignore_index);
      continue;
    }
    // The loss and d(scale * sum of row losses) / dlogits together: in place of the logits, then
    // in the GEMMs' dtype; on CUDA under autocast (no bias) written in bf16 directly, the same
    // bits in one pass.
    Tensor dl;
    const Tensor row_scale = full({rows}, scale, TensorOptions(dt).device(dev));
    if (dev.is_cuda() && gemm_dt != dt && !want_db) {
      dl = detail::alloc({rows, V}, gemm_dt, dev);
      be.cross_entropy_with_grad(loss_c, lse_c, dl, row_scale, logits, t_c, ignore_index);
    } else {
      be.cross_entropy_with_grad(loss_c, lse_c, logits, row_scale, logits, t_c, ignore_index);
      if (want_db) accumulate_dbias(be, db, logits, r0 == 0);
      dl = detail::raw_cast(logits, gemm_dt);
    }
    if (want_dx)
      be.bmm(as_batch1(detail::raw_view(dx, {rows, C}, {C, 1}, r0 * C)), as_batch1(dl), as_batch1(w), 1.0, 0.0);
    if (want_dw) be.bmm(as_batch1(dw), as_batch1(transposed(dl)), as_batch1(xc), 1.0, r0 == 0 ? 0.0 : 1.0);
  }
  detail::record(op, dev, 2.0 * double(N) * double(C) * double(V) * (node ? 1.0 + double(want_dx) + double(want_dw) : 1.0) +
                     4.0 * double(N) * double(V),
                 double(x.nbytes() + weight.nbytes()), double(N) * double(element_size(dt)));

  Tensor out = reduce_loss(loss_rows, reduction, scale, promote_types(x.dtype(), weight.dtype()));
  if (node) {
    node->save(dx);
    node->save(dw);
    node->save(db);
    node->backward = [xs = x.shape(), xdt = x.dtype(), wdt = weight.dtype(), bdt = bias.defined() ? bias.dtype() : dt](
                         OpNode& n, std::vector<Tensor>& g) -> std::vector<Tensor> {
      Tensor dx = n.saved(0), dw = n.saved(1), db = n.saved(2);
      const double gs = g[0].device().is_meta() ? 1.0 : g[0].item();
      auto scaled = [gs](const Tensor& d, DType to) {
        Tensor r = d;
        if (gs != 1.0) {
          r = detail::alloc(d.shape(), d.dtype(), d.device());
          Tensor in[1] = {d};
          detail::kernels(d.device()).elementwise(EwOp::MulScalar, r, in, {gs, 0});
          detail::record("linear_cross_entropy_backward", d.device(), double(d.numel()), double(d.nbytes()),
                         double(r.nbytes()));
        }
        return detail::raw_cast(r, to);
      };
      return {dx.defined() ? scaled(detail::raw_reshape(dx, xs), xdt) : Tensor(),
              dw.defined() ? scaled(dw, wdt) : Tensor(), db.defined() ? scaled(db, bdt) : Tensor()};
    };
    set_outputs(node, {&out});
  }
  return out;
}

}  // namespace strata::ops
