// Elementwise ops: broadcasting, dtype promotion, dispatch, and backward formulas.
#include "ops/common/elementwise_math.h"
#include "ops/dispatch.h"
#include "ops/op_node.h"
#include "strata/ops/elementwise.h"
#include "strata/ops/factory.h"
#include "strata/ops/shape_ops.h"

namespace strata::ops {

using detail::make_node;
using detail::OpNode;
using detail::set_outputs;

namespace {

DType float_dtype(DType t) { return is_floating(t) ? t : DType::f32; }

// Broadcasts `in` to one shape, casts them to `compute` (the condition of Where stays bool),
// and runs `op` into a new tensor of `out_dtype`.
Tensor ew_run(EwOp op, const std::vector<Tensor>& in, DType compute, DType out_dtype,
              EwParams p = {}, double flops_per_element = 1) {
  const char* name = ew_op_name(op);
  Shape shape = in[0].shape();
  for (size_t i = 1; i < in.size(); ++i) shape = broadcast_shapes(shape, in[i].shape(), name);
  Device dev = in[0].device();
  for (const Tensor& t : in) {
    detail::check_defined(name, t, "input");
    STRATA_CHECK(t.device() == dev, DeviceError, name, ": tensors on different devices (", in[0].str(),
                 " and ", t.str(), ")");
  }
  if (!is_floating(compute) && !common::ew_supports_integers(op)) compute = DType::f32;
  std::vector<Tensor> args;
  double bytes_in = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    DType want = (op == EwOp::Where && i == 0) ? DType::boolean : compute;
    args.push_back(detail::raw_expand(detail::raw_cast(in[i], want), shape));
    bytes_in += double(in[i].nbytes());
  }
  Tensor out = detail::alloc(shape, common::ew_is_comparison(op) ? DType::boolean : out_dtype, dev);
  detail::kernels(dev).elementwise(op, out, args, p);
  detail::record(name, dev, flops_per_element * double(out.numel()), bytes_in, double(out.nbytes()));
  return out;
}

Tensor unary(EwOp op, const Tensor& x, EwParams p = {}) {
  DType dt = common::ew_supports_integers(op) ? x.dtype() : float_dtype(x.dtype());
  return ew_run(op, {x}, dt, dt, p);
}

Tensor binary(EwOp op, const Tensor& a, const Tensor& b) {
  DType dt = promote_types(a.dtype(), b.dtype());
  if (!common::ew_supports_integers(op)) dt = float_dtype(dt);
  return ew_run(op, {a, b}, dt, dt);
}

// Backward helper: grad * f'(x) through one of the *Backward functors.
Tensor ew_backward(EwOp op, const Tensor& g, const Tensor& x, EwParams p = {}) {
  return ew_run(op, {g, x}, g.dtype(), g.dtype(), p, 4);
}

// y = f(x) where backward is grad_fn(g, saved) with saved = x or y.
Tensor unary_with_backward(EwOp op, EwOp bwd, const Tensor& x, bool save_output, const char* node_name,
                           EwParams p = {}) {
  Tensor y = unary(op, x, p);
  if (auto node = make_node(node_name, {x})) {
    node->save(save_output ? y : x, save_output);
    node->backward = [bwd, p](OpNode& n, std::vector<Tensor>& g) -> std::vector<Tensor> {
      return {ew_backward(bwd, g[0], n.saved(0), p)};
    };
    if (!save_output)  // y = f(x) with x saved: the cache may drop y and make it again
      node->forward_again = [op, p](OpNode& n) { return unary(op, n.saved(0), p); };
    set_outputs(node, {&y});
  }
  return y;
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b, double alpha) {
  Tensor bb = alpha == 1.0 ? b : mul(b, alpha);
  Tensor out = binary(EwOp::Add, a, bb);
  if (auto node = make_node("AddBackward", {a, bb})) {
    node->backward = [sa = a.shape(), sb = b.shape()](OpNode& n, std::vector<Tensor>& g) -> std::vector<Tensor> {
      return {n.needs_grad(0) ? sum_to(g[0], sa) : Tensor(), n.needs_grad(1) ? sum_to(g[0], sb) : Tensor()};
    };
    set_outputs(node, {&out});
  }
  return out;
}

Tensor sub(const Tensor& a, const Tensor& b, double alpha) {
  Tensor bb = alpha == 1.0 ? b : mul(b, alpha);
  Tensor out = binary(EwOp::Sub, a, bb);
  if (auto node = make_node("SubBackward", {a, bb})) {
    node->backward = [sa = a.shape(), sb = b.shape()](OpNode& n, std::vector<Tensor>& g) -> std::vector<Tensor> {
      return {n.needs_grad(0) ? sum_to(g[0], sa) : Tensor(), n.needs_grad(1) ? sum_to(neg(g[0]), sb) : Tensor()};
    };
    set_outputs(node, {&out});
  }
  return out;
}

Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor out = binary(EwOp::Mul, a, b);
  if (auto node = make_node("MulBackward", {a, b})) {
    // Each input is saved only if the other one needs a gradient.
    node->save(node->needs_grad(1) ? a : Tensor());
    node->save(node->needs_grad(0) ? b : Tensor());
    node->backward = [sa = a.shape(), sb = b.shape()](OpNode& n, std::vector<Tensor>& g) -> std::vector<Tensor> {
      Tensor ga, gb;
      if (n.needs_grad(0)) ga = sum_to(mul(g[0], n.saved(1)), sa);
      if (n.needs_grad(1)) gb = sum_to(mul(g[0], n.saved(0)), sb);
      return {ga, gb};
    };
    set_outputs(node, {&out});
  }
  return out;
}

Tensor div(const Tensor& a, const Tensor& b) {
  Tensor out = binary(EwOp::Div, a, b);
  if (auto node = make_node("DivBackward", {a, b})) {
    node->save(node->needs_grad(1) ? a : Tensor());
    node->save(b);
    node->backward = [sa = a.shape(), sb = b.shape()](OpNode& n, std::vector<Tensor>& g) -> std::vector<Tensor> {
      Tensor bv = n.saved(1), ga, gb;
      if (n.needs_grad(0)) ga = sum_to(div(g[0], bv), sa);
      if (n.needs_grad(1)) gb = sum_to(neg(div(mul(g[0], n.saved(0)), square(bv))), sb);
      return {ga, gb};
    };
    set_outputs(node, {&out});
  }
  return out;
}

Tensor pow(const Tensor& a, const Tensor& b) {
  Tensor out = binary(EwOp::Pow, a, b);
  if (auto node = make_node("PowBackward", {a, b})) {
    node->save(a);
    node->save(b);
    node->save(node->needs_grad(1) ? out : Tensor(), true);
    node->backward = [sa = a.shape(), sb = b.shape()](OpNode& n, std::vector<Tensor>& g) -> std::vector<Tensor> {
      Tensor av = n.saved(0), bv = n.saved(1), ga, gb;
      if (n.needs_grad(0)) ga = sum_to(mul(g[0], mul(bv, pow(av, add(bv, -1.0)))), sa);
      if (n.needs_grad(1)) gb = sum_to(mul(g[0], mul(n.saved(2), log(av))), sb);
      return {ga, gb};
    };
    set_outputs(node, {&out});
  }
  return out;
}

namespace {
// maximum/minimum: the gradient goes to the selected input, split evenly on ties (PyTorch).
Tensor extremum(EwOp op, const Tensor& a, const Tensor& b, const char* node_name) {
  Tensor out = binary(op, a, b);
  if (auto node = make_node(node_name, {a, b})) {
    node->save(a);
    node->save(b);
    node->backward = [op, sa = a.shape(), sb = b.shape()](OpNode& n, std::vector<Tensor>& g) -> std::vector<Tensor> {
      Tensor av = n.saved(0), bv = n.saved(1);
      Tensor half = mul(g[0], 0.5);
      Tensor zero = zeros({}, TensorOptions(g[0].dtype()).device(g[0].device()));
      Tensor a_wins = op == EwOp::Maximum ? gt(av, bv) : lt(av, bv);
      Tensor b_wins = op == EwOp::Maximum ? lt(av, bv) : gt(av, bv);
      Tensor tie = eq(av, bv);
      Tensor ga, gb;
      if (n.needs_grad(0)) ga = sum_to(where(a_wins, g[0], where(tie, half, zero)), sa);
      if (n.needs_grad(1)) gb = sum_to(where(b_wins, g[0], where(tie, half, zero)), sb);
      return {ga, gb};
    };
    set_outputs(node, {&out});
  }
  return out;
}
}  // namespace

Tensor maximum(const Tensor& a, const Tensor& b) { return extremum(EwOp::Maximum, a, b, "MaximumBackward"); }
Tensor minimum(const Tensor& a, const Tensor& b) { return extremum(EwOp::Minimum, a, b, "MinimumBackward"); }

Tensor add(const Tensor& a, double b) {
  DType dt = (is_floating(a.dtype()) || double(int64_t(b)) == b) ? a.dtype() : DType::f32;
  Tensor out = ew_run(EwOp::AddScalar, {a}, dt, dt, {b, 0});
  if (auto node = make_node("AddScalarBackward", {a})) {
    node->backward = [](OpNode&, std::vector<Tensor>& g) -> std::vector<Tensor> { return {g[0]}; };
    set_outputs(node, {&out});
  }
  return out;
}

Tensor mul(const Tensor& a, double b) {
  DType dt = (is_floating(a.dtype()) || double(int64_t(b)) == b) ? a.dtype() : DType::f32;
  Tensor out = ew_run(EwOp::MulScalar, {a}, dt, dt, {b, 0});
  if (auto node = make_node("MulScalarBackward", {a})) {
    node->backward = [b](OpNode&, std::vector<Tensor>& g) -> std::vector<Tensor> { return {mul(g[0], b)}; };
    set_outputs(node, {&out});
  }
  return out;
}

Tensor pow(const Tensor& a, double e) {
  Tensor out = unary(EwOp::PowScalar, a, {e, 0});
  if (auto node = make_node("PowScalarBackward", {a})) {
    node->save(a);
    node->backward = [e](OpNode& n, std::vector<Tensor>& g) -> std::vector<Tensor> {
      return {mul(g[0], mul(pow(n.saved(0), e - 1.0), e))};
    };
    set_outputs(node, {&out});
  }
  return out;
}

Tensor pow(double base, const Tensor& e) {
  Tensor out = unary(EwOp::RpowScalar, e, {base, 0});
  if (auto node = make_node("RpowScalarBackward", {e})) {
    node->save(out, true);
    node->backward = [base](OpNode& n, std::vector<Tensor>& g) -> std::vector<Tensor> {
      return {mul(g[0], mul(n.saved(0), std::log(base)))};
    };
    set_outputs(node, {&out});
  }
  return out;
}

Tensor neg(const Tensor& x) {
  Tensor out = unary(EwOp::Neg, x);
  if (auto node = make_node("NegBackward", {x})) {
    node->backward = [](OpNode&, std::vector<Tensor>& g) -> std::vector<Tensor> { return {neg(g[0])}; };
    set_outputs(node, {&out});
  }
  return out;
}

Tensor exp(const Tensor& x) {
  Tensor out = unary(EwOp::Exp, x);
  if (auto node = make_node("ExpBackward", {x})) {
    node->save(out, true);
    node->backward = [](OpNode& n, std::vector<Tensor>& g) -> std::vector<Tensor> { return {mul(g[0], n.saved(0))}; };
    set_outputs(node, {&out});
  }
  return out;
}

Tensor log(const Tensor& x) {
  Tensor out = unary(EwOp::Log, x);
  if (auto node = make_node("LogBackward", {x})) {
    node->save(x);
    node->backward = [](OpNode& n, std::vector<Tensor>& g) -> std::vector<Tensor> { return {div(g[0], n.saved(0))}; };
    set_outputs(node, {&out});
  }
  return out;
}

Tensor sqrt(const Tensor& x) {
  Tensor out = unary(EwOp::Sqrt, x);
  if (auto node = make_node("SqrtBackward", {x})) {
    node->save(out, true);
    node->backward = [](OpNode& n, std::vector<Tensor>& g) -> std::vector<Tensor> {
      return {div(g[0], mul(n.saved(0), 2.0))};
    };
    set_outputs(node, {&out});
  }
  return out;
}

Tensor rsqrt(const Tensor& x) {
  Tensor out = unary(EwOp::Rsqrt, x);
  if (auto node = make_node("RsqrtBackward", {x})) {
    node->save(out, true);
    node->backward = [](OpNode& n, std::vector<Tensor>& g) -> std::vector<Tensor> {
      return {mul(g[0], mul(pow(n.saved(0), 3.0), -0.5))};
    };
    set_outputs(node, {&out});
  }
  return out;
}

Tensor tanh(const Tensor& x) { return unary_with_backward(EwOp::Tanh, EwOp::TanhBackward, x, true, "TanhBackward"); }
Tensor sigmoid(const Tensor& x) {
  return unary_with_backward(EwOp::Sigmoid, EwOp::SigmoidBackward, x, true, "SigmoidBackward");
}
Tensor relu(const Tensor& x) { return unary_with_backward(EwOp::Relu, EwOp::ReluBackward, x, true, "ReluBackward"); }
Tensor silu(const Tensor& x) { return unary_with_backward(EwOp::Silu, EwOp::SiluBackward, x, false, "SiluBackward"); }
Tensor gelu(const Tensor& x, const std::string& approximate) {
  STRATA_CHECK(approximate == "none" || approximate == "tanh", ValueError,
               "gelu: approximate must be 'none' or 'tanh', got '", approximate, "'");
  if (approximate == "tanh")
    return unary_with_backward(EwOp::GeluTanh, EwOp::GeluTanhBackward, x, false, "GeluTanhBackward");
  return unary_with_backward(EwOp::GeluErf, EwOp::GeluErfBackward, x, false, "GeluBackward");
}
Tensor clamp(const Tensor& x, double lo, double hi) {
  STRATA_CHECK(lo <= hi, ValueError, "clamp: min ", lo, " > max ", hi);
  return unary_with_backward(EwOp::Clamp, EwOp::ClampBackward, x, false, "ClampBackward", {lo, hi});
}

Tensor abs(const Tensor& x) {
  Tensor out = unary(EwOp::Abs, x);
  if (auto node = make_node("AbsBackward", {x})) {
    node->save(x);
    node->backward = [](OpNode& n, std::vector<Tensor>& g) -> std::vector<Tensor> {
      return {mul(g[0], sign(n.saved(0)))};
    };
    set_outputs(node, {&out});
  }
  return out;
}

Tensor sign(const Tensor& x) {
  Tensor out = unary(EwOp::Sign, x);
  if (auto node = make_node("SignBackward", {x})) {
    node->backward = [](OpNode&, std::vector<Tensor>& g) -> std::vector<Tensor> { return {zeros_like(g[0])}; };
    set_outputs(node, {&out});
  }
  return out;
}

Tensor square(const Tensor& x) {
  Tensor out = unary(EwOp::Square, x);
  if (auto node = make_node("SquareBackward", {x})) {
    node->save(x);
    node->backward = [](OpNode& n, std::vector<Tensor>& g) -> std::vector<Tensor> {
      return {mul(g[0], mul(n.saved(0), 2.0))};
    };
    set_outputs(node, {&out});
  }
  return out;
}

Tensor reciprocal(const Tensor& x) {
  Tensor out = unary(EwOp::Reciprocal, x);
  if (auto node = make_node("ReciprocalBackward", {x})) {
    node->save(out, true);
    node->backward = [](OpNode& n, std::vector<Tensor>& g) -> std::vector<Tensor> {
      return {neg(mul(g[0], square(n.saved(0))))};
    };
    set_outputs(node, {&out});
  }
  return out;
}

Tensor sin(const Tensor& x) {
  Tensor out = unary(EwOp::Sin, x);
  if (auto node = make_node("SinBackward", {x})) {
    node->save(x);
    node->backward = [](OpNode& n, std::vector<Tensor>& g) -> std::vector<Tensor> { return {mul(g[0], cos(n.saved(0)))}; };
    set_outputs(node, {&out});
  }
  return out;
}

Tensor cos(const Tensor& x) {
  Tensor out = unary(EwOp::Cos, x);
  if (auto node = make_node("CosBackward", {x})) {
    node->save(x);
    node->backward = [](OpNode& n, std::vector<Tensor>& g) -> std::vector<Tensor> {
      return {neg(mul(g[0], sin(n.saved(0))))};
    };
    set_outputs(node, {&out});
  }
  return out;
}

namespace {
Tensor compare(EwOp op, const Tensor& a, const Tensor& b) {
  DType dt = promote_types(a.dtype(), b.dtype());
  return ew_run(op, {a, b}, dt, DType::boolean);
}
Tensor scalar_like(const Tensor& a, double v) {
  return full({}, v, TensorOptions(is_floating(a.dtype()) || double(int64_t(v)) != v ? float_dtype(a.dtype()) : a.dtype())
                         .device(a.device()));
}
}  // namespace

Tensor eq(const Tensor& a, const Tensor& b) { return compare(EwOp::Eq, a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return compare(EwOp::Ne, a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return compare(EwOp::Lt, a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return compare(EwOp::Le, a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return compare(EwOp::Gt, a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return compare(EwOp::Ge, a, b); }
Tensor eq(const Tensor& a, double b) { return eq(a, scalar_like(a, b)); }
Tensor gt(const Tensor& a, double b) { return gt(a, scalar_like(a, b)); }
Tensor lt(const Tensor& a, double b) { return lt(a, scalar_like(a, b)); }

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  STRATA_CHECK(cond.dtype() == DType::boolean, TypeError, "where: condition must be bool, got ", cond.str());
  DType dt = promote_types(a.dtype(), b.dtype());
  Tensor out = ew_run(EwOp::Where, {cond, a, b}, dt, dt);
  if (auto node = make_node("WhereBackward", {a, b})) {
    node->save(cond);
    node->backward = [sa = a.shape(), sb = b.shape()](OpNode& n, std::vector<Tensor>& g) -> std::vector<Tensor> {
      Tensor c = n.saved(0);
      Tensor zero = zeros({}, TensorOptions(g[0].dtype()).device(g[0].device()));
      Tensor ga, gb;
      if (n.needs_grad(0)) ga = sum_to(where(c, g[0], zero), sa);
      if (n.needs_grad(1)) gb = sum_to(where(c, zero, g[0]), sb);
      return {ga, gb};
    };
    set_outputs(node, {&out});
  }
  return out;
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  STRATA_CHECK(mask.dtype() == DType::boolean, TypeError, "masked_fill: mask must be bool, got ", mask.str());
  Tensor out = where(mask, full({}, value, TensorOptions(x.dtype()).device(x.device())), x);
  STRATA_CHECK(out.shape() == x.shape(), ShapeError, "masked_fill: mask ", shape_str(mask.shape()),
               " does not broadcast to ", shape_str(x.shape()));
  return out;
}

void add_(Tensor& x, const Tensor& y, double alpha) {
  Tensor yy = alpha == 1.0 ? y : ew_run(EwOp::MulScalar, {y}, y.dtype(), y.dtype(), {alpha, 0});
  Tensor args[2] = {x, detail::raw_expand(detail::raw_cast(yy, x.dtype()), x.shape())};
  detail::kernels(x.device()).elementwise(EwOp::Add, x, args);
  detail::record("add_", x.device(), double(x.numel()), double(x.nbytes() + yy.nbytes()), double(x.nbytes()));
  x.bump_version();
}

void mul_(Tensor& x, double s) {
  Tensor args[1] = {x};
  detail::kernels(x.device()).elementwise(EwOp::MulScalar, x, args, {s, 0});
  detail::record("mul_", x.device(), double(x.numel()), double(x.nbytes()), double(x.nbytes()));
  x.bump_version();
}

}  // namespace strata::ops

namespace strata {
Tensor operator+(const Tensor& a, const Tensor& b) { return ops::add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return ops::sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return ops::mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return ops::div(a, b); }
Tensor operator-(const Tensor& a) { return ops::neg(a); }
Tensor operator+(const Tensor& a, double b) { return ops::add(a, b); }
Tensor operator-(const Tensor& a, double b) { return ops::add(a, -b); }
Tensor operator*(const Tensor& a, double b) { return ops::mul(a, b); }
Tensor operator/(const Tensor& a, double b) { return ops::mul(a, 1.0 / b); }
Tensor operator*(double a, const Tensor& b) { return ops::mul(b, a); }
}  // namespace strata
