// CPU batch norm over contiguous NCHW tensors: per-channel statistics summed in double in a
// fixed order (deterministic whatever the thread count), OpenMP over channels for the
// reductions and over N x C planes for the elementwise passes.
#include <cmath>
#include <vector>

#include "ops/cpu/cpu_backend.h"

namespace strata::cpu {

namespace {

template <class T>
void bn_forward(const Tensor& out, const Tensor& mean, const Tensor& invstd, const Tensor& x, const Tensor& weight,
                const Tensor& bias, const Tensor& running_mean, const Tensor& running_var, bool training,
                double momentum, double eps) {
  const int64_t N = x.size(0), C = x.size(1), HW = x.numel() / std::max<int64_t>(N * C, 1);
  const int64_t M = N * HW;
  const T* xp = x.data<T>();
  T* yp = out.data<T>();
  T* mp = mean.data<T>();
  T* ip = invstd.data<T>();
  const T* wp = weight.defined() ? weight.data<T>() : nullptr;
  const T* bp = bias.defined() ? bias.data<T>() : nullptr;
  T* rm = running_mean.defined() ? running_mean.data<T>() : nullptr;
  T* rv = running_var.defined() ? running_var.data<T>() : nullptr;
  if (training) {
#pragma omp parallel for schedule(static) if (x.numel() > 32768)
    for (int64_t c = 0; c < C; ++c) {
      double s = 0;
      for (int64_t n = 0; n < N; ++n) {
        const T* xc = xp + (n * C + c) * HW;
#pragma omp simd reduction(+ : s)
        for (int64_t i = 0; i < HW; ++i) s += double(xc[i]);
      }
      const double mu = M > 0 ? s / double(M) : 0.0;
      double v = 0;
      for (int64_t n = 0; n < N; ++n) {
        const T* xc = xp + (n * C + c) * HW;
#pragma omp simd reduction(+ : v)
        for (int64_t i = 0; i < HW; ++i) v += (double(xc[i]) - mu) * (double(xc[i]) - mu);
      }
      const double var = M > 0 ? v / double(M) : 0.0;
      mp[c] = T(mu);
      ip[c] = T(1.0 / std::sqrt(var + eps));
      if (rm) rm[c] = T((1.0 - momentum) * double(rm[c]) + momentum * mu);
      if (rv) rv[c] = T((1.0 - momentum) * double(rv[c]) + momentum * (M > 1 ? v / double(M - 1) : var));
    }
  } else {
    for (int64_t c = 0; c < C; ++c) {
      mp[c] = rm[c];
      ip[c] = T(1.0 / std::sqrt(double(rv[c]) + eps));
    }
  }
#pragma omp parallel for schedule(static) if (x.numel() > 32768)
  for (int64_t nc = 0; nc < N * C; ++nc) {
    const int64_t c = nc % C;
    const T scale = (wp ? wp[c] : T(1)) * ip[c];
    const T shift = (bp ? bp[c] : T(0)) - mp[c] * scale;
    const T* xc = xp + nc * HW;
    T* yc = yp + nc * HW;
#pragma omp simd
    for (int64_t i = 0; i < HW; ++i) yc[i] = xc[i] * scale + shift;
  }
}

template <class T>
void bn_backward(const Tensor& gx, const Tensor& gw, const Tensor& gb, const Tensor& gy, const Tensor& x,
                 const Tensor& weight, const Tensor& mean, const Tensor& invstd, bool training) {
  const int64_t N = x.size(0), C = x.size(1), HW = x.numel() / std::max<int64_t>(N * C, 1);
  const int64_t M = N * HW;
  const T* xp = x.data<T>();
  const T* gp = gy.data<T>();
  const T* mp = mean.data<T>();
  const T* ip = invstd.data<T>();
  const T* wp = weight.defined() ? weight.data<T>() : nullptr;
  // Per channel: sum(gy) and sum(gy * xhat).
  std::vector<double> sum_g(static_cast<size_t>(C)), sum_gx(static_cast<size_t>(C));
#pragma omp parallel for schedule(static) if (x.numel() > 32768)
  for (int64_t c = 0; c < C; ++c) {
    double sg = 0, sgx = 0;
    const double mu = double(mp[c]);
    for (int64_t n = 0; n < N; ++n) {
      const T* xc = xp + (n * C + c) * HW;
      const T* gc = gp + (n * C + c) * HW;
#pragma omp simd reduction(+ : sg, sgx)
      for (int64_t i = 0; i < HW; ++i) {
        sg += double(gc[i]);
        sgx += double(gc[i]) * (double(xc[i]) - mu);
      }
    }
    sum_g[size_t(c)] = sg;
    sum_gx[size_t(c)] = sgx * double(ip[c]);
  }
  if (gw.defined())
    for (int64_t c = 0; c < C; ++c) gw.data<T>()[c] = T(sum_gx[size_t(c)]);
  if (gb.defined())
    for (int64_t c = 0; c < C; ++c) gb.data<T>()[c] = T(sum_g[size_t(c)]);
  if (!gx.defined()) return;
  T* dx = gx.data<T>();
#pragma omp parallel for schedule(static) if (x.numel() > 32768)
  for (int64_t nc = 0; nc < N * C; ++nc) {
    const int64_t c = nc % C;
    const T* xc = xp + nc * HW;
    const T* gc = gp + nc * HW;
    T* dc = dx + nc * HW;
    const T is = ip[c], ws = (wp ? wp[c] : T(1)) * is;
    if (!training) {
#pragma omp simd
      for (int64_t i = 0; i < HW; ++i) dc[i] = gc[i] * ws;
      continue;
    }
    // dx = w invstd (gy - mean(gy) - xhat mean(gy xhat))
    const T mg = T(sum_g[size_t(c)] / double(M)), mgx = T(sum_gx[size_t(c)] / double(M)), mu = mp[c];
#pragma omp simd
    for (int64_t i = 0; i < HW; ++i) dc[i] = ws * (gc[i] - mg - (xc[i] - mu) * is * mgx);
  }
}

}  // namespace

void CpuBackend::batch_norm(const Tensor& out, const Tensor& mean, const Tensor& invstd, const Tensor& x,
                            const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                            const Tensor& running_var, bool training, double momentum, double eps) {
  check_nchw_kernel_inputs("batch_norm", {&out, &mean, &invstd, &x, &weight, &bias, &running_mean, &running_var}, x.dtype());
  if (x.dtype() == DType::f32)
    bn_forward<float>(out, mean, invstd, x, weight, bias, running_mean, running_var, training, momentum, eps);
  else
    bn_forward<double>(out, mean, invstd, x, weight, bias, running_mean, running_var, training, momentum, eps);
}

void CpuBackend::batch_norm_backward(const Tensor& grad_x, const Tensor& grad_weight, const Tensor& grad_bias,
                                     const Tensor& grad_out, const Tensor& x, const Tensor& weight,
                                     const Tensor& mean, const Tensor& invstd, bool training) {
  check_nchw_kernel_inputs("batch_norm_backward", {&grad_x, &grad_weight, &grad_bias, &grad_out, &x, &weight, &mean, &invstd},
           x.dtype());
  if (x.dtype() == DType::f32)
    bn_backward<float>(grad_x, grad_weight, grad_bias, grad_out, x, weight, mean, invstd, training);
  else
    bn_backward<double>(grad_x, grad_weight, grad_bias, grad_out, x, weight, mean, invstd, training);
}

}  // namespace strata::cpu
