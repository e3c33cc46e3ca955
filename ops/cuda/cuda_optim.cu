// The optimizers' fused CUDA updates: AdamW in one pass over param, grad, exp_avg and exp_avg_sq,
// SGD in one pass over param, grad and momentum buffer, each in the order of its host loop
// (core/optim/adamw.cpp, core/optim/sgd.cpp) with every operation rounded as written (no FMA
// contraction). The host loops are compiled with contraction where GCC chooses it, so a device step
// agrees with the CPU's within a few ulps, not bit for bit. The gradient norm uses the Backend's
// composed default.
#include <cmath>

#include "ops/cuda/cuda_backend.h"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_device_utils.cuh"

namespace strata::gpu {

namespace {

template <class T>
struct AdamWScalars {
  T decay, b1, one_minus_b1, b2, one_minus_b2, neg_step_size, bias_correction2_sqrt, eps;
};

__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float div_rn(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ double div_rn(double a, double b) { return __ddiv_rn(a, b); }
__device__ __forceinline__ float sqrt_rn(float a) { return __fsqrt_rn(a); }
__device__ __forceinline__ double sqrt_rn(double a) { return __dsqrt_rn(a); }

template <class T>
__global__ void adamw_kernel(T* p, const T* g, T* m, T* v, int64_t n, AdamWScalars<T> s) {
  STRATA_GRID_STRIDE(i, n) {
    const T gi = g[i];
    const T pd = mul_rn(p[i], s.decay);
    const T mi = add_rn(mul_rn(m[i], s.b1), mul_rn(s.one_minus_b1, gi));
    const T vi = add_rn(mul_rn(v[i], s.b2), mul_rn(s.one_minus_b2, mul_rn(gi, gi)));
    const T denom = add_rn(div_rn(sqrt_rn(vi), s.bias_correction2_sqrt), s.eps);
    m[i] = mi;
    v[i] = vi;
    p[i] = add_rn(pd, mul_rn(s.neg_step_size, div_rn(mi, denom)));
  }
}

template <class T>
void launch_adamw(const Tensor& p, const Tensor& g, const Tensor& m, const Tensor& v, const AdamWUpdate& u) {
  const double bias_correction1 = 1.0 - std::pow(u.beta1, u.step);
  const double bias_correction2 = 1.0 - std::pow(u.beta2, u.step);
  AdamWScalars<T> s{T(1.0 - u.lr * u.weight_decay),
                    T(u.beta1),
                    T(1.0 - u.beta1),
                    T(u.beta2),
                    T(1.0 - u.beta2),
                    T(-(u.lr / bias_correction1)),
                    T(std::sqrt(bias_correction2)),
                    T(u.eps)};
  adamw_kernel<T><<<grid_for(p.numel()), kThreads, 0, compute_stream()>>>(
      static_cast<T*>(p.data_ptr()), static_cast<const T*>(g.data_ptr()), static_cast<T*>(m.data_ptr()),
      static_cast<T*>(v.data_ptr()), p.numel(), s);
}

template <class T>
struct SgdScalars {
  T weight_decay, momentum, one_minus_dampening, neg_lr;
  bool nesterov, first_step;
};

// `buf` is null without momentum.
template <class T>
__global__ void sgd_kernel(T* p, const T* g, T* buf, int64_t n, SgdScalars<T> s) {
  STRATA_GRID_STRIDE(i, n) {
    T d = g[i];
    if (s.weight_decay != T(0)) d = add_rn(d, mul_rn(s.weight_decay, p[i]));
    if (buf != nullptr) {
      const T b = s.first_step ? d : add_rn(mul_rn(buf[i], s.momentum), mul_rn(s.one_minus_dampening, d));
      buf[i] = b;
      d = s.nesterov ? add_rn(d, mul_rn(s.momentum, b)) : b;
    }
    p[i] = add_rn(p[i], mul_rn(s.neg_lr, d));
  }
}

template <class T>
void launch_sgd(const Tensor& p, const Tensor& g, const Tensor& buf, const SgdUpdate& u) {
  const SgdScalars<T> s{T(u.weight_decay), T(u.momentum), T(1.0 - u.dampening),
                        T(-u.lr),          u.nesterov,    u.first_step};
  sgd_kernel<T><<<grid_for(p.numel()), kThreads, 0, compute_stream()>>>(
      static_cast<T*>(p.data_ptr()), static_cast<const T*>(g.data_ptr()),
      buf.defined() ? static_cast<T*>(buf.data_ptr()) : nullptr, p.numel(), s);
}

// Each defined operand has its parameter's shape and dtype, and all are contiguous.
void check_operands(const char* op, const Tensor& p, std::initializer_list<const Tensor*> operands) {
  for (const Tensor* t : operands)
    STRATA_CHECK(!t->defined() || (t->shape() == p.shape() && t->dtype() == p.dtype() && t->is_contiguous() &&
                                   p.is_contiguous()),
                 ValueError, op, ": ", t->str(), " does not match its parameter ", p.str());
}

}  // namespace

void CudaBackend::sgd_update(const Tensor& p, const Tensor& g, const Tensor& buf, const SgdUpdate& u) {
  const int dev = check_on_device("sgd_update", {&p, &g, &buf});
  check_operands("sgd_update", p, {&g, &buf});
  if (p.numel() == 0) return;
  context(dev);
  DeviceGuard guard(dev);
  if (p.dtype() == DType::f64)
    launch_sgd<double>(p, g, buf, u);
  else if (p.dtype() == DType::f32)
    launch_sgd<float>(p, g, buf, u);
  else
    return Backend::sgd_update(p, g, buf, u);
  STRATA_CUDA_CHECK_LAUNCH("sgd_update ", p.str());
}

void CudaBackend::adamw_update(const Tensor& p, const Tensor& g, const Tensor& m, const Tensor& v,
                               const AdamWUpdate& u) {
  const int dev = check_on_device("adamw_update", {&p, &g, &m, &v});
  check_operands("adamw_update", p, {&g, &m, &v});
  if (p.numel() == 0) return;
  context(dev);
  DeviceGuard guard(dev);
  if (p.dtype() == DType::f64)
    launch_adamw<double>(p, g, m, v, u);
  else if (p.dtype() == DType::f32)
    launch_adamw<float>(p, g, m, v, u);
  else
    return Backend::adamw_update(p, g, m, v, u);
  STRATA_CUDA_CHECK_LAUNCH("adamw_update ", p.str());
}

}  // namespace strata::gpu
