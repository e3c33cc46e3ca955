// CUDA elementwise kernels: one kernel template instantiated per EwOp and compute type with
// ops/common's ew_apply, the same functor the CPU runs. Dtype rules mirror
// CpuBackend::elementwise: f32 and f64 compute in themselves, bf16/f16 in f32, integers and
// bool in i64 (only the integer-capable ops), comparisons write bool. The 16-bit and narrow
// integer operands are converted while loading and storing instead of through temporaries;
// the conversions are the CPU's, so the results are the same. Contiguous, aligned operands of one
// floating dtype take a plain, vectorized kernel (the same functor and conversions: the same bits).
#include <cstdint>
#include <type_traits>

#include "ops/common/elementwise_math.h"
#include "ops/cuda/cuda_backend.h"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_device_utils.cuh"

namespace strata::gpu {

namespace {

// Operands of OP: the output plus its inputs (ew_op_arity, usable at compile time).
template <EwOp OP>
constexpr int kOperands = OP == EwOp::Where ? 4 : (OP >= EwOp::Add ? 3 : 2);

template <EwOp OP, class T>
__global__ void ew_kernel(StridedArgs<kOperands<OP>> a, T p0, T p1) {
  constexpr int N = kOperands<OP>;
  STRATA_GRID_STRIDE(i, a.numel) {
    int64_t off[N];
    strided_offsets(a, i, off);
    const T x = load_as<T>(a.ptr[1] + off[1], a.dtype[1]);
    T y = T(0), z = T(0);
    if constexpr (N > 2) y = load_as<T>(a.ptr[2] + off[2], a.dtype[2]);
    if constexpr (N > 3) z = load_as<T>(a.ptr[3] + off[3], a.dtype[3]);
    store_as<T>(a.ptr[0] + off[0], a.dtype[0], common::ew_apply<OP, T>(x, y, z, p0, p1));
  }
}

// How a dense kernel stores its operands: as the compute type itself, or as bf16/f16 bits
// converted exactly as load_as / store_as convert them.
template <class T>
struct PlainStorage {
  using Raw = T;
  __device__ static T in(Raw v) { return v; }
  __device__ static Raw out(T v) { return v; }
};
struct Bf16Storage {
  using Raw = uint16_t;
  __device__ static float in(Raw v) { return bf16_to_float(v); }
  __device__ static Raw out(float v) { return float_to_bf16(v); }
};
struct F16Storage {
  using Raw = uint16_t;
  __device__ static float in(Raw v) { return f16_to_float(v); }
  __device__ static Raw out(float v) { return float_to_f16(v); }
};

// Every operand contiguous, 16-byte aligned and of one floating dtype, no comparison and no
// where: plain indexing, 16 bytes per operand per load (4 f32, 2 f64 or 8 bf16/f16 elements).
template <EwOp OP, class T, class S>
__global__ void ew_dense_kernel(typename S::Raw* out, const typename S::Raw* x, const typename S::Raw* y,
                                int64_t n, T p0, T p1) {
  constexpr int N = kOperands<OP>;
  using Raw = typename S::Raw;
  constexpr int V = 16 / int(sizeof(Raw));
  struct alignas(16) Vec {
    Raw v[V];
  };
  const int64_t nv = n / V;
  STRATA_GRID_STRIDE(j, nv) {
    const Vec a = reinterpret_cast<const Vec*>(x)[j];
    Vec b{}, o;
    if constexpr (N > 2) b = reinterpret_cast<const Vec*>(y)[j];
#pragma unroll
    for (int k = 0; k < V; ++k)
      o.v[k] = S::out(common::ew_apply<OP, T>(S::in(a.v[k]), N > 2 ? S::in(b.v[k]) : T(0), T(0), p0, p1));
    reinterpret_cast<Vec*>(out)[j] = o;
  }
  STRATA_GRID_STRIDE(i, n - nv * V) {
    const int64_t e = nv * V + i;
    out[e] = S::out(common::ew_apply<OP, T>(S::in(x[e]), N > 2 ? S::in(y[e]) : T(0), T(0), p0, p1));
  }
}

template <EwOp OP, class T, class S>
void launch_dense_as(const Tensor& out, std::span<const Tensor> in, const EwParams& prm) {
  using Raw = typename S::Raw;
  constexpr int V = 16 / int(sizeof(Raw));
  const int64_t n = out.numel();
  ew_dense_kernel<OP, T, S><<<grid_for((n + V - 1) / V), kThreads, 0, compute_stream()>>>(
      static_cast<Raw*>(out.data_ptr()), static_cast<const Raw*>(in[0].data_ptr()),
      kOperands<OP> > 2 ? static_cast<const Raw*>(in[1].data_ptr()) : nullptr, n, T(prm.p0), T(prm.p1));
  STRATA_CUDA_CHECK_LAUNCH("elementwise ", ew_op_name(OP), " -> ", out.str());
}

// Returns false (the strided kernel runs instead) unless every operand fits the dense kernel.
template <EwOp OP, class T>
bool launch_dense(const Tensor& out, std::span<const Tensor> in, const EwParams& prm) {
  constexpr int N = kOperands<OP>;
  if constexpr (N > 3) {
    return false;
  } else {
    const DType stored = out.dtype();
    for (int k = 0; k < N; ++k) {
      const Tensor& t = k == 0 ? out : in[size_t(k - 1)];
      if (t.dtype() != stored || !t.is_contiguous() || t.numel() != out.numel() ||
          reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 != 0)
        return false;
    }
    if constexpr (sizeof(T) == 8) {
      if (stored != DType::f64) return false;
      launch_dense_as<OP, T, PlainStorage<T>>(out, in, prm);
    } else {
      if (stored == DType::f32)
        launch_dense_as<OP, T, PlainStorage<T>>(out, in, prm);
      else if (stored == DType::bf16)
        launch_dense_as<OP, T, Bf16Storage>(out, in, prm);
      else if (stored == DType::f16)
        launch_dense_as<OP, T, F16Storage>(out, in, prm);
      else
        return false;
    }
    return true;
  }
}

template <EwOp OP, class T>
void launch_ew(const Tensor& out, std::span<const Tensor> in, const EwParams& prm) {
  constexpr int N = kOperands<OP>;
  if constexpr (std::is_floating_point_v<T> && OP != EwOp::Where) {
    if (!common::ew_is_comparison(OP) && launch_dense<OP, T>(out, in, prm)) return;
  }
  std::array<const Tensor*, N> ts;
  ts[0] = &out;
  for (int k = 1; k < N; ++k) ts[size_t(k)] = &in[size_t(k - 1)];
  StridedArgs<N> a = make_strided_args<N>(ts);
  ew_kernel<OP, T><<<grid_for(a.numel), kThreads, 0, compute_stream()>>>(a, T(prm.p0), T(prm.p1));
  STRATA_CUDA_CHECK_LAUNCH("elementwise ", ew_op_name(OP), " -> ", out.str());
}

template <class T>
void ew_typed(EwOp op, const Tensor& out, std::span<const Tensor> in, const EwParams& p, DType dt) {
  const bool ran = common::dispatch_ew_op<T>(op, [&](auto tag) { launch_ew<decltype(tag)::value, T>(out, in, p); });
  STRATA_CHECK(ran, TypeError, "elementwise ", ew_op_name(op), ": not defined for ", dtype_name(dt), " tensors");
}

}  // namespace

void CudaBackend::elementwise(EwOp op, const Tensor& out, std::span<const Tensor> in, const EwParams& p) {
  const int arity = ew_op_arity(op);
  STRATA_CHECK(int(in.size()) == arity, ValueError, "elementwise ", ew_op_name(op), ": expected ", arity,
               " inputs, got ", in.size());
  const int dev = check_on_device(ew_op_name(op), {&out});
  for (const Tensor& t : in) check_on_device(ew_op_name(op), {&t}, dev);
  if (out.numel() == 0) return;
  const bool cmp = common::ew_is_comparison(op);
  const int first = op == EwOp::Where ? 1 : 0;
  const DType dt = in[size_t(first)].dtype();
  for (int i = first; i < arity; ++i)
    STRATA_CHECK(in[size_t(i)].dtype() == dt, TypeError, "elementwise ", ew_op_name(op), ": input dtypes differ (",
                 in[0].str(), ")");
  STRATA_CHECK(cmp ? out.dtype() == DType::boolean : out.dtype() == dt, TypeError, "elementwise ",
               ew_op_name(op), ": output ", out.str(), " for inputs of ", dtype_name(dt));
  if (op == EwOp::Where)
    STRATA_CHECK(in[0].dtype() == DType::boolean, TypeError, "where: condition must be bool, got ", in[0].str());
  context(dev);
  DeviceGuard guard(dev);
  if (dt == DType::f64) return ew_typed<double>(op, out, in, p, dt);
  if (is_floating(dt)) return ew_typed<float>(op, out, in, p, dt);
  ew_typed<int64_t>(op, out, in, p, dt);
}

}  // namespace strata::gpu
