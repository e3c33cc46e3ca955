// CUDA random fills from Philox (core/philox.h): element i (in logical order) takes the same
// words as on the CPU (ops/cpu/cpu_random.cpp) and the same double-precision transform,
// written with explicitly rounded operations so nvcc cannot fuse them into FMAs the CPU does
// not use. As on the CPU, f64 outputs (contiguous or strided) keep the double result; every
// other output gets it rounded to f32 first, then converted.
#include "ops/cuda/cuda_backend.h"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_device_utils.cuh"
#include "strata/core/philox.h"

namespace strata::gpu {

namespace {

// low + (high - low) * u
__device__ __forceinline__ double uniform_at(uint64_t seed, uint64_t offset, int64_t i, double low, double high) {
  const double u = double(philox::to_uniform(philox::word(seed, offset, uint64_t(i))));
  return __dadd_rn(low, __dmul_rn(high - low, u));
}

// Box-Muller on words 2i and 2i+1: mean + std * sqrt(-2 log(1 - u1)) * cos(2 pi u2)
__device__ __forceinline__ double normal_at(uint64_t seed, uint64_t offset, int64_t i, double mean, double stdev) {
  const float u1 = philox::to_uniform(philox::word(seed, offset, 2 * uint64_t(i)));
  const float u2 = philox::to_uniform(philox::word(seed, offset, 2 * uint64_t(i) + 1));
  const double r = ::sqrt(__dmul_rn(-2.0, ::log(1.0 - double(u1))));
  const double c = ::cos(__dmul_rn(6.283185307179586, double(u2)));
  return __dadd_rn(mean, __dmul_rn(__dmul_rn(stdev, r), c));
}

template <bool Normal>
__global__ void random_kernel(StridedArgs<1> a, uint64_t seed, uint64_t offset, double p0, double p1,
                              bool keep_double) {
  STRATA_GRID_STRIDE(i, a.numel) {
    int64_t off[1];
    strided_offsets(a, i, off);
    const double v = Normal ? normal_at(seed, offset, i, p0, p1) : uniform_at(seed, offset, i, p0, p1);
    if (keep_double)
      *reinterpret_cast<double*>(a.ptr[0] + off[0]) = v;
    else
      store_as<float>(a.ptr[0] + off[0], a.dtype[0], float(v));
  }
}

template <bool Normal>
void random_fill(CudaBackend& be, const Tensor& out, RngState s, double p0, double p1) {
  STRATA_CHECK(is_floating(out.dtype()), TypeError, "random: needs a floating tensor, got ", out.str());
  const int dev = check_on_device(Normal ? "normal_" : "uniform_", {&out});
  if (out.numel() == 0) return;
  be.context(dev);
  DeviceGuard guard(dev);
  StridedArgs<1> a = make_strided_args<1>({&out});
  const bool keep_double = out.dtype() == DType::f64;
  random_kernel<Normal><<<grid_for(a.numel), kThreads, 0, compute_stream()>>>(a, s.seed, s.offset, p0, p1,
                                                                              keep_double);
  STRATA_CUDA_CHECK_LAUNCH(Normal ? "normal_ " : "uniform_ ", out.str());
}

}  // namespace

void CudaBackend::random_uniform(const Tensor& out, RngState s, double low, double high) {
  random_fill<false>(*this, out, s, low, high);
}

void CudaBackend::random_normal(const Tensor& out, RngState s, double mean, double std) {
  random_fill<true>(*this, out, s, mean, std);
}

}  // namespace strata::gpu
