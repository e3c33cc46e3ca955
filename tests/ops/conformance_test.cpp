// The op conformance harness: every op, every backend, one table (after ggml's test-backend-ops).
// One file of ~1150 lines on purpose: adding an op is adding a row to the one table below.
//
// How it works
//   Each row of the table below (`build_table`) is one OpCase: a name "family.variant", the
//   input specs, a lambda that runs the Strata op, and a lambda that computes the same thing
//   in double precision with the plain loops of tests/support/op_reference.h. An input spec
//   says the shape the op sees, how the tensor is laid out (in(shape) is contiguous; .T()
//   transposed, .step(d) a stride-2 slice with an odd offset, .bcast(base) a stride-0 expand,
//   .offset() a view 3 elements into its storage) and what values it holds (.pos(), .away(),
//   .ints(), .nan(share) for that share of NaN entries, idx(...), mask(...)). Every
//   non-contiguous layout is a differentiable view of a contiguous leaf, so gradients flow
//   through the view ops too.
//
//   For every family, three suites run each of its rows:
//   - Conformance/OpForward: on each backend (CPU; CUDA when compiled and a device is present,
//     otherwise the test is SKIPPED) in f64 and f32, and in bf16 for rows marked .bf16(); inputs
//     are rounded to the dtype first, outputs are compared with the reference by normalized MSE
//     (sum (got - want)^2 / sum want^2) against the row's per-dtype bound, once NaN and inf
//     have matched position for position; integer and bool outputs must match exactly; output
//     shapes and dtypes must match.
//   - Gradcheck/OpGradcheck: in f64, the analytic gradient of sum(out * w) for random w
//     (autograd::grad with w as the seed) against central finite differences, for every
//     floating input, for every row not marked .no_grad().
//   - Conformance/OpMeta: the row on Meta tensors of the same shapes: same output shapes and
//     dtypes as on the CPU, a nonzero cost reported to a CostCounter (zero for rows marked
//     .view(): a view moves no data), and for differentiable rows a backward on Meta that
//     gives gradients of the leaves' shapes. Meta tensors have no data, so nothing is touched.
//
// Adding an op = adding a row (or a family of rows) here:
//   t.add("myop.T", {in({3, 5}).T()}, OP(ops::myop(x[0])), REF(R::map(r[0], my_double_fn)));
// Run: strata_tests --gtest_filter='Conformance*:Gradcheck*:Determinism*', or one family on every
// backend and suite with --gtest_filter='*/myop_cpu:*/myop_cuda:*/myop'.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <numbers>
#include <numeric>
#include <string>

#include "strata/autograd/engine.h"
#include "strata/autograd/grad_mode.h"
#include "strata/core/generator.h"
#include "strata/core/op_observer.h"
#include "strata/core/philox.h"
#include "strata/ops/graph_ops.h"
#include "strata/ops/relational_ops.h"
#include "strata/ops/segment_ops.h"
#include "support/conv_reference.h"
#include "support/graph_reference.h"
#include "support/op_case.h"
#include "support/tensor_compare.h"

// The fused attention kernel joins the table when its op exists.
#if __has_include("strata/ops/attention.h")
#include "strata/ops/attention.h"
#define STRATA_CONFORMANCE_ATTENTION 1
#endif

namespace strata::testing {
namespace {

namespace R = ref;

#define OP(...) [=](const Tensors& x) -> Tensors { return {__VA_ARGS__}; }
#define OPS(...) [=](const Tensors& x) -> Tensors { return __VA_ARGS__; }
#define REF(...) [=](const Refs& r) -> Refs { return {__VA_ARGS__}; }

using UnaryFn = std::function<Tensor(const Tensor&)>;
using BinaryFn = std::function<Tensor(const Tensor&, const Tensor&)>;

class Table {
 public:
  OpCase& add(std::string name, std::vector<InputSpec> inputs, std::function<Tensors(const Tensors&)> run,
              std::function<Refs(const Refs&)> ref) {
    rows.emplace_back(std::move(name), std::move(inputs), std::move(run), std::move(ref));
    return rows.back();
  }

  // Elementwise f(x) on four layouts: odd contiguous, transposed, row-strided, offset.
  void unary(const std::string& name, UnaryFn op, double (*f)(double), Values v = Values::Normal,
             bool bf16 = false) {
    auto run = [op](const Tensors& x) -> Tensors { return {op(x[0])}; };
    auto rf = [f](const Refs& r) -> Refs { return {R::map(r[0], f)}; };
    auto kind = [v](InputSpec s) {
      s.values = v;
      return s;
    };
    add(name + ".c33", {kind(in({33}))}, run, rf);
    OpCase& t = add(name + ".T", {kind(in({3, 5}).T())}, run, rf);
    if (bf16) t.bf16();
    add(name + ".step0", {kind(in({2, 7}).step(0))}, run, rf);
    add(name + ".offset", {kind(in({1, 13}).offset())}, run, rf);
  }

  // Elementwise f(a, b) with broadcasting, on five layout pairs.
  void binary(const std::string& name, BinaryFn op, double (*f)(double, double), Values va = Values::Normal,
              Values vb = Values::Normal, bool bf16 = false) {
    auto run = [op](const Tensors& x) -> Tensors { return {op(x[0], x[1])}; };
    auto rf = [f](const Refs& r) -> Refs { return {R::zip(r[0], r[1], f)}; };
    auto A = [va](InputSpec s) {
      s.values = va;
      return s;
    };
    auto B = [vb](InputSpec s) {
      s.values = vb;
      return s;
    };
    add(name + ".c13", {A(in({13})), B(in({13}))}, run, rf);
    OpCase& bc = add(name + ".bcast", {A(in({4, 3, 5})), B(in({3, 1}).T())}, run, rf);
    if (bf16) bc.bf16();
    add(name + ".T_step", {A(in({5, 3}).T()), B(in({5, 3}).step())}, run, rf);
    add(name + ".expand_offset", {A(in({3, 7}).bcast({3, 1})), B(in({3, 7}).offset())}, run, rf);
    add(name + ".scalar0d", {A(in({2, 7}).step(0)), B(in({}))}, run, rf);
  }

  std::vector<OpCase> rows;
};

double gelu_erf(double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }
double gelu_tanh(double v) {
  return 0.5 * v * (1 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (v + 0.044715 * v * v * v)));
}
double sigmoid(double v) { return 1 / (1 + std::exp(-v)); }
double sign(double v) { return double((v > 0) - (v < 0)); }
double relu_ref(double v) { return R::nan_max(v, 0); }
double clamp_ref(double v) { return R::nan_min(R::nan_max(v, -0.5), 0.7); }

// Same-shape three-input elementwise reference.
template <class F>
Ref zip3(const Ref& a, const Ref& b, const Ref& c, F f) {
  Ref out(a.shape);
  for (int64_t i = 0; i < a.numel(); ++i) out.v[size_t(i)] = f(a.v[size_t(i)], b.v[size_t(i)], c.v[size_t(i)]);
  return out;
}
Ref cast(const Ref& a, DType t) { return R::map(a, [t](double v) { return quantize(v, t); }).as(t); }
Ref compare(const Ref& a, const Ref& b, bool (*f)(double, double)) {
  return R::zip(a, b, [f](double x, double y) { return double(f(x, y)); }).as(DType::boolean);
}
Tensors values_indices(const ops::ValuesIndices& v) { return {v.values, v.indices}; }

using ops::Reduction;

// Elementwise ops, comparisons and selection.
void add_elementwise_rows(Table& t) {
  // ---- elementwise, unary ----
  t.unary("neg", [](const Tensor& x) { return ops::neg(x); }, [](double v) { return -v; }, Values::Normal, true);
  t.unary("exp", [](const Tensor& x) { return ops::exp(x); }, [](double v) { return std::exp(v); }, Values::Normal, true);
  t.unary("log", [](const Tensor& x) { return ops::log(x); }, [](double v) { return std::log(v); }, Values::Positive);
  t.unary("sqrt", [](const Tensor& x) { return ops::sqrt(x); }, [](double v) { return std::sqrt(v); }, Values::Positive);
  t.unary("rsqrt", [](const Tensor& x) { return ops::rsqrt(x); }, [](double v) { return 1 / std::sqrt(v); },
          Values::Positive);
  t.unary("tanh", [](const Tensor& x) { return ops::tanh(x); }, [](double v) { return std::tanh(v); }, Values::Normal, true);
  t.unary("sigmoid", [](const Tensor& x) { return ops::sigmoid(x); }, sigmoid, Values::Normal, true);
  t.unary(
      "relu", [](const Tensor& x) { return ops::relu(x); }, relu_ref, Values::Away, true);
  t.unary("gelu", [](const Tensor& x) { return ops::gelu(x); }, gelu_erf, Values::Normal, true);
  t.unary("gelu_tanh", [](const Tensor& x) { return ops::gelu(x, "tanh"); }, gelu_tanh, Values::Normal, true);
  t.unary("silu", [](const Tensor& x) { return ops::silu(x); }, [](double v) { return v * sigmoid(v); }, Values::Normal, true);
  t.unary("abs", [](const Tensor& x) { return ops::abs(x); }, [](double v) { return std::fabs(v); }, Values::Away);
  t.unary("sign", [](const Tensor& x) { return ops::sign(x); }, sign, Values::Away);
  t.unary("square", [](const Tensor& x) { return ops::square(x); }, [](double v) { return v * v; }, Values::Normal, true);
  t.unary("reciprocal", [](const Tensor& x) { return ops::reciprocal(x); }, [](double v) { return 1 / v; }, Values::Away);
  t.unary("sin", [](const Tensor& x) { return ops::sin(x); }, [](double v) { return std::sin(v); });
  t.unary("cos", [](const Tensor& x) { return ops::cos(x); }, [](double v) { return std::cos(v); });
  t.unary(
      "clamp", [](const Tensor& x) { return ops::clamp(x, -0.5, 0.7); }, clamp_ref);
  // NaN goes through relu and clamp as it does in PyTorch: a NaN feature must not become a finite
  // loss near ln C (relu used to map it to 0).
  t.add("relu.nan_T", {in({5, 7}).T().nan()}, OP(ops::relu(x[0])), REF(R::map(r[0], relu_ref)))
      .bf16()
      .no_grad();
  t.add("clamp.nan_step", {in({3, 9}).step(0).nan()}, OP(ops::clamp(x[0], -0.5, 0.7)),
        REF(R::map(r[0], clamp_ref)))
      .no_grad();
  t.unary("add_scalar", [](const Tensor& x) { return ops::add(x, 2.5); }, [](double v) { return v + 2.5; });
  t.unary("mul_scalar", [](const Tensor& x) { return ops::mul(x, -1.5); }, [](double v) { return v * -1.5; });
  t.unary("pow_scalar", [](const Tensor& x) { return ops::pow(x, 2.5); }, [](double v) { return std::pow(v, 2.5); },
          Values::Positive);
  t.unary("pow_int_scalar", [](const Tensor& x) { return ops::pow(x, 3.0); }, [](double v) { return v * v * v; });
  t.unary("rpow_scalar", [](const Tensor& x) { return ops::pow(1.7, x); }, [](double v) { return std::pow(1.7, v); });

  // ---- elementwise, binary (NumPy broadcasting) ----
  t.binary("add", [](const Tensor& a, const Tensor& b) { return ops::add(a, b); },
           [](double a, double b) { return a + b; }, Values::Normal, Values::Normal, true);
  t.binary("sub", [](const Tensor& a, const Tensor& b) { return ops::sub(a, b); },
           [](double a, double b) { return a - b; }, Values::Normal, Values::Normal, true);
  t.binary("mul", [](const Tensor& a, const Tensor& b) { return ops::mul(a, b); },
           [](double a, double b) { return a * b; }, Values::Normal, Values::Normal, true);
  t.binary("div", [](const Tensor& a, const Tensor& b) { return ops::div(a, b); },
           [](double a, double b) { return a / b; }, Values::Normal, Values::Away, true);
  t.binary("pow", [](const Tensor& a, const Tensor& b) { return ops::pow(a, b); },
           [](double a, double b) { return std::pow(a, b); }, Values::Positive, Values::Normal);
  t.binary("maximum", [](const Tensor& a, const Tensor& b) { return ops::maximum(a, b); },
           [](double a, double b) { return std::max(a, b); });
  t.binary("minimum", [](const Tensor& a, const Tensor& b) { return ops::minimum(a, b); },
           [](double a, double b) { return std::min(a, b); });
  t.binary("add_alpha", [](const Tensor& a, const Tensor& b) { return ops::add(a, b, 0.5); },
           [](double a, double b) { return a + 0.5 * b; });
  t.binary("sub_alpha", [](const Tensor& a, const Tensor& b) { return ops::sub(a, b, 2.0); },
           [](double a, double b) { return a - 2.0 * b; });
  t.add("operators.mixed", {in({3, 4}).T(), in({3, 4}).step(), in({3, 4}).pos()},
        OP(((x[0] + x[1]) * x[0] - x[1] / x[2] + 2.0 * (-x[0]) / 4.0) - 1.0 + x[1] * 0.5),
        REF(zip3(r[0], r[1], r[2], [](double a, double b, double c) {
          return ((a + b) * a - b / c + 2.0 * (-a) / 4.0) - 1.0 + b * 0.5;
        })));

  // ---- comparisons (bool results, not differentiable); small integers make ties ----
  struct Cmp {
    const char* name;
    BinaryFn op;
    bool (*f)(double, double);
  };
  const Cmp cmps[] = {
      {"eq", [](const Tensor& a, const Tensor& b) { return ops::eq(a, b); }, [](double a, double b) { return a == b; }},
      {"ne", [](const Tensor& a, const Tensor& b) { return ops::ne(a, b); }, [](double a, double b) { return a != b; }},
      {"lt", [](const Tensor& a, const Tensor& b) { return ops::lt(a, b); }, [](double a, double b) { return a < b; }},
      {"le", [](const Tensor& a, const Tensor& b) { return ops::le(a, b); }, [](double a, double b) { return a <= b; }},
      {"gt", [](const Tensor& a, const Tensor& b) { return ops::gt(a, b); }, [](double a, double b) { return a > b; }},
      {"ge", [](const Tensor& a, const Tensor& b) { return ops::ge(a, b); }, [](double a, double b) { return a >= b; }},
  };
  for (const Cmp& c : cmps) {
    auto op = c.op;
    auto f = c.f;
    t.add(std::string(c.name) + ".T_bcast", {in({3, 7}).ints().T(), in({7}).ints()}, OP(op(x[0], x[1])),
          REF(compare(r[0], r[1], f)))
        .no_grad()
        .bf16();
    t.add(std::string(c.name) + ".step_offset", {in({2, 5}).ints().step(), in({2, 5}).ints().offset()},
          OP(op(x[0], x[1])), REF(compare(r[0], r[1], f)))
        .no_grad();
  }
  t.add("eq.scalar", {in({3, 5}).ints().T()}, OP(ops::eq(x[0], 1.0)),
        REF(compare(r[0], Ref({}, {1.0}), [](double a, double b) { return a == b; })))
      .no_grad();
  t.add("gt.scalar", {in({13}).ints()}, OP(ops::gt(x[0], 0.5)),
        REF(compare(r[0], Ref({}, {0.5}), [](double a, double b) { return a > b; })))
      .no_grad();
  t.add("lt.scalar", {in({2, 7}).ints().step()}, OP(ops::lt(x[0], -1.0)),
        REF(compare(r[0], Ref({}, {-1.0}), [](double a, double b) { return a < b; })))
      .no_grad();

  // ---- selection ----
  t.add("where.bcast", {mask({4, 1}), in({4, 5}).T(), in({5})}, OP(ops::where(x[0], x[1], x[2])),
        REF(R::where(r[0], r[1], r[2])))
      .bf16();
  t.add("where.step", {mask({3, 4}).step(0), in({3, 4}).step(), in({3, 4}).offset()},
        OP(ops::where(x[0], x[1], x[2])), REF(R::where(r[0], r[1], r[2])));
  t.add("masked_fill.bcast", {in({3, 7}).step(), mask({7})}, OP(ops::masked_fill(x[0], x[1], 3.25)),
        REF(R::where(r[1], Ref({}, {3.25}), r[0])))
      .bf16();
  t.add("masked_fill.T", {in({4, 3}).T(), mask({4, 3}).T()}, OP(ops::masked_fill(x[0], x[1], -7.0)),
        REF(R::where(r[1], Ref({}, {-7.0}), r[0])));
}

// Reductions.
void add_reduction_rows(Table& t) {
  // ---- reductions ----
  t.add("sum.all_T", {in({4, 7}).T()}, OP(ops::sum(x[0])), REF(R::sum(r[0]))).bf16();
  t.add("sum.method_offset", {in({13}).offset()}, OP(x[0].sum()), REF(R::sum(r[0])));
  t.add("sum.dim0_step", {in({3, 5}).step()}, OP(ops::sum(x[0], {0})), REF(R::sum(r[0], {0})));
  t.add("sum.dims02_keep_T", {in({2, 3, 4}).T()}, OP(ops::sum(x[0], {0, 2}, true)), REF(R::sum(r[0], {0, 2}, true)))
      .bf16();
  t.add("sum.last_bcast", {in({3, 4, 5}).bcast({4, 1})}, OP(ops::sum(x[0], {-1})), REF(R::sum(r[0], {-1})));
  t.add("sum.size1_dim", {in({3, 1, 5})}, OP(ops::sum(x[0], {1})), REF(R::sum(r[0], {1})));
  t.add("sum.large_T", {in({181, 203}).T()}, OP(ops::sum(x[0], {0})), REF(R::sum(r[0], {0}))).no_grad();
  t.add("mean.all_offset", {in({13}).offset()}, OP(ops::mean(x[0])), REF(R::mean(r[0])));
  t.add("mean.method_T", {in({3, 5}).T()}, OP(x[0].mean()), REF(R::mean(r[0])));
  t.add("mean.dim1_keep_T", {in({3, 7}).T()}, OP(ops::mean(x[0], {1}, true)), REF(R::mean(r[0], {1}, true))).bf16();
  t.add("mean.dims_step", {in({2, 3, 5}).step(1)}, OP(ops::mean(x[0], {0, -1})), REF(R::mean(r[0], {0, -1})));
  t.add("var.dim1_T", {in({3, 7}).T()}, OP(ops::var(x[0], {1})), REF(R::var(r[0], {1}, 1, false)));
  t.add("var.dims02_keep_c0", {in({2, 3, 4}).step()}, OP(ops::var(x[0], {0, 2}, 0, true)),
        REF(R::var(r[0], {0, 2}, 0, true)));
  t.add("var.all", {in({13})}, OP(ops::var(x[0], {})), REF(R::var(r[0], {}, 1, false)));
  t.add("var.all_keep", {in({3, 4}).T()}, OP(ops::var(x[0], {}, 1, true)), REF(R::var(r[0], {}, 1, true)));
  t.add("norm.l2_all_T", {in({4, 7}).T()}, OP(ops::norm(x[0])), REF(R::norm(r[0], 2, {}, false)));
  t.add("norm.l1_dim1_step", {in({3, 5}).step()}, OP(ops::norm(x[0], 1, {1})),
        REF(R::norm(r[0], 1, {1}, false)));
  t.add("norm.l3_dims02_keep", {in({2, 3, 4})}, OP(ops::norm(x[0], 3, {0, 2}, true)),
        REF(R::norm(r[0], 3, {0, 2}, true)));
  t.add("norm.inf_dims_T", {in({3, 4, 5}).T()}, OP(ops::norm(x[0], INFINITY, {0, -1})),
        REF(R::norm(r[0], INFINITY, {0, -1}, false)));
  t.add("norm.frobenius_batched", {in({2, 3, 4}).offset()}, OP(ops::frobenius_norm(x[0])),
        REF(R::norm(r[0], 2, {-2, -1}, false)));
  t.add("max.all_T", {in({4, 7}).T()}, OP(ops::max(x[0])), REF(R::extremum(r[0], {}, false, true))).bf16();
  t.add("min.all_step", {in({3, 5}).step()}, OP(ops::min(x[0])), REF(R::extremum(r[0], {}, false, false)));
  t.add("max.dim1_keep", {in({3, 7}).step()}, OPS(values_indices(ops::max(x[0], 1, true))),
        REF(R::extremum(r[0], {1}, true, true), R::arg_extremum(r[0], 1, true, true)));
  t.add("max.dim0_T", {in({5, 3}).T()}, OPS(values_indices(ops::max(x[0], 0))),
        REF(R::extremum(r[0], {0}, false, true), R::arg_extremum(r[0], 0, false, true)));
  t.add("min.dim0_offset", {in({5, 3}).offset()}, OPS(values_indices(ops::min(x[0], 0))),
        REF(R::extremum(r[0], {0}, false, false), R::arg_extremum(r[0], 0, false, false)));
  t.add("min.last_keep_3d", {in({2, 3, 4}).T()}, OPS(values_indices(ops::min(x[0], -1, true))),
        REF(R::extremum(r[0], {-1}, true, false), R::arg_extremum(r[0], -1, true, false)));
  t.add("argmax.last_step", {in({3, 7}).step()}, OP(ops::argmax(x[0], -1)), REF(R::arg_extremum(r[0], -1, false, true)))
      .no_grad()
      .bf16();
  t.add("argmax.ties_first", {in({4, 6}).ints()}, OP(ops::argmax(x[0], 1)), REF(R::arg_extremum(r[0], 1, false, true)))
      .no_grad();
  t.add("argmin.dim0_keep_T", {in({5, 3}).T()}, OP(ops::argmin(x[0], 0, true)),
        REF(R::arg_extremum(r[0], 0, true, false)))
      .no_grad();
  t.add("argmin.ties_first", {in({3, 5}).ints().T()}, OP(ops::argmin(x[0], 0)),
        REF(R::arg_extremum(r[0], 0, false, false)))
      .no_grad();
}

// Matrix products.
void add_matmul_rows(Table& t) {
  // ---- matrix products ----
  t.add("matmul.dot", {in({7}), in({7}).step()}, OP(ops::matmul(x[0], x[1])), REF(R::matmul(r[0], r[1])));
  t.add("matmul.vec_mat", {in({5}), in({5, 3}).T()}, OP(ops::matmul(x[0], x[1])), REF(R::matmul(r[0], r[1])));
  t.add("matmul.mat_vec", {in({4, 5}).step(), in({5}).offset()}, OP(ops::matmul(x[0], x[1])),
        REF(R::matmul(r[0], r[1])));
  t.add("matmul.2d", {in({3, 5}), in({5, 4})}, OP(ops::matmul(x[0], x[1])), REF(R::matmul(r[0], r[1]))).bf16();
  t.add("matmul.2d_TT", {in({3, 5}).T(), in({5, 4}).T()}, OP(ops::matmul(x[0], x[1])), REF(R::matmul(r[0], r[1])))
      .bf16();
  t.add("matmul.2d_step", {in({3, 5}).step(), in({5, 4}).step(0)}, OP(ops::matmul(x[0], x[1])),
        REF(R::matmul(r[0], r[1])));
  t.add("matmul.ones", {in({1, 7}), in({7, 1}).T()}, OP(ops::matmul(x[0], x[1])), REF(R::matmul(r[0], r[1])));
  t.add("matmul.batched_bcast", {in({2, 1, 3, 5}), in({4, 5, 2}).T()}, OP(ops::matmul(x[0], x[1])),
        REF(R::matmul(r[0], r[1])))
      .bf16();
  t.add("matmul.batched_mat", {in({2, 3, 5}).T(), in({5, 4})}, OP(ops::matmul(x[0], x[1])), REF(R::matmul(r[0], r[1])));
  t.add("matmul.mat_batched", {in({3, 5}), in({2, 5, 4}).step(1)}, OP(ops::matmul(x[0], x[1])),
        REF(R::matmul(r[0], r[1])));
  t.add("matmul.batch_expand", {in({3, 4, 5}).bcast({4, 5}), in({3, 5, 2})}, OP(ops::matmul(x[0], x[1])),
        REF(R::matmul(r[0], r[1])));
  t.add("matmul.vec_batched", {in({5}), in({2, 5, 3})}, OP(ops::matmul(x[0], x[1])), REF(R::matmul(r[0], r[1])));
  t.add("matmul.batched_vec", {in({2, 3, 5}).T(), in({5})}, OP(ops::matmul(x[0], x[1])), REF(R::matmul(r[0], r[1])));
  t.add("bmm.T_step", {in({3, 4, 5}).T(), in({3, 5, 2}).step(1)}, OP(ops::bmm(x[0], x[1])),
        REF(R::matmul(r[0], r[1])))
      .bf16();
  t.add("bmm.offset", {in({2, 1, 7}).offset(), in({2, 7, 3})}, OP(ops::bmm(x[0], x[1])), REF(R::matmul(r[0], r[1])));
  t.add("linear.bias", {in({4, 5}), in({3, 5}), in({3})}, OP(ops::linear(x[0], x[1], x[2])),
        REF(R::zip(R::matmul(r[0], R::transpose(r[1], 0, 1)), r[2], std::plus<>())))
      .bf16();
  t.add("linear.no_bias_3d", {in({2, 3, 5}).step(), in({4, 5}).T()}, OP(ops::linear(x[0], x[1])),
        REF(R::matmul(r[0], R::transpose(r[1], 0, 1))));
  t.add("linear.vec", {in({5}), in({3, 5}), in({3}).offset()}, OP(ops::linear(x[0], x[1], x[2])),
        REF(R::zip(R::matmul(r[0], R::transpose(r[1], 0, 1)), r[2], std::plus<>())));
}

// Softmax, losses, normalization, fused attention, dropout.
void add_nn_rows(Table& t) {
  // ---- softmax family ----
  t.add("softmax.last_T", {in({3, 7}).T()}, OP(ops::softmax(x[0], -1)), REF(R::softmax(r[0], -1, false))).bf16();
  t.add("softmax.dim1_step", {in({4, 3, 5}).step()}, OP(ops::softmax(x[0], 1)), REF(R::softmax(r[0], 1, false)));
  t.add("softmax.dim0", {in({13, 2})}, OP(ops::softmax(x[0], 0)), REF(R::softmax(r[0], 0, false)));
  t.add("softmax.size1", {in({4, 1}).offset()}, OP(ops::softmax(x[0], -1)), REF(R::softmax(r[0], -1, false)));
  t.add("log_softmax.last_bcast", {in({3, 7}).bcast({7})}, OP(ops::log_softmax(x[0], -1)),
        REF(R::softmax(r[0], -1, true)));
  t.add("log_softmax.dim0_T", {in({5, 3}).T()}, OP(ops::log_softmax(x[0], 0)), REF(R::softmax(r[0], 0, true))).bf16();
  t.add("log_softmax.dim1_3d", {in({2, 33, 3}).step(0)}, OP(ops::log_softmax(x[0], 1)), REF(R::softmax(r[0], 1, true)));

  // ---- losses and normalization ----
  const std::vector<double> tgt{0, 3, -100, 1, 4, 2};
  t.add("cross_entropy.mean", {in({6, 5}).T(), idx({6}, 5, tgt)}, OP(ops::cross_entropy(x[0], x[1])),
        REF(R::cross_entropy(r[0], r[1], -100, R::Reduce::Mean)))
      .bf16();
  t.add("cross_entropy.sum", {in({6, 5}).step(), idx({6}, 5, tgt)},
        OP(ops::cross_entropy(x[0], x[1], -100, Reduction::Sum)), REF(R::cross_entropy(r[0], r[1], -100, R::Reduce::Sum)));
  t.add("cross_entropy.none", {in({6, 5}).offset(), idx({6}, 5, tgt)},
        OP(ops::cross_entropy(x[0], x[1], -100, Reduction::None)),
        REF(R::cross_entropy(r[0], r[1], -100, R::Reduce::None)));
  t.add("cross_entropy.ignore2", {in({6, 5}), idx({6}, 5, {2, 0, 2, 4, 1, 3})},
        OP(ops::cross_entropy(x[0], x[1], 2)), REF(R::cross_entropy(r[0], r[1], 2, R::Reduce::Mean)));
  t.add("cross_entropy.3d", {in({2, 3, 7}).T(), idx({2, 3}, 7)}, OP(ops::cross_entropy(x[0], x[1])),
        REF(R::cross_entropy(r[0], r[1], -100, R::Reduce::Mean)));
  // The fused LM head + loss with BERT's decoder bias: logits x w^T + b never materialized whole.
  t.add("linear_cross_entropy.bias", {in({5, 4}).step(), in({7, 4}), in({7}), idx({5}, 7, {0, 3, -100, 6, 2})},
        OP(ops::linear_cross_entropy(x[0], x[1], x[2], x[3])),
        REF(R::cross_entropy(R::zip(R::matmul(r[0], R::transpose(r[1], 0, 1)), r[2], std::plus<>()), r[3], -100,
                             R::Reduce::Mean)));
  t.add("layer_norm.affine_T", {in({4, 7}).T(), in({7}), in({7})}, OP(ops::layer_norm(x[0], {7}, x[1], x[2])),
        REF(R::layer_norm(r[0], 1, &r[1], &r[2], 1e-5)))
      .bf16();
  t.add("layer_norm.plain_step", {in({3, 13}).step()}, OP(ops::layer_norm(x[0], {13})),
        REF(R::layer_norm(r[0], 1, nullptr, nullptr, 1e-5)));
  t.add("layer_norm.2d_affine", {in({2, 3, 5}), in({3, 5}).T(), in({3, 5}).offset()},
        OP(ops::layer_norm(x[0], {3, 5}, x[1], x[2])), REF(R::layer_norm(r[0], 2, &r[1], &r[2], 1e-5)));
  t.add("layer_norm.bias_only_2d", {in({2, 3, 5}).step(), in({3, 5})},
        OP(ops::layer_norm(x[0], {3, 5}, Tensor(), x[1])), REF(R::layer_norm(r[0], 2, nullptr, &r[1], 1e-5)));
  t.add("layer_norm.weight_only", {in({4, 7}).bcast({7}), in({7})}, OP(ops::layer_norm(x[0], {7}, x[1])),
        REF(R::layer_norm(r[0], 1, &r[1], nullptr, 1e-5)));
  t.add("embedding.2d_idx", {in({10, 4}), idx({2, 3}, 10, {1, 7, 1, 0, 9, 7})}, OP(ops::embedding(x[0], x[1])),
        REF(R::reshape(R::index_select(r[0], 0, r[1]), {2, 3, 4})))
      .bf16();
  t.add("embedding.T_weight", {in({10, 4}).T(), idx({5}, 10, {3, 3, 0, 9, 2})}, OP(ops::embedding(x[0], x[1])),
        REF(R::index_select(r[0], 0, r[1])));

#ifdef STRATA_CONFORMANCE_ATTENTION
  // ---- fused attention against softmax(q k^T * scale + mask) v ----
  {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    auto sdpa = [](const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& m, bool causal, double scale) {
      return ops::scaled_dot_product_attention(q, k, v, m, 0.0, causal, scale);
    };
    t.add("attention.3d", {in({2, 5, 4}).T(), in({2, 6, 4}).step(), in({2, 6, 3})},
          OP(sdpa(x[0], x[1], x[2], Tensor(), false, nan)),
          REF(R::attention(r[0], r[1], r[2], nullptr, false, false, 1 / std::sqrt(4.0))))
        .bf16();
    t.add("attention.causal_4d", {in({1, 2, 5, 4}), in({1, 2, 5, 4}).offset(), in({1, 2, 5, 3}).T()},
          OP(sdpa(x[0], x[1], x[2], Tensor(), true, nan)),
          REF(R::attention(r[0], r[1], r[2], nullptr, false, true, 0.5)))
        .bf16();  // on CUDA the bf16 rows run the fused Tensor Core kernels
    // Every query row keeps at least one key (fully masked rows are attention_test.cpp's business).
    t.add("attention.bool_mask", {in({2, 3, 4}), in({2, 6, 4}), in({2, 6, 2}).step(), mask({3, 6}, {1, 0, 1, 1, 0, 0,
                                                                                                     0, 0, 0, 0, 0, 1,
                                                                                                     1, 1, 1, 1, 1, 1})},
          OP(sdpa(x[0], x[1], x[2], x[3], false, 0.3)), REF(R::attention(r[0], r[1], r[2], &r[3], true, false, 0.3)));
    // GPT's packed q|k|v projection [B, T, 3C] -> [B, T, C], heads read and written in place.
    auto packed_ref = [](const Ref& p, int64_t H, bool causal, const Ref* mask = nullptr, bool bool_mask = false) {
      const int64_t B = p.shape[0], T = p.shape[1], C = p.shape[2] / 3, D = C / H;
      auto heads = [&](int64_t i) { return R::transpose(R::reshape(R::slice(p, 2, i * C, (i + 1) * C), {B, T, H, D}), 1, 2); };
      Ref y = R::attention(heads(0), heads(1), heads(2), mask, bool_mask, causal, 1 / std::sqrt(double(D)));
      return R::reshape(R::transpose(y, 1, 2), {B, T, C});
    };
    t.add("attention.packed_causal", {in({2, 5, 12})}, OP(ops::packed_self_attention(x[0], 2, true)),
          REF(packed_ref(r[0], 2, true)))
        .bf16();
    t.add("attention.packed_full_T", {in({3, 4, 6}).T()}, OP(ops::packed_self_attention(x[0], 1, false)),
          REF(packed_ref(r[0], 1, false)));
    // BERT's packed projection with its key-padding mask [B, 1, 1, T] (bool), and an additive [T, T] one.
    t.add("attention.packed_padding_mask", {in({2, 5, 12}).T(), mask({2, 1, 1, 5}, {1, 1, 1, 0, 0, 1, 1, 1, 1, 1})},
          OP(ops::packed_self_attention(x[0], 2, x[1])), REF(packed_ref(r[0], 2, false, &r[1], true)));
    t.add("attention.packed_additive_mask", {in({2, 4, 6}).step(), in({4, 4}).no_grad()},
          OP(ops::packed_self_attention(x[0], 2, x[1])), REF(packed_ref(r[0], 2, false, &r[1], false)));
    // BERT's padding mask: [B, 1, 1, S] bool, broadcast over heads and queries.
    t.add("attention.padding_mask",
          {in({2, 2, 5, 4}), in({2, 2, 5, 4}).T(), in({2, 2, 5, 3}),
           mask({2, 1, 1, 5}, {1, 1, 1, 0, 0, 1, 1, 1, 1, 1})},
          OP(sdpa(x[0], x[1], x[2], x[3], false, nan)),
          REF(R::attention(r[0], r[1], r[2], &r[3], true, false, 0.5)))
        .bf16();
    t.add("attention.additive_mask", {in({2, 2, 3, 4}), in({2, 2, 5, 4}), in({2, 2, 5, 4}), in({3, 5}).bcast({5}).no_grad()},
          OP(sdpa(x[0], x[1], x[2], x[3], false, nan)),
          REF(R::attention(r[0], r[1], r[2], &r[3], false, false, 0.5)));
  }
#endif

  // ---- dropout: identity cases, and a seeded one whose mask the reference rebuilds from Philox ----
  t.add("dropout.p0", {in({3, 7}).T()}, OP(ops::dropout(x[0], 0.0)), REF(r[0])).view();
  t.add("dropout.eval", {in({3, 7}).step()}, OP(ops::dropout(x[0], 0.5, false)), REF(r[0])).view();
  t.add("dropout.p1", {in({2, 5})}, OP(ops::dropout(x[0], 1.0)), REF(R::map(r[0], [](double) { return 0.0; })));
  t.add("dropout.seeded", {in({5, 7}).step()},
        [](const Tensors& x) -> Tensors {
          Generator g(1234);
          GeneratorGuard guard(g);
          return {ops::dropout(x[0], 0.25)};
        },
        [](const Refs& r) -> Refs {
          Ref out = r[0];
          for (int64_t i = 0; i < out.numel(); ++i) {
            float u = philox::to_uniform(philox::word(1234, 0, uint64_t(i)));
            out.v[size_t(i)] = u >= 0.25f ? out.v[size_t(i)] / 0.75 : 0.0;
          }
          return {out};
        })
      .bf16();
}

// Joining, splitting, views, layout, indexing, in-place ops.
void add_shape_and_index_rows(Table& t) {
  // ---- joining and splitting ----
  t.add("cat.dim0", {in({2, 3}), in({1, 3}).T(), in({4, 3}).step()}, OP(ops::cat({x[0], x[1], x[2]}, 0)),
        REF(R::cat({r[0], r[1], r[2]}, 0)))
      .bf16();
  t.add("cat.dim1", {in({2, 1}), in({2, 3}).T(), in({2, 4}).bcast({4})}, OP(ops::cat({x[0], x[1], x[2]}, 1)),
        REF(R::cat({r[0], r[1], r[2]}, 1)));
  t.add("cat.last_3d", {in({2, 2, 3}).offset(), in({2, 2, 1})}, OP(ops::cat({x[0], x[1]}, -1)),
        REF(R::cat({r[0], r[1]}, -1)));
  for (int64_t d : {0, 1, -1}) {
    t.add("stack.dim" + std::string(d < 0 ? "m1" : std::to_string(d)), {in({3, 4}), in({3, 4}).T(), in({3, 4}).step()},
          OP(ops::stack({x[0], x[1], x[2]}, d)), REF(R::stack({r[0], r[1], r[2]}, d)));
  }
  t.add("split.dim0_T", {in({7, 3}).T()}, [](const Tensors& x) { return ops::split(x[0], 2, 0); },
        REF(R::slice(r[0], 0, 0, 2), R::slice(r[0], 0, 2, 4), R::slice(r[0], 0, 4, 6), R::slice(r[0], 0, 6, 7)))
      .view();
  t.add("split.sizes_step", {in({3, 6}).step(0)}, [](const Tensors& x) { return ops::split_with_sizes(x[0], {1, 4, 1}, 1); },
        REF(R::slice(r[0], 1, 0, 1), R::slice(r[0], 1, 1, 5), R::slice(r[0], 1, 5, 6)))
      .view();
  t.add("chunk.dim1_offset", {in({2, 7}).offset()}, [](const Tensors& x) { return ops::chunk(x[0], 3, 1); },
        REF(R::slice(r[0], 1, 0, 3), R::slice(r[0], 1, 3, 6), R::slice(r[0], 1, 6, 7)))
      .view();

  // ---- views and layout ----
  t.add("view.infer", {in({3, 4})}, OP(ops::view(x[0], {2, -1})), REF(R::reshape(r[0], {2, 6}))).view();
  t.add("view.method_offset", {in({12}).offset()}, OP(x[0].view({3, 4})), REF(R::reshape(r[0], {3, 4}))).view();
  t.add("reshape.copy_T", {in({3, 4}).T()}, OP(ops::reshape(x[0], {4, 3})), REF(R::reshape(r[0], {4, 3})));
  t.add("reshape.view", {in({2, 3, 4})}, OP(x[0].reshape({6, -1})), REF(R::reshape(r[0], {6, 4}))).view();
  t.add("permute.step", {in({2, 3, 4}).step()}, OP(ops::permute(x[0], {2, 0, 1})), REF(R::permute(r[0], {2, 0, 1})))
      .view();
  t.add("transpose.bcast", {in({3, 4, 5}).bcast({4, 1})}, OP(ops::transpose(x[0], 0, 2)),
        REF(R::transpose(r[0], 0, 2)))
      .view();
  t.add("transpose.method_t", {in({3, 5}).step()}, OP(x[0].t()), REF(R::transpose(r[0], 0, 1))).view();
  t.add("narrow.T", {in({3, 7}).T()}, OP(ops::narrow(x[0], 1, 2, 3)), REF(R::slice(r[0], 1, 2, 5))).view();
  t.add("narrow.negative_start", {in({5, 3})}, OP(x[0].narrow(0, -2, 2)), REF(R::slice(r[0], 0, 3, 5))).view();
  t.add("select.step", {in({4, 3, 5}).step()}, OP(ops::select(x[0], 1, -1)), REF(R::select(r[0], 1, 2))).view();
  t.add("select.method", {in({4, 3}).T()}, OP(x[0].select(0, 1)), REF(R::select(r[0], 0, 1))).view();
  t.add("slice.step3", {in({3, 13})}, OP(ops::slice(x[0], 1, 1, 13, 3)), REF(R::slice(r[0], 1, 1, 13, 3))).view();
  t.add("slice.clamped", {in({2, 7}).T()}, OP(x[0].slice(1, -4, 100, 2)), REF(R::slice(r[0], 1, 3, 7, 2))).view();
  t.add("expand.new_dims", {in({3, 1})}, OP(ops::expand(x[0], {2, 3, 4})), REF(R::broadcast_to(r[0], {2, 3, 4}))).view();
  t.add("expand.minus1_T", {in({3, 1}).T()}, OP(x[0].expand({-1, 5})), REF(R::broadcast_to(r[0], {3, 5}))).view();
  t.add("unsqueeze.mid", {in({3, 4}).T()}, OP(ops::unsqueeze(x[0], 1)), REF(R::unsqueeze(r[0], 1))).view();
  t.add("unsqueeze.last", {in({3, 4}).step()}, OP(x[0].unsqueeze(-1)), REF(R::unsqueeze(r[0], -1))).view();
  t.add("squeeze.size1", {in({3, 1, 4})}, OP(ops::squeeze(x[0], 1)), REF(R::reshape(r[0], {3, 4}))).view();
  t.add("squeeze.not_size1", {in({3, 4}).T()}, OP(x[0].squeeze(0)), REF(r[0])).view();
  t.add("flatten.copy_T", {in({2, 3, 4}).T()}, OP(ops::flatten(x[0], 1, 2)), REF(R::reshape(r[0], {2, 12})));
  t.add("flatten.all", {in({2, 3, 4})}, OP(x[0].flatten()), REF(R::reshape(r[0], {24}))).view();
  t.add("contiguous.T", {in({3, 5}).T()}, OP(ops::contiguous(x[0])), REF(r[0])).bf16();
  t.add("contiguous.already", {in({3, 5})}, OP(x[0].contiguous()), REF(r[0])).view();
  t.add("clone.step", {in({3, 5}).step()}, OP(ops::clone(x[0])), REF(r[0])).bf16();
  t.add("clone.method_bcast", {in({3, 5}).bcast({5})}, OP(x[0].clone()), REF(r[0]));
  t.add("to.f64", {in({3, 5}).T()}, OP(ops::to(x[0], DType::f64)), REF(Ref(r[0]).as(DType::f64))).bf16();
  t.add("to.f32_roundtrip", {in({3, 5}).step()}, OP(ops::to(ops::to(x[0], DType::f32), DType::f64)),
        REF(cast(r[0], DType::f32).as(DType::f64)))
      .fd(1e-2, 1e-4);
  t.add("to.bf16", {in({3, 5}).offset()}, OP(x[0].to(DType::bf16)), REF(cast(r[0], DType::bf16))).no_grad();
  t.add("to.i64", {in({13}).ints()}, OP(ops::to(x[0], DType::i64)), REF(Ref(r[0]).as(DType::i64))).no_grad();
  t.add("sum_to.T", {in({2, 3, 4}).T()}, OP(ops::sum_to(x[0], {3, 1})), REF(R::reshape(R::sum(r[0], {0, 2}), {3, 1})));

  // ---- indexing ----
  t.add("index_select.dim0_T", {in({5, 3}).T(), idx({4}, 5, {4, 0, 4, 2})}, OP(ops::index_select(x[0], 0, x[1])),
        REF(R::index_select(r[0], 0, r[1])))
      .bf16();
  t.add("index_select.dim1_step", {in({3, 7}).step(), idx({5}, 7, {6, 0, 3, 3, 1})},
        OP(ops::index_select(x[0], 1, x[1])), REF(R::index_select(r[0], 1, r[1])));
  t.add("gather.dim1_T", {in({3, 5}).T(), idx({3, 4}, 5)}, OP(ops::gather(x[0], 1, x[1])), REF(R::gather(r[0], 1, r[1])))
      .bf16();
  t.add("gather.dim0_step", {in({4, 3}).step(), idx({2, 3}, 4)}, OP(ops::gather(x[0], 0, x[1])),
        REF(R::gather(r[0], 0, r[1])));
  t.add("scatter_add.dim0", {in({4, 3}), idx({5, 3}, 4), in({5, 3}).T()}, OP(ops::scatter_add(x[0], 0, x[1], x[2])),
        REF(R::scatter_add(r[0], 0, r[1], r[2])))
      .bf16();
  t.add("scatter_add.dim1", {in({3, 4}).step(), idx({3, 6}, 4), in({3, 6}).offset()},
        OP(ops::scatter_add(x[0], 1, x[1], x[2])), REF(R::scatter_add(r[0], 1, r[1], r[2])));
  t.add("index_add.dim1", {in({3, 5}).step(), idx({3}, 5, {4, 0, 4}), in({3, 3}).T()},
        OP(ops::index_add(x[0], 1, x[1], x[2])), REF(R::index_add(r[0], 1, r[1], r[2])))
      .bf16();
  t.add("index_add.dim0", {in({4, 2}), idx({5}, 4, {1, 1, 3, 0, 1}), in({5, 2})},
        OP(ops::index_add(x[0], 0, x[1], x[2])), REF(R::index_add(r[0], 0, r[1], r[2])));

  // ---- in-place (not differentiable) ----
  t.add("add_.alpha_bcast", {in({3, 7}).T(), in({7})},
        [](const Tensors& x) -> Tensors {
          Tensor y = ops::clone(x[0]);
          ops::add_(y, x[1], 0.5);
          return {y};
        },
        REF(R::zip(r[0], r[1], [](double a, double b) { return a + 0.5 * b; })))
      .no_grad();
  t.add("mul_.scalar", {in({3, 5}).step()},
        [](const Tensors& x) -> Tensors {
          Tensor y = ops::clone(x[0]);
          ops::mul_(y, -2.0);
          return {y};
        },
        REF(R::map(r[0], [](double a) { return -2.0 * a; })))
      .no_grad();
}

// Convolution, batch norm, pooling.
void add_conv_rows(Table& t) {
  // ---- convolution, batch norm, pooling (NCHW): f64 runs Strata's im2col kernels, f32 oneDNN ----
  {
    auto conv = [&t](const std::string& name, std::vector<InputSpec> ins, ops::Size2 st, ops::Size2 pad, ops::Size2 dil,
                     int64_t groups) {
      const bool bias = ins.size() == 3;
      R::ConvGeom g{st[0], st[1], pad[0], pad[1], dil[0], dil[1], groups};
      return t.add("conv2d." + name, std::move(ins),
                   OP(ops::conv2d(x[0], x[1], bias ? x[2] : Tensor(), st, pad, dil, groups)),
                   REF(R::conv2d(r[0], r[1], bias ? &r[2] : nullptr, g)));
    };
    conv("3x3_pad1", {in({2, 3, 7, 6}), in({4, 3, 3, 3}), in({4})}, {1, 1}, {1, 1}, {1, 1}, 1);
    conv("stride21_step", {in({1, 2, 9, 8}).step(), in({3, 2, 3, 2}), in({3})}, {2, 1}, {1, 0}, {1, 1}, 1);
    conv("dilated_nobias", {in({1, 3, 9, 10}), in({2, 3, 3, 3}).T()}, {1, 1}, {2, 1}, {2, 1}, 1);
    conv("groups2_stride2", {in({2, 4, 5, 5}), in({6, 2, 3, 3}), in({6})}, {2, 2}, {1, 1}, {1, 1}, 2);
    conv("depthwise", {in({1, 3, 6, 5}).offset(), in({3, 1, 3, 3})}, {1, 1}, {1, 1}, {1, 1}, 3);
    conv("pointwise_T", {in({2, 5, 4, 3}).T(), in({3, 5, 1, 1}), in({3})}, {1, 1}, {0, 0}, {1, 1}, 1);
    conv("pointwise_stride2", {in({2, 4, 5, 7}), in({6, 4, 1, 1})}, {2, 2}, {0, 0}, {1, 1}, 1);
    conv("stem7x7_s2", {in({1, 3, 11, 13}), in({4, 3, 7, 7})}, {2, 2}, {3, 3}, {1, 1}, 1);
    conv("odd_17x13", {in({2, 3, 17, 13}), in({5, 3, 3, 3}), in({5})}, {2, 2}, {1, 1}, {1, 1}, 1).fd(1e-6, 1e-5);

    t.add("batch_norm.train_affine", {in({3, 4, 5, 2}), in({4}), in({4})},
          OP(ops::batch_norm(x[0], Tensor(), Tensor(), x[1], x[2], true, 0.1, 1e-5)),
          REF(R::batch_norm(r[0], nullptr, nullptr, &r[1], &r[2], true, 0.1, 1e-5)[0]));
    t.add("batch_norm.train_running",
          {in({2, 3, 4, 3}), in({3}).no_grad(), in({3}).pos().no_grad(), in({3}), in({3})},
          [](const Tensors& x) -> Tensors {
            Tensor y = ops::batch_norm(x[0], x[1], x[2], x[3], x[4], true, 0.3, 1e-5);
            return {y, x[1], x[2]};
          },
          [](const Refs& r) -> Refs { return R::batch_norm(r[0], &r[1], &r[2], &r[3], &r[4], true, 0.3, 1e-5); })
        .no_grad();
    t.add("batch_norm.eval", {in({2, 3, 4, 4}), in({3}).no_grad(), in({3}).pos().no_grad(), in({3}), in({3})},
          OP(ops::batch_norm(x[0], x[1], x[2], x[3], x[4], false, 0.1, 1e-3)),
          REF(R::batch_norm(r[0], &r[1], &r[2], &r[3], &r[4], false, 0.1, 1e-3)[0]));
    t.add("batch_norm.rows_2d", {in({6, 5}).T(), in({5})},
          OP(ops::batch_norm(x[0], Tensor(), Tensor(), x[1], Tensor(), true, 0.1, 1e-5)),
          REF(R::batch_norm(r[0], nullptr, nullptr, &r[1], nullptr, true, 0.1, 1e-5)[0]));
    t.add("batch_norm.plain_step", {in({2, 3, 4, 5}).step()},
          OP(ops::batch_norm(x[0], Tensor(), Tensor(), Tensor(), Tensor(), true, 0.1, 1e-5)),
          REF(R::batch_norm(r[0], nullptr, nullptr, nullptr, nullptr, true, 0.1, 1e-5)[0]));

    auto pool = [&t](const std::string& name, InputSpec x0, R::PoolGeom g,
                     std::function<Tensor(const Tensor&)> f) -> OpCase& {
      return t.add(name, {std::move(x0)}, OP(f(x[0])), REF(R::pool2d(r[0], g)));
    };
    R::PoolGeom mp{3, 3, 2, 2, 1, 1};
    pool("max_pool2d.k3s2p1", in({2, 3, 9, 8}), mp, [](const Tensor& x) { return ops::max_pool2d(x, {3, 3}, {2, 2}, {1, 1}); });
    R::PoolGeom md{2, 3, 2, 2, 1, 0, 1, 2};
    md.ceil_mode = true;
    pool("max_pool2d.ceil_dilated_T", in({1, 2, 7, 8}).T(), md,
         [](const Tensor& x) { return ops::max_pool2d(x, {2, 3}, {2, 2}, {1, 0}, {1, 2}, true); });
    pool("max_pool2d.nan", in({2, 2, 6, 6}).nan(0.06), mp, [](const Tensor& x) {
      return ops::max_pool2d(x, {3, 3}, {2, 2}, {1, 1});
    }).no_grad();
    R::PoolGeom ap{2, 2, 2, 2, 0, 0};
    ap.max = false;
    pool("avg_pool2d.k2", in({2, 3, 6, 5}), ap, [](const Tensor& x) { return ops::avg_pool2d(x, {2, 2}); });
    R::PoolGeom ae{3, 3, 2, 2, 1, 1};
    ae.max = false, ae.ceil_mode = true, ae.count_include_pad = false;
    pool("avg_pool2d.pad_ceil_exclude", in({1, 2, 8, 7}).step(), ae,
         [](const Tensor& x) { return ops::avg_pool2d(x, {3, 3}, {2, 2}, {1, 1}, true, false); });
    R::PoolGeom ai{3, 2, 1, 2, 1, 1};
    ai.max = false;
    pool("avg_pool2d.pad_include", in({2, 2, 5, 6}), ai,
         [](const Tensor& x) { return ops::avg_pool2d(x, {3, 2}, {1, 2}, {1, 1}); });
    R::PoolGeom gl;
    gl.adaptive = true, gl.out_h = 1, gl.out_w = 1;
    pool("adaptive_avg_pool2d.global", in({2, 3, 5, 7}), gl, [](const Tensor& x) { return ops::adaptive_avg_pool2d(x, {1, 1}); });
    R::PoolGeom ao;
    ao.adaptive = true, ao.out_h = 3, ao.out_w = 2;
    pool("adaptive_avg_pool2d.odd_T", in({1, 2, 7, 5}).T(), ao,
         [](const Tensor& x) { return ops::adaptive_avg_pool2d(x, {3, 2}); });
  }
}

// Message passing, segments, relational message passing and GEMMs.
void add_graph_rows(Table& t) {
  // ---- message passing and segments: 6 nodes, a duplicate edge (0->1 twice), a self loop (3->3),
  // node 5 isolated, node 4 only a source. The graph follows the op's inputs to their device. ----
  {
    static const Graph g6 =
        Graph::from_edges(6, ops::from_vector(std::vector<int64_t>{0, 0, 2, 3, 4, 1, 4, 2}, {8}),
                          ops::from_vector(std::vector<int64_t>{1, 1, 1, 3, 0, 2, 2, 0}, {8}));
    const std::vector<int64_t> gs = g6.src().to_vector<int64_t>(), gd = g6.dst().to_vector<int64_t>();
    auto G = [](const Tensor& t) { return g6.to(t.device()); };
    t.add("gspmm.sum_w", {in({6, 3}), in({8})}, OP(ops::gspmm(G(x[0]), x[0], x[1])),
          REF(R::gspmm(gs, gd, 6, r[0], &r[1], "sum")));
    t.add("gspmm.mean_T", {in({6, 3}).T()}, OP(ops::gspmm(G(x[0]), x[0], Tensor(), "mean")),
          REF(R::gspmm(gs, gd, 6, r[0], nullptr, "mean")));
    t.add("gspmm.max", {in({6, 4})}, OP(ops::gspmm(G(x[0]), x[0], Tensor(), "max")),
          REF(R::gspmm(gs, gd, 6, r[0], nullptr, "max")));
    t.add("gspmm.min_step", {in({6, 3}).step()}, OP(ops::gspmm(G(x[0]), x[0], Tensor(), "min")),
          REF(R::gspmm(gs, gd, 6, r[0], nullptr, "min")));
    // SAGE's max and min aggregators: a NaN message wins whatever it meets.
    t.add("gspmm.max_nan", {in({6, 4}).nan(0.3)}, OP(ops::gspmm(G(x[0]), x[0], Tensor(), "max")),
          REF(R::gspmm(gs, gd, 6, r[0], nullptr, "max")))
        .no_grad();
    t.add("gspmm.min_nan_step", {in({6, 3}).step().nan()}, OP(ops::gspmm(G(x[0]), x[0], Tensor(), "min")),
          REF(R::gspmm(gs, gd, 6, r[0], nullptr, "min")))
        .no_grad();
    t.add("gspmm.heads", {in({6, 2, 3}), in({8, 2})}, OP(ops::gspmm(G(x[0]), x[0], x[1])),
          REF(R::gspmm(gs, gd, 6, r[0], &r[1], "sum")));
    auto ends = [gs, gd](const Ref& a, const std::string& ta, const Ref& b, const std::string& tb) {
      auto pick = [&](const Ref& v, const std::string& tv) {
        return tv == "e" ? v : R::gather_rows(v, tv == "u" ? gs : gd);
      };
      return std::make_pair(pick(a, ta), pick(b, tb));
    };
    t.add("gsddmm.add_uv", {in({6, 2}), in({6, 2})}, OP(ops::gsddmm(G(x[0]), "add", x[0], x[1], "u", "v")),
          [ends](const Refs& r) -> Refs {
            auto [a, b] = ends(r[0], "u", r[1], "v");
            return {R::zip(a, b, std::plus<>())};
          });
    t.add("gsddmm.mul_ue", {in({6, 3}), in({8, 3}).T()},
          OP(ops::gsddmm(G(x[0]), "mul", x[0], x[1], "u", "e")), [ends](const Refs& r) -> Refs {
            auto [a, b] = ends(r[0], "u", r[1], "e");
            return {R::zip(a, b, std::multiplies<>())};
          });
    t.add("gsddmm.sub_ve", {in({6, 1}), in({8, 3})}, OP(ops::gsddmm(G(x[0]), "sub", x[0], x[1], "v", "e")),
          [ends](const Refs& r) -> Refs {
            auto [a, b] = ends(r[0], "v", r[1], "e");
            return {R::zip(a, b, std::minus<>())};
          });
    t.add("gsddmm.dot_heads", {in({6, 2, 3}), in({6, 2, 3})},
          OP(ops::gsddmm(G(x[0]), "dot", x[0], x[1], "v", "u")), [ends](const Refs& r) -> Refs {
            auto [a, b] = ends(r[0], "v", r[1], "u");
            return {R::sum(R::zip(a, b, std::multiplies<>()), {2})};
          });
    t.add("gsddmm.dot_ev", {in({8, 4}), in({6, 4})}, OP(ops::gsddmm(G(x[0]), "dot", x[0], x[1], "e", "v")),
          [ends](const Refs& r) -> Refs {
            auto [a, b] = ends(r[0], "e", r[1], "v");
            return {R::sum(R::zip(a, b, std::multiplies<>()), {1})};
          });
    t.add("edge_softmax.heads", {in({8, 2})}, OP(ops::edge_softmax(G(x[0]), x[0])),
          [gd](const Refs& r) -> Refs {
            Ref e = R::map(r[0], [](double v) { return std::exp(v); });
            Ref den = R::gather_rows(R::scatter_rows(e, gd, 6, "sum"), gd);
            return {R::zip(e, den, std::divides<>())};
          });
  }
  // ---- relational message passing: 2 node types (a: 0-3, b: 4-6), 3 relations, a duplicate edge and
  // a self loop; messages kept per source-relation pair, per edge, or summed per destination pair ----
  {
    static const Graph t7 = Graph::from_typed_edges(
        {"a", "b"}, {4, 3}, {{0, "ab", 1}, {1, "ba", 0}, {0, "aa", 0}},
        ops::from_vector(std::vector<int64_t>{0, 0, 1, 0, 3, 4, 4, 6, 5, 0, 2, 2, 1, 0}, {14}),
        ops::from_vector(std::vector<int64_t>{4, 5, 4, 4, 6, 0, 1, 2, 0, 1, 1, 3, 1, 3}, {14}),
        ops::from_vector(std::vector<int64_t>{0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 2}, {14}));
    const std::vector<int64_t> ts = t7.src().to_vector<int64_t>(), td = t7.dst().to_vector<int64_t>();
    std::vector<int64_t> trel;
    for (int64_t r = 0; r < t7.num_relations(); ++r)
      for (int64_t e = t7.relation_offset(r); e < t7.relation_offset(r + 1); ++e) trel.push_back(r);
    const std::vector<int64_t> sp = R::pair_ids(ts, trel), dp = R::pair_ids(td, trel);
    std::vector<int64_t> te(14);
    std::iota(te.begin(), te.end(), int64_t(0));
    const int64_t P = *std::max_element(sp.begin(), sp.end()) + 1,
                  D = *std::max_element(dp.begin(), dp.end()) + 1;
    auto G = [](const Tensor& t) { return t7.to(t.device()); };
    t.add("gspmm_pairs.w", {in({P, 3}), in({14})}, OP(ops::gspmm_pairs(G(x[0]), x[0], x[1])),
          REF(R::gspmm(sp, td, 7, r[0], &r[1], "sum")));
    t.add("gspmm_pairs.heads_T", {in({P, 2, 2}), in({14, 2}).T()}, OP(ops::gspmm_pairs(G(x[0]), x[0], x[1])),
          REF(R::gspmm(sp, td, 7, r[0], &r[1], "sum")));
    t.add("gspmm_edges.w", {in({14, 3}).step(), in({14})}, OP(ops::gspmm_edges(G(x[0]), x[0], x[1])),
          REF(R::gspmm(te, td, 7, r[0], &r[1], "sum")));
    t.add("gspmm_edges.plain", {in({14, 2})}, OP(ops::gspmm_edges(G(x[0]), x[0])),
          REF(R::gspmm(te, td, 7, r[0], nullptr, "sum")));
    t.add("gspmm_to_pairs.w", {in({7, 3}), in({14})}, OP(ops::gspmm_to_pairs(G(x[0]), x[0], x[1])),
          REF(R::gspmm(ts, dp, D, r[0], &r[1], "sum")));
    t.add("edge_softmax.across_relations", {in({14, 2})}, OP(ops::edge_softmax(G(x[0]), x[0], true)),
          [td](const Refs& r) -> Refs {
            Ref e = R::map(r[0], [](double v) { return std::exp(v); });
            Ref den = R::gather_rows(R::scatter_rows(e, td, 7, "sum"), td);
            return {R::zip(e, den, std::divides<>())};
          });
    t.add("gsddmm_pairs.heads", {in({P, 4}), in({7, 4})}, OP(ops::gsddmm_pairs(G(x[0]), x[0], x[1], 2)),
          [sp, td](const Refs& r) -> Refs {
            Ref a = R::gather_rows(r[0], sp), b = R::gather_rows(r[1], td);
            Ref out(Shape{14, 2});
            for (int64_t e = 0; e < 14; ++e)
              for (int64_t c = 0; c < 4; ++c)
                out.v[size_t(e * 2 + c / 2)] += a.v[size_t(e * 4 + c)] * b.v[size_t(e * 4 + c)];
            return {out};
          });
    t.add("gspmm_to_pairs.heads", {in({7, 2, 3}), in({14, 2})}, OP(ops::gspmm_to_pairs(G(x[0]), x[0], x[1])),
          REF(R::gspmm(ts, dp, D, r[0], &r[1], "sum")));
  }
  for (const char* red : {"sum", "mean", "max", "min"}) {
    const std::string rd = red;
    t.add("segment_reduce." + rd, {in({7, 3}), idx({5}, 8, {0, 2, 2, 5, 7})},
          OP(ops::segment_reduce(x[0], x[1], rd)), REF(R::scatter_rows(r[0], R::segment_ids(r[1]), 4, rd)));
    t.add("scatter_reduce_rows." + rd, {in({6, 2, 2}).T(), idx({6}, 4, {3, 0, 3, 1, 3, 0})},
          OP(ops::scatter_reduce_rows(x[0], x[1], 5, rd)),
          REF(R::scatter_rows(r[0], R::as_ids(r[1]), 5, rd)));
  }
  for (const char* red : {"max", "min"}) {
    const std::string rd = red;
    t.add("segment_reduce." + rd + "_nan", {in({7, 3}).nan(), idx({5}, 8, {0, 2, 2, 5, 7})},
          OP(ops::segment_reduce(x[0], x[1], rd)), REF(R::scatter_rows(r[0], R::segment_ids(r[1]), 4, rd)))
        .no_grad();
    t.add("scatter_reduce_rows." + rd + "_nan", {in({6, 2, 2}).T().nan(), idx({6}, 4, {3, 0, 3, 1, 3, 0})},
          OP(ops::scatter_reduce_rows(x[0], x[1], 5, rd)), REF(R::scatter_rows(r[0], R::as_ids(r[1]), 5, rd)))
        .no_grad();
  }
  t.add("gather_rows.T", {in({5, 3}).T(), idx({6}, 5, {4, 0, 4, 2, 1, 4})}, OP(ops::gather_rows(x[0], x[1])),
        REF(R::gather_rows(r[0], R::as_ids(r[1]))));

  // ---- relational GEMMs: segments of rows, each with its own matrix (an empty segment in each) ----
  t.add("segment_matmul.plain", {in({7, 3}), in({3, 3, 4})},
        OP(ops::segment_matmul(x[0], {0, 2, 2, 7}, x[1])),
        REF(R::segment_mm(r[0], {}, r[1], {0, 2, 2, 7}, {}, nullptr, 0)));
  t.add("segment_matmul.gather_scatter_scale",
        {in({5, 3}).T(), in({3, 3, 4}), idx({6}, 5, {4, 0, 4, 2, 1, 3}), idx({6}, 4, {1, 3, 1, 0, 1, 1}),
         in({6})},
        OP(ops::segment_matmul(x[0], {0, 4, 4, 6}, x[1],
                               {.gather = x[2], .scatter = x[3], .scale = x[4], .num_rows = 4})),
        REF(R::segment_mm(r[0], R::as_ids(r[2]), r[1], {0, 4, 4, 6}, R::as_ids(r[3]), &r[4], 4)));
  t.add("segment_matmul.weight_T_gather", {in({4, 5}), in({2, 5, 3}).T(), idx({7}, 4, {3, 3, 0, 1, 2, 0, 3})},
        OP(ops::segment_matmul(x[0], {0, 3, 7}, x[1], {.gather = x[2]})),
        REF(R::segment_mm(r[0], R::as_ids(r[2]), r[1], {0, 3, 7}, {}, nullptr, 0)));
  // Past one 128-row tile and one wave of tiles: 3 segments over 4500 rows scattered to 40.
  t.add("segment_matmul.large_scatter", {in({60, 6}), in({3, 6, 5}), idx({4500}, 60), idx({4500}, 40)},
        OP(ops::segment_matmul(x[0], {0, 1000, 1100, 4500}, x[1],
                               {.gather = x[2], .scatter = x[3], .num_rows = 40})),
        REF(R::segment_mm(r[0], R::as_ids(r[2]), r[1], {0, 1000, 1100, 4500}, R::as_ids(r[3]), nullptr, 40)))
      .no_grad()
      .tol32(1e-9);
}

// Sizes past the CPU's parallel grain.
void add_large_rows(Table& t) {
  // ---- sizes past the CPU's parallel grain (32768 elements): OpenMP chunks start mid-row ----
  t.add("large.add_T_bcast", {in({181, 203}).T(), in({203})}, OP(ops::add(x[0], x[1])),
        REF(R::zip(r[0], r[1], std::plus<>())))
      .no_grad();
  t.add("large.exp_step", {in({97, 379}).step()}, OP(ops::exp(x[0])), REF(R::map(r[0], [](double v) { return std::exp(v); })))
      .no_grad();
  t.add("large.contiguous_T", {in({190, 190}).T()}, OP(ops::contiguous(x[0])), REF(r[0])).no_grad();
  t.add("large.softmax", {in({64, 600})}, OP(ops::softmax(x[0], -1)), REF(R::softmax(r[0], -1, false))).no_grad();
  t.add("large.layer_norm", {in({64, 600}), in({600}), in({600})}, OP(ops::layer_norm(x[0], {600}, x[1], x[2])),
        REF(R::layer_norm(r[0], 1, &r[1], &r[2], 1e-5)))
      .no_grad()
      .tol32(1e-9);
  t.add("large.gather", {in({200, 200}), idx({200, 200}, 200)}, OP(ops::gather(x[0], 1, x[1])),
        REF(R::gather(r[0], 1, r[1])))
      .no_grad();
  t.add("large.scatter_add", {in({200, 50}), idx({200, 200}, 50), in({200, 200})},
        OP(ops::scatter_add(x[0], 1, x[1], x[2])), REF(R::scatter_add(r[0], 1, r[1], r[2])))
      .no_grad();
}

std::vector<OpCase> build_table() {
  Table t;
  add_elementwise_rows(t);
  add_reduction_rows(t);
  add_matmul_rows(t);
  add_nn_rows(t);
  add_shape_and_index_rows(t);
  add_conv_rows(t);
  add_graph_rows(t);
  add_large_rows(t);
  return std::move(t.rows);
}

const std::vector<OpCase>& table() {
  static const std::vector<OpCase> rows = build_table();
  return rows;
}

// Families ("add" for "add.c13", "add.bcast", ...) are the unit of a test: one line per op and
// backend in the report, the rows inside named by SCOPED_TRACE.
struct Family {
  std::string name;
  std::vector<size_t> rows;
};
const std::vector<Family>& families() {
  static const std::vector<Family> fams = [] {
    std::vector<Family> out;
    std::map<std::string, size_t> at;
    for (size_t i = 0; i < table().size(); ++i) {
      const std::string& n = table()[i].name;
      std::string fam = n.substr(0, n.find('.'));
      auto [it, fresh] = at.emplace(fam, out.size());
      if (fresh) out.push_back({fam, {}});
      out[it->second].rows.push_back(i);
    }
    return out;
  }();
  return fams;
}

struct Param {
  size_t family;
  DeviceType device;
};
void PrintTo(const Param& p, std::ostream* os) {
  *os << families()[p.family].name << " on " << Device(p.device).str();
}

std::vector<Param> params(bool grad_only, bool meta) {
  std::vector<Param> out;
  for (size_t f = 0; f < families().size(); ++f) {
    bool any = !grad_only;
    for (size_t r : families()[f].rows) any = any || table()[r].differentiable;
    if (!any) continue;
    if (meta) {
      out.push_back({f, DeviceType::Meta});
    } else {
      out.push_back({f, DeviceType::CPU});
      out.push_back({f, DeviceType::CUDA});
    }
  }
  return out;
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  const char* dev = info.param.device == DeviceType::CPU ? "_cpu" : info.param.device == DeviceType::CUDA ? "_cuda" : "";
  return families()[info.param.family].name + dev;
}

class OpTest : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    if (GetParam().device != DeviceType::Meta && !backend_present(GetParam().device))
      GTEST_SKIP() << "backend not compiled in or no device present";
  }
  Device device() const { return Device(GetParam().device, 0); }
  const Family& family() const { return families()[GetParam().family]; }
};

DType coarser(DType a, DType b) {
  auto rank = [](DType t) { return t == DType::f64 ? 2 : t == DType::f32 ? 1 : 0; };
  return rank(a) <= rank(b) ? a : b;
}

void expect_matches(const OpCase& c, const Tensors& out, const Refs& want, DType dt) {
  ASSERT_EQ(out.size(), want.size());
  for (size_t k = 0; k < out.size(); ++k) {
    SCOPED_TRACE("output " + std::to_string(k));
    ASSERT_TRUE(out[k].defined());
    ASSERT_EQ(out[k].shape(), want[k].shape);
    const DType expect = want[k].dtype.value_or(dt);
    ASSERT_EQ(dtype_name(out[k].dtype()), std::string(dtype_name(expect)));
    std::vector<double> got = out[k].to_double_vector();
    if (!is_floating(expect)) {
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_EQ(got[i], want[k].v[i]) << "at flat index " << i;
      continue;
    }
    for (size_t i = 0; i < got.size(); ++i) {
      const double w = want[k].v[i];
      const bool same = std::isnan(w)      ? std::isnan(got[i])
                        : std::isfinite(w) ? std::isfinite(got[i])
                                           : got[i] == w;
      ASSERT_TRUE(same) << "at flat index " << i << ": got " << got[i] << ", want " << w;
    }
    EXPECT_LE(nmse(got, want[k].v), c.tol(coarser(dt, expect)));
  }
}

// Runs `check` for every row of the family (of the rows `pick` accepts); an exception fails
// that row, by name, and the next row still runs.
template <class Pick, class Check>
void for_each_row(const Family& f, Pick pick, Check check) {
  for (size_t r : f.rows) {
    const OpCase& c = table()[r];
    if (!pick(c)) continue;
    SCOPED_TRACE(c.name);
    try {
      check(c);
    } catch (const std::exception& e) {
      ADD_FAILURE() << c.name << " threw: " << e.what();
    }
  }
}
bool any_row(const OpCase&) { return true; }
bool differentiable_row(const OpCase& c) { return c.differentiable; }

// ---------------------------------------------------------------------------------------------
using OpForward = OpTest;

void check_forward(const OpCase& c, Device dev) {
  std::vector<DType> dtypes{DType::f64, DType::f32};
  if (c.with_bf16) dtypes.push_back(DType::bf16);
  for (DType dt : dtypes) {
    SCOPED_TRACE(dtype_name(dt));
    BuiltInputs b = build_inputs(c, all_leaf_values(c, dt), dt, dev, false);
    Refs want = c.ref(b.logical);
    Tensors out = c.run(b.args);
    expect_matches(c, out, want, dt);
    for (const Tensor& o : out) EXPECT_EQ(o.device(), dev);
  }
}

TEST_P(OpForward, MatchesDoubleReference) {
  for_each_row(family(), any_row, [&](const OpCase& c) { check_forward(c, device()); });
}

// ---------------------------------------------------------------------------------------------
using OpGradcheck = OpTest;

// sum_k <out_k, w_k> over the floating outputs.
double weighted_loss(const Tensors& out, const std::vector<std::vector<double>>& w) {
  double loss = 0;
  size_t wi = 0;
  for (const Tensor& o : out) {
    if (!is_floating(o.dtype())) continue;
    std::vector<double> v = o.to_double_vector();
    for (size_t i = 0; i < v.size(); ++i) loss += v[i] * w[wi][i];
    ++wi;
  }
  return loss;
}

void check_gradient(const OpCase& c, Device dev) {
  std::vector<std::vector<double>> values = all_leaf_values(c, DType::f64);
  BuiltInputs b = build_inputs(c, values, DType::f64, dev, true);
  ASSERT_FALSE(b.grad_leaves.empty());
  Tensors out = c.run(b.args);

  Tensors outs, seeds, leaves;
  std::vector<std::vector<double>> w;
  uint64_t st = seed_of(c.name, 977);
  for (const Tensor& o : out) {
    if (!is_floating(o.dtype())) continue;
    ASSERT_TRUE(o.requires_grad()) << "a floating output of " << c.name << " does not require grad";
    std::vector<double> wv(size_t(o.numel()));
    for (double& x : wv) x = 2 * uniform01(st) - 1;
    seeds.push_back(ops::from_vector(wv, o.shape(), TensorOptions(o.dtype()).device(dev)));
    outs.push_back(o);
    w.push_back(std::move(wv));
  }
  for (size_t j : b.grad_leaves) leaves.push_back(b.leaves[j]);
  Tensors grads = autograd::grad(outs, leaves, seeds, false, /*allow_unused=*/true);

  for (size_t li = 0; li < leaves.size(); ++li) {
    const size_t j = b.grad_leaves[li];
    SCOPED_TRACE("input " + std::to_string(j));
    std::vector<double> analytic(values[j].size(), 0.0);
    if (grads[li].defined()) {
      ASSERT_EQ(grads[li].shape(), leaves[li].shape());
      ASSERT_EQ(grads[li].dtype(), DType::f64);
      analytic = grads[li].to_double_vector();
    }
    const std::vector<double> numeric =
        strata::testing::central_differences(values[j].size(), c.fd_eps, [&](size_t e, double d) {
          NoGradGuard no_grad;
          auto vals = values;
          vals[j][e] += d;
          return weighted_loss(c.run(build_inputs(c, vals, DType::f64, dev, false).args), w);
        });
    double worst = 0;
    size_t worst_at = 0;
    double worst_num = 0;
    for (size_t e = 0; e < values[j].size(); ++e) {
      const double num = numeric[e];
      double err = std::fabs(num - analytic[e]) / (1 + std::fabs(num));
      if (err > worst) worst = err, worst_at = e, worst_num = num;
    }
    EXPECT_LE(worst, c.fd_tol) << "element " << worst_at << ": analytic " << analytic[worst_at] << ", numeric "
                               << worst_num;
  }
}

TEST_P(OpGradcheck, MatchesFiniteDifferences) {
  for_each_row(family(), differentiable_row, [&](const OpCase& c) { check_gradient(c, device()); });
}

// ---------------------------------------------------------------------------------------------
using OpMeta = OpTest;

void check_meta(const OpCase& c) {
  auto values = all_leaf_values(c, DType::f32);
  Tensors want = c.run(build_inputs(c, values, DType::f32, kCPU, false).args);
  BuiltInputs b = build_inputs(c, values, DType::f32, kMeta, c.differentiable);
  CostCounter counter;
  Tensors got;
  {
    OpObserverGuard guard(&counter);
    got = c.run(b.args);
  }
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    EXPECT_TRUE(got[k].device().is_meta());
    EXPECT_EQ(got[k].shape(), want[k].shape());
    EXPECT_EQ(got[k].dtype(), want[k].dtype());
  }
  const double cost = counter.total.flops + counter.total.bytes_read + counter.total.bytes_written;
  if (c.view_only) {
    EXPECT_EQ(cost, 0.0) << "a view moves no data";
  } else {
    EXPECT_GT(cost, 0.0);
    EXPECT_GT(counter.num_ops, 0);
  }
  if (!c.differentiable) return;
  Tensors outs, seeds, leaves;
  for (const Tensor& o : got)
    if (is_floating(o.dtype())) {
      outs.push_back(o);
      seeds.push_back(ops::empty(o.shape(), TensorOptions(o.dtype()).device(kMeta)));
    }
  for (size_t j : b.grad_leaves) leaves.push_back(b.leaves[j]);
  Tensors grads = autograd::grad(outs, leaves, seeds, false, /*allow_unused=*/true);
  for (size_t li = 0; li < leaves.size(); ++li) {
    if (!grads[li].defined()) continue;
    EXPECT_TRUE(grads[li].device().is_meta());
    EXPECT_EQ(grads[li].shape(), leaves[li].shape());
  }
}

TEST_P(OpMeta, ShapesDtypesAndCostWithoutData) {
  for_each_row(family(), any_row, check_meta);
}

// ---------------------------------------------------------------------------------------------
using OpSim = OpTest;

// The values of `t` as bits (NaNs compare equal to the same NaN).
std::vector<uint64_t> bits_of(const Tensor& t) {
  std::vector<double> v = t.to_double_vector();
  std::vector<uint64_t> b(v.size());
  std::memcpy(b.data(), v.data(), v.size() * sizeof(double));
  return b;
}

// The sim device runs the CPU's kernels on memory of its own: every output and every gradient
// equals the CPU's bit for bit, and lands on the sim device.
void check_sim_equals_cpu(const OpCase& c) {
  std::vector<DType> dtypes{DType::f32};
  if (c.with_bf16) dtypes.push_back(DType::bf16);
  for (DType dt : dtypes) {
    SCOPED_TRACE(dtype_name(dt));
    auto values = all_leaf_values(c, dt);
    BuiltInputs on_cpu = build_inputs(c, values, dt, kCPU, c.differentiable);
    BuiltInputs on_sim = build_inputs(c, values, dt, sim(0), c.differentiable);
    Tensors want = c.run(on_cpu.args), got = c.run(on_sim.args);
    ASSERT_EQ(got.size(), want.size());
    Tensors outs[2], seeds[2], leaves[2];
    for (size_t k = 0; k < got.size(); ++k) {
      SCOPED_TRACE("output " + std::to_string(k));
      EXPECT_EQ(got[k].device(), sim(0));
      ASSERT_EQ(got[k].shape(), want[k].shape());
      ASSERT_EQ(got[k].dtype(), want[k].dtype());
      EXPECT_EQ(bits_of(got[k]), bits_of(want[k]));
      if (!c.differentiable || !is_floating(got[k].dtype())) continue;
      outs[0].push_back(want[k]);
      outs[1].push_back(got[k]);
      Tensor seed = ops::full(want[k].shape(), 0.75, TensorOptions(want[k].dtype()));
      seeds[0].push_back(seed);
      seeds[1].push_back(seed.to(sim(0)));
    }
    if (!c.differentiable) continue;
    for (size_t j : on_cpu.grad_leaves) leaves[0].push_back(on_cpu.leaves[j]);
    for (size_t j : on_sim.grad_leaves) leaves[1].push_back(on_sim.leaves[j]);
    Tensors gw = autograd::grad(outs[0], leaves[0], seeds[0], false, true);
    Tensors gg = autograd::grad(outs[1], leaves[1], seeds[1], false, true);
    for (size_t li = 0; li < gw.size(); ++li) {
      SCOPED_TRACE("gradient of input " + std::to_string(on_cpu.grad_leaves[li]));
      ASSERT_EQ(gg[li].defined(), gw[li].defined());
      if (!gw[li].defined()) continue;
      EXPECT_EQ(gg[li].device(), sim(0));
      EXPECT_EQ(bits_of(gg[li]), bits_of(gw[li]));
    }
  }
}

TEST_P(OpSim, EqualsTheCpuBitForBit) { for_each_row(family(), any_row, check_sim_equals_cpu); }

INSTANTIATE_TEST_SUITE_P(Conformance, OpForward, ::testing::ValuesIn(params(false, false)), param_name);
INSTANTIATE_TEST_SUITE_P(Gradcheck, OpGradcheck, ::testing::ValuesIn(params(true, false)), param_name);
INSTANTIATE_TEST_SUITE_P(Conformance, OpMeta, ::testing::ValuesIn(params(false, true)), param_name);
INSTANTIATE_TEST_SUITE_P(Sim, OpSim, ::testing::ValuesIn(params(false, true)), param_name);

// The table itself: unique names, and every differentiable family has a gradient check.
TEST(ConformanceTable, RowNamesAreUniqueAndCoverEveryFamily) {
  std::map<std::string, int> seen;
  for (const OpCase& c : table()) EXPECT_EQ(seen[c.name]++, 0) << "duplicate row " << c.name;
  EXPECT_GE(families().size(), 60u);
}

// A row that feeds NaN checks propagation only if its expected output holds both NaN (a NaN met
// the op) and finite values (the NaN did not spread past where it belongs).
TEST(ConformanceTable, NanRowsExpectBothNanAndFiniteOutputs) {
  size_t nan_rows = 0;
  for (const OpCase& c : table()) {
    bool feeds_nan = false;
    for (const InputSpec& s : c.inputs) feeds_nan = feeds_nan || s.nan_share > 0;
    if (!feeds_nan) continue;
    ++nan_rows;
    SCOPED_TRACE(c.name);
    EXPECT_FALSE(c.differentiable) << "finite differences through NaN mean nothing";
    BuiltInputs b = build_inputs(c, all_leaf_values(c, DType::f64), DType::f64, kCPU, false);
    const std::vector<double> want = c.ref(b.logical).at(0).v;
    const auto nans = std::count_if(want.begin(), want.end(), [](double v) { return std::isnan(v); });
    EXPECT_GT(nans, 0);
    EXPECT_LT(size_t(nans), want.size());
  }
  EXPECT_GE(nan_rows, 9u);
}

}  // namespace
}  // namespace strata::testing
