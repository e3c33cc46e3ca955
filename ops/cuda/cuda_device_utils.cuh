// Device-side helpers for the CUDA kernels: dtype loads/stores that convert exactly like
// the CPU backend (core/tensor/dtype.cpp, ops/common/dtype_dispatch.h), strided offsets, and
// deterministic warp/block reductions (fixed shuffle trees, no atomics).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "ops/cuda/cuda_strided.h"
#include "strata/core/dtype.h"
#include "strata/core/error.h"

namespace strata::gpu {

// ---- 16-bit floats, bit for bit as strata::bf16 / strata::f16 on the host ----

// The 16-bit conversions are the host's own (strata/core/dtype.h, host + device), so both
// backends round identically.
__device__ __forceinline__ float bf16_to_float(uint16_t b) { return bf16_bits_to_float(b); }
__device__ __forceinline__ uint16_t float_to_bf16(float f) { return float_to_bf16_bits(f); }
__device__ __forceinline__ uint16_t float_to_f16(float f) { return float_to_f16_bits(f); }
__device__ __forceinline__ float f16_to_float(uint16_t h) { return f16_bits_to_float(h); }

// The bytes of one element, for kernels that move elements without looking at them.
template <int Bytes>
struct alignas(Bytes) RawElement {
  unsigned char b[Bytes];
};

// ---- loads and stores of one element of any dtype, converted from/to the compute type ----
// T is float (f32, bf16, f16 storage), double (f64) or int64_t (integers and bool); the switch
// is on a kernel argument, so it is uniform across a warp.

template <class T>
__device__ __forceinline__ T load_as(const char* p, DType dt) {
  switch (dt) {
    case DType::f32: return T(*reinterpret_cast<const float*>(p));
    case DType::f64: return T(*reinterpret_cast<const double*>(p));
    case DType::bf16: return T(bf16_to_float(*reinterpret_cast<const uint16_t*>(p)));
    case DType::f16: return T(f16_to_float(*reinterpret_cast<const uint16_t*>(p)));
    case DType::i32: return T(*reinterpret_cast<const int32_t*>(p));
    case DType::i64: return T(*reinterpret_cast<const int64_t*>(p));
    case DType::u8: return T(*reinterpret_cast<const uint8_t*>(p));
    default: return T(*reinterpret_cast<const uint8_t*>(p) != 0);
  }
}

template <class T>
__device__ __forceinline__ void store_as(char* p, DType dt, T v) {
  switch (dt) {
    case DType::f32: *reinterpret_cast<float*>(p) = float(v); break;
    case DType::f64: *reinterpret_cast<double*>(p) = double(v); break;
    case DType::bf16: *reinterpret_cast<uint16_t*>(p) = float_to_bf16(float(v)); break;
    case DType::f16: *reinterpret_cast<uint16_t*>(p) = float_to_f16(float(v)); break;
    case DType::i32: *reinterpret_cast<int32_t*>(p) = int32_t(v); break;
    case DType::i64: *reinterpret_cast<int64_t*>(p) = int64_t(v); break;
    case DType::u8: *reinterpret_cast<uint8_t*>(p) = uint8_t(v); break;
    default: *reinterpret_cast<uint8_t*>(p) = uint8_t(v != T(0)); break;
  }
}

// ---- strided offsets ----

// Byte offsets of logical element i in each operand.
template <int N>
__device__ __forceinline__ void strided_offsets(const StridedArgs<N>& a, int64_t i, int64_t (&off)[N]) {
#pragma unroll
  for (int k = 0; k < N; ++k) off[k] = 0;
  if (a.ndim == 1) {
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] = i * a.stride[k][0];
    return;
  }
  for (int d = a.ndim - 1; d >= 0; --d) {
    const int64_t s = a.shape[d];
    const int64_t q = i / s;
    const int64_t r = i - q * s;
    i = q;
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] += r * a.stride[k][d];
  }
}

#define STRATA_GRID_STRIDE(i, n)                                                      \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n);         \
       i += int64_t(gridDim.x) * blockDim.x)

// ---- deterministic reductions ----

template <class A>
__device__ __forceinline__ A warp_sum(A v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;  // valid in lane 0
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024), returned to every thread.
// `smem` holds 32 values. The tree is fixed by blockDim, so the bits are reproducible.
template <class A>
__device__ __forceinline__ A block_sum(A v, A* smem) {
  v = warp_sum(v);
  if (blockDim.x == 32) return __shfl_sync(0xffffffffu, v, 0);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nwarps = blockDim.x >> 5;
  __syncthreads();  // smem may still be read by a previous call
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  A t = lane < nwarps ? smem[lane] : A(0);
  t = warp_sum(t);
  return __shfl_sync(0xffffffffu, t, 0);
}

// Max ignoring NaN (x > m ? x : m, as the CPU's row_max); returned to every thread.
template <class T>
__device__ __forceinline__ T block_max(T v, T* smem) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    T w = __shfl_xor_sync(0xffffffffu, v, o);
    v = w > v ? w : v;
  }
  if (blockDim.x == 32) return v;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nwarps = blockDim.x >> 5;
  __syncthreads();
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  T t = smem[0];
  for (int w = 1; w < nwarps; ++w) t = smem[w] > t ? smem[w] : t;
  (void)lane;
  return t;
}

// Threads per block for a kernel that gives one block to each row of `cols` elements.
inline int row_block_threads(int64_t cols) { return cols <= 64 ? 32 : (cols <= 512 ? 128 : 256); }

// Host-side dispatch for the graph kernels: fn(const I*) with the index's element type (i32 or
// i64; an undefined index passes a null int64 pointer, the identity), and fn(T{}) with a float
// tensor's type (f32 or f64; TypeError naming `op` otherwise).
template <class Fn>
void with_index(const Tensor& t, Fn&& fn) {
  if (!t.defined())
    fn(static_cast<const int64_t*>(nullptr));
  else if (t.dtype() == DType::i32)
    fn(static_cast<const int32_t*>(t.data_ptr()));
  else
    fn(static_cast<const int64_t*>(t.data_ptr()));
}

template <class Fn>
void with_float(const Tensor& t, const char* op, Fn&& fn) {
  if (t.dtype() == DType::f64)
    fn(double{});
  else if (t.dtype() == DType::f32)
    fn(float{});
  else
    throw TypeError(std::string(op) + ": f32 or f64 only, got " + t.str());
}

}  // namespace strata::gpu
