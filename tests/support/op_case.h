// OpCase and InputSpec: one row of the conformance table (tests/ops/conformance_test.cpp), and
// the machinery that turns a row's input specs into tensors of a given dtype, device and layout
// plus the double values the reference sees.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "strata/core/backend.h"
#include "strata/ops.h"
#include "support/device_present.h"
#include "support/op_reference.h"

namespace strata::testing {

// How an input tensor is laid out in memory. Every layout except Contig is a differentiable
// view of a contiguous leaf, so the gradient check also runs the view's backward.
enum class Layout {
  Contig,      // the leaf itself
  Transposed,  // transpose(-1, -2) of a leaf with the last two dims swapped
  Strided,     // slice(dim, 1, 2n+1, step 2) of a leaf twice as long in `dim`: odd offset, stride 2
  Broadcast,   // expand() of a smaller leaf (stride-0 dims)
  Offset,      // a narrow(3, numel) of a 1-D leaf, reshaped: a storage offset of 3 elements
};

// What values an input holds. Floating kinds take the tested dtype; Index is i64, Mask is bool.
enum class Values {
  Normal,    // uniform in [-2, 2]
  Positive,  // uniform in [0.5, 2]: log, sqrt, pow bases, divisors
  Away,      // |x| in [0.2, 2]: keeps finite differences off the kinks of relu/abs/sign
  SmallInt,  // integers in [-2, 2]: ties for the comparisons
  Index,     // integers in [0, hi)
  Mask,      // 0 or 1
};

struct InputSpec {
  Shape shape;  // what the op sees
  Layout layout = Layout::Contig;
  Values values = Values::Normal;
  int64_t step_dim = -1;  // Strided: the sliced dim
  Shape base;             // Broadcast: the leaf's shape
  int64_t hi = 0;         // Index: exclusive bound
  std::vector<double> fixed;  // explicit leaf values (targets with ignore_index, repeated indices)
  bool grad = true;           // floating inputs: check this input's gradient
  double nan_share = 0;       // floating inputs: about this share of the leaf's entries are NaN

  InputSpec T() const { return with([](InputSpec& s) { s.layout = Layout::Transposed; }); }
  InputSpec step(int64_t dim = -1) const {
    return with([dim](InputSpec& s) { s.layout = Layout::Strided, s.step_dim = dim; });
  }
  InputSpec bcast(Shape from) const {
    return with([&from](InputSpec& s) { s.layout = Layout::Broadcast, s.base = from; });
  }
  InputSpec offset() const { return with([](InputSpec& s) { s.layout = Layout::Offset; }); }
  InputSpec pos() const { return with([](InputSpec& s) { s.values = Values::Positive; }); }
  InputSpec away() const { return with([](InputSpec& s) { s.values = Values::Away; }); }
  InputSpec ints() const { return with([](InputSpec& s) { s.values = Values::SmallInt; }); }
  InputSpec no_grad() const { return with([](InputSpec& s) { s.grad = false; }); }
  InputSpec nan(double share = 0.2) const {
    return with([share](InputSpec& s) { s.nan_share = share; });
  }

 private:
  template <class F>
  InputSpec with(F f) const {
    InputSpec s = *this;
    f(s);
    return s;
  }
};

inline InputSpec in(Shape shape) {
  InputSpec s;
  s.shape = std::move(shape);
  return s;
}
// i64 indices in [0, hi), or the given values.
inline InputSpec idx(Shape shape, int64_t hi, std::vector<double> fixed = {}) {
  InputSpec s = in(std::move(shape));
  s.values = Values::Index;
  s.hi = hi;
  s.fixed = std::move(fixed);
  return s;
}
// bool, random or the given 0/1 values.
inline InputSpec mask(Shape shape, std::vector<double> fixed = {}) {
  InputSpec s = in(std::move(shape));
  s.values = Values::Mask;
  s.fixed = std::move(fixed);
  return s;
}

using Tensors = std::vector<Tensor>;
using Refs = std::vector<Ref>;

struct OpCase {
  std::string name;
  std::vector<InputSpec> inputs;
  std::function<Tensors(const Tensors&)> run;  // the Strata op
  std::function<Refs(const Refs&)> ref;        // its double reference
  // Normalized-MSE bounds per output dtype.
  double tol_f64 = 1e-24, tol_f32 = 1e-11, tol_bf16 = 3e-5;
  bool with_bf16 = false;      // also run in bf16
  bool differentiable = true;  // run the finite-difference gradient check
  bool view_only = false;      // a pure view: moves no data, so its Meta cost is zero
  double fd_eps = 1e-6, fd_tol = 1e-6;

  OpCase(std::string n, std::vector<InputSpec> i, std::function<Tensors(const Tensors&)> r,
         std::function<Refs(const Refs&)> f)
      : name(std::move(n)), inputs(std::move(i)), run(std::move(r)), ref(std::move(f)) {}
  OpCase& bf16(double tol = 3e-5) { with_bf16 = true, tol_bf16 = tol; return *this; }
  OpCase& tol32(double tol) { tol_f32 = tol; return *this; }
  OpCase& no_grad() { differentiable = false; return *this; }
  OpCase& view() { view_only = true; return *this; }
  OpCase& fd(double eps, double tol) { fd_eps = eps, fd_tol = tol; return *this; }
  double tol(DType t) const { return t == DType::f64 ? tol_f64 : t == DType::f32 ? tol_f32 : tol_bf16; }
};

// ---- building inputs ----

inline uint64_t splitmix64(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
inline uint64_t seed_of(const std::string& s, uint64_t salt) {
  uint64_t h = 1469598103934665603ull ^ salt;
  for (char c : s) h = (h ^ uint64_t(uint8_t(c))) * 1099511628211ull;
  return h;
}
inline double uniform01(uint64_t& s) { return double(splitmix64(s) >> 11) * 0x1.0p-53; }

// The value `x` takes once stored as `t` (inputs are rounded first, so the reference sees
// exactly what the op sees).
inline double quantize(double x, DType t) {
  switch (t) {
    case DType::f32: return double(float(x));
    case DType::bf16: return double(float(bf16(float(x))));
    case DType::f16: return double(float(f16(float(x))));
    default: return x;
  }
}

inline DType input_dtype(const InputSpec& s, DType dt) {
  return s.values == Values::Index ? DType::i64 : s.values == Values::Mask ? DType::boolean : dt;
}
inline bool is_grad_input(const InputSpec& s) {
  return s.grad && s.values != Values::Index && s.values != Values::Mask;
}

inline Shape leaf_shape(const InputSpec& s) {
  Shape l = s.shape;
  switch (s.layout) {
    case Layout::Contig: break;
    case Layout::Transposed: std::swap(l[l.size() - 1], l[l.size() - 2]); break;
    case Layout::Strided: {
      int64_t d = ref::wrap(s.step_dim, int64_t(l.size()));
      l[size_t(d)] = 2 * l[size_t(d)] + 1;
      break;
    }
    case Layout::Broadcast: l = s.base; break;
    case Layout::Offset: l = {shape_numel(s.shape) + 3}; break;
  }
  return l;
}

// Leaf values for input `i` of case `c`, rounded to the tested dtype.
inline std::vector<double> leaf_values(const OpCase& c, size_t i, DType dt) {
  const InputSpec& s = c.inputs[i];
  if (!s.fixed.empty()) {
    std::vector<double> v = s.fixed;
    for (double& x : v) x = quantize(x, input_dtype(s, dt));
    return v;
  }
  uint64_t st = seed_of(c.name, i), nan_st = seed_of(c.name, i + 7919);
  std::vector<double> v(size_t(shape_numel(leaf_shape(s))));
  for (double& x : v) {
    double u = uniform01(st);
    switch (s.values) {
      case Values::Normal: x = 4 * u - 2; break;
      case Values::Positive: x = 0.5 + 1.5 * u; break;
      case Values::Away: x = (u < 0.5 ? -1 : 1) * (0.2 + 1.8 * uniform01(st)); break;
      case Values::SmallInt: x = std::floor(5 * u) - 2; break;
      case Values::Index: x = std::floor(double(s.hi) * u); break;
      case Values::Mask: x = u < 0.5 ? 1 : 0; break;
    }
    if (s.nan_share > 0 && uniform01(nan_st) < s.nan_share) x = std::numeric_limits<double>::quiet_NaN();
    x = quantize(x, input_dtype(s, dt));
  }
  return v;
}

// The values the op sees through the layout, computed by index arithmetic on the leaf.
inline Ref logical_values(const InputSpec& s, const std::vector<double>& leaf) {
  const Shape l = leaf_shape(s);
  Ref out(s.shape);
  Ref lv(l, leaf);
  for (int64_t i = 0; i < out.numel(); ++i) {
    Index idx = ref::unravel(i, s.shape);
    switch (s.layout) {
      case Layout::Contig: out.v[size_t(i)] = lv.at(idx); break;
      case Layout::Transposed:
        std::swap(idx[idx.size() - 1], idx[idx.size() - 2]);
        out.v[size_t(i)] = lv.at(idx);
        break;
      case Layout::Strided: {
        size_t d = size_t(ref::wrap(s.step_dim, int64_t(idx.size())));
        idx[d] = 1 + 2 * idx[d];
        out.v[size_t(i)] = lv.at(idx);
        break;
      }
      case Layout::Broadcast: out.v[size_t(i)] = leaf[size_t(ref::broadcast_offset(l, idx))]; break;
      case Layout::Offset: out.v[size_t(i)] = leaf[size_t(3 + i)]; break;
    }
  }
  return out;
}

inline Tensor apply_layout(const Tensor& leaf, const InputSpec& s) {
  switch (s.layout) {
    case Layout::Contig: return leaf;
    case Layout::Transposed: return ops::transpose(leaf, -1, -2);
    case Layout::Strided: {
      int64_t d = ref::wrap(s.step_dim, leaf.dim());
      return ops::slice(leaf, d, 1, leaf.size(d), 2);
    }
    case Layout::Broadcast: return ops::expand(leaf, s.shape);
    case Layout::Offset: return ops::reshape(ops::narrow(leaf, 0, 3, leaf.size(0) - 3), s.shape);
  }
  return leaf;
}

struct BuiltInputs {
  Tensors leaves;     // contiguous leaves (requires_grad where checked)
  Tensors args;       // what the op gets: the leaves seen through their layouts
  Refs logical;       // what the reference gets
  std::vector<size_t> grad_leaves;  // which leaves require grad
};

inline std::vector<std::vector<double>> all_leaf_values(const OpCase& c, DType dt) {
  std::vector<std::vector<double>> v;
  for (size_t i = 0; i < c.inputs.size(); ++i) v.push_back(leaf_values(c, i, dt));
  return v;
}

inline BuiltInputs build_inputs(const OpCase& c, const std::vector<std::vector<double>>& values, DType dt,
                                Device dev, bool requires_grad) {
  BuiltInputs b;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const InputSpec& s = c.inputs[i];
    Tensor leaf = ops::from_vector(values[i], leaf_shape(s), TensorOptions(input_dtype(s, dt)).device(dev));
    if (requires_grad && is_grad_input(s)) {
      leaf.set_requires_grad(true);
      b.grad_leaves.push_back(i);
    }
    b.leaves.push_back(leaf);
    b.args.push_back(apply_layout(leaf, s));
    b.logical.push_back(logical_values(s, values[i]));
  }
  return b;
}

// ---- comparing ----

// ggml's metric: sum((got - want)^2) / sum(want^2); non-finite values must match exactly.
inline double nmse(const std::vector<double>& got, const std::vector<double>& want) {
  double err = 0, norm = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (!std::isfinite(want[i]) || !std::isfinite(got[i])) {
      bool same = (std::isnan(want[i]) && std::isnan(got[i])) || got[i] == want[i];
      if (!same) return INFINITY;
      continue;
    }
    err += (got[i] - want[i]) * (got[i] - want[i]);
    norm += want[i] * want[i];
  }
  return norm > 0 ? err / norm : err;
}

}  // namespace strata::testing
