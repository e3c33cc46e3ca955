// The Backend's default optimizer updates: the optimizers' per-element expressions composed from
// elementwise kernels, for devices whose backend fuses none (and as the fused kernels' reference).
#include <cmath>
#include <limits>

#include "strata/core/backend.h"
#include "strata/core/error.h"
#include "strata/core/norm_power_sum.h"

namespace strata {

namespace {

Tensor like(const Tensor& t) { return Tensor::empty(t.shape(), t.dtype(), t.device()); }

void check_update(const char* op, const Tensor& param, std::initializer_list<const Tensor*> others) {
  STRATA_CHECK(is_floating(param.dtype()) && param.is_contiguous(), TypeError, op, ": parameter ",
               param.str(), " must be a contiguous floating tensor");
  for (const Tensor* t : others) {
    if (!t->defined()) continue;
    STRATA_CHECK(t->shape() == param.shape() && t->dtype() == param.dtype() &&
                     t->device() == param.device() && t->is_contiguous(),
                 ValueError, op, ": ", t->str(), " does not match its parameter ", param.str(),
                 " (same shape, dtype and device, contiguous)");
  }
}

}  // namespace

void Backend::adamw_update(const Tensor& p, const Tensor& g, const Tensor& m, const Tensor& v,
                           const AdamWUpdate& u) {
  check_update("adamw_update", p, {&g, &m, &v});
  const double bias_correction1 = 1.0 - std::pow(u.beta1, u.step);
  const double bias_correction2 = 1.0 - std::pow(u.beta2, u.step);
  const Tensor t1 = like(p), t2 = like(p);
  const auto ew1 = [&](EwOp op, const Tensor& out, const Tensor& a, double s) {
    const Tensor in[] = {a};
    elementwise(op, out, in, EwParams{s, 0});
  };
  const auto ew2 = [&](EwOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
    const Tensor in[] = {a, b};
    elementwise(op, out, in);
  };
  ew1(EwOp::MulScalar, p, p, 1.0 - u.lr * u.weight_decay);  // p *= 1 - lr wd
  ew1(EwOp::MulScalar, t1, m, u.beta1);                     // m = b1 m + (1 - b1) g
  ew1(EwOp::MulScalar, t2, g, 1.0 - u.beta1);
  ew2(EwOp::Add, m, t1, t2);
  ew2(EwOp::Mul, t2, g, g);  // v = b2 v + (1 - b2) g^2
  ew1(EwOp::MulScalar, t2, t2, 1.0 - u.beta2);
  ew1(EwOp::MulScalar, t1, v, u.beta2);
  ew2(EwOp::Add, v, t1, t2);
  ew1(EwOp::Sqrt, t1, v, 0);  // denom = sqrt(v) / sqrt(bc2) + eps
  ew1(EwOp::MulScalar, t1, t1, 1.0 / std::sqrt(bias_correction2));
  ew1(EwOp::AddScalar, t1, t1, u.eps);
  ew2(EwOp::Div, t2, m, t1);  // p += -(lr / bc1) m / denom
  ew1(EwOp::MulScalar, t2, t2, -(u.lr / bias_correction1));
  ew2(EwOp::Add, p, p, t2);
}

void Backend::sgd_update(const Tensor& p, const Tensor& g, const Tensor& buf, const SgdUpdate& u) {
  check_update("sgd_update", p, {&g, &buf});
  Tensor d = like(p);
  const Tensor copy_in[] = {g};
  elementwise(EwOp::Copy, d, copy_in);
  const auto axpy = [&](const Tensor& out, const Tensor& x, double a, const Tensor& y) {  // out = x + a y
    Tensor t = like(p);
    const Tensor in1[] = {y};
    elementwise(EwOp::MulScalar, t, in1, EwParams{a, 0});
    const Tensor in2[] = {x, t};
    elementwise(EwOp::Add, out, in2);
  };
  if (u.weight_decay != 0) axpy(d, d, u.weight_decay, p);
  if (buf.defined()) {
    if (u.first_step) {
      const Tensor in[] = {d};
      elementwise(EwOp::Copy, buf, in);
    } else {  // buf = momentum buf + (1 - dampening) d
      Tensor t = like(p);
      const Tensor in[] = {buf};
      elementwise(EwOp::MulScalar, t, in, EwParams{u.momentum, 0});
      axpy(buf, t, 1.0 - u.dampening, d);
    }
    if (u.nesterov) {
      axpy(d, d, u.momentum, buf);
    } else {
      const Tensor in[] = {buf};
      elementwise(EwOp::Copy, d, in);
    }
  }
  axpy(p, p, -u.lr, d);
}

double Backend::norm_power_sum(const Tensor& t, double norm_type) {
  return detail::norm_power_sum_on(*this, t, norm_type).item();
}

Tensor detail::norm_power_sum_on(Backend& be, const Tensor& t, double norm_type) {
  STRATA_CHECK(is_floating(t.dtype()) && t.is_contiguous(), TypeError, "norm_power_sum: ", t.str(),
               " must be a contiguous floating tensor");
  Tensor out = Tensor::empty({1}, DType::f64, t.device());
  if (t.numel() == 0) {
    be.fill(out, 0.0);
    return out;
  }
  Tensor abs = like(t), a = Tensor::empty(t.shape(), DType::f64, t.device());
  const Tensor in[] = {t};
  be.elementwise(EwOp::Abs, abs, in);
  be.copy(a, abs);
  const Tensor flat = Tensor::from_storage(a.storage(), {a.numel()}, {1}, 0, DType::f64);
  if (std::isinf(norm_type)) {
    be.reduce_rows(ReduceOp::Max, out, flat, a.numel());
  } else {
    if (norm_type != 1.0) {
      const Tensor pin[] = {flat};
      be.elementwise(EwOp::PowScalar, flat, pin, EwParams{norm_type, 0});
    }
    be.reduce_rows(ReduceOp::Sum, out, flat, a.numel());
  }
  return out;
}

}  // namespace strata
