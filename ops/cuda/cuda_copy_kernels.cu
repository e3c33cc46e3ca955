// Device copy and fill kernels: strided same-dtype moves, strided dtype conversion (exactly
// the CPU's conversions; contiguous f32 <-> bf16/f16 by plain indexing), fills and aranges.
#include <cstring>

#include "ops/common/dtype_dispatch.h"
#include "ops/cuda/cuda_backend.h"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_device_utils.cuh"

namespace strata::gpu {

namespace {

template <int Bytes>
__global__ void move_kernel(StridedArgs<2> a) {
  STRATA_GRID_STRIDE(i, a.numel) {
    int64_t off[2];
    strided_offsets(a, i, off);
    *reinterpret_cast<RawElement<Bytes>*>(a.ptr[0] + off[0]) =
        *reinterpret_cast<const RawElement<Bytes>*>(a.ptr[1] + off[1]);
  }
}

// Integers go through int64 and floats through double: both hold every source value exactly,
// so one rounding happens at the store, as in the CPU's convert<To, From>.
__global__ void convert_kernel(StridedArgs<2> a) {
  const bool from_int = is_integral(a.dtype[1]);
  STRATA_GRID_STRIDE(i, a.numel) {
    int64_t off[2];
    strided_offsets(a, i, off);
    if (from_int)
      store_as<int64_t>(a.ptr[0] + off[0], a.dtype[0], load_as<int64_t>(a.ptr[1] + off[1], a.dtype[1]));
    else
      store_as<double>(a.ptr[0] + off[0], a.dtype[0], load_as<double>(a.ptr[1] + off[1], a.dtype[1]));
  }
}

// Contiguous conversions between f32 and a 16-bit float (autocast's casts): plain indexing, the
// same conversions through float, which holds every value of either side exactly.
__global__ void convert_float_dense_kernel(char* dst, DType to, int64_t to_size, const char* src, DType from,
                                           int64_t from_size, int64_t n) {
  STRATA_GRID_STRIDE(i, n) {
    store_as<float>(dst + i * to_size, to, load_as<float>(src + i * from_size, from));
  }
}

// dst[i] = start + i * step in double, stored with the conversion convert_kernel uses.
__global__ void arange_kernel(char* dst, DType dtype, int64_t element_size, int64_t n, double start,
                              double step) {
  STRATA_GRID_STRIDE(i, n) { store_as<double>(dst + i * element_size, dtype, start + double(i) * step); }
}

bool is_float_pair(DType a, DType b) {
  const auto narrow = [](DType d) { return d == DType::bf16 || d == DType::f16; };
  return (a == DType::f32 && narrow(b)) || (narrow(a) && b == DType::f32);
}

template <int Bytes>
__global__ void fill_kernel(StridedArgs<1> a, RawElement<Bytes> v) {
  STRATA_GRID_STRIDE(i, a.numel) {
    int64_t off[1];
    strided_offsets(a, i, off);
    *reinterpret_cast<RawElement<Bytes>*>(a.ptr[0] + off[0]) = v;
  }
}

}  // namespace

void launch_convert(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  StridedArgs<2> a = make_strided_args<2>({&dst, &src});
  const unsigned grid = grid_for(a.numel);
  if (dst.dtype() == src.dtype()) {
    switch (dst.element_size()) {
      case 1: move_kernel<1><<<grid, kThreads, 0, compute_stream()>>>(a); break;
      case 2: move_kernel<2><<<grid, kThreads, 0, compute_stream()>>>(a); break;
      case 4: move_kernel<4><<<grid, kThreads, 0, compute_stream()>>>(a); break;
      default: move_kernel<8><<<grid, kThreads, 0, compute_stream()>>>(a); break;
    }
  } else if (is_float_pair(dst.dtype(), src.dtype()) && dst.is_contiguous() && src.is_contiguous()) {
    convert_float_dense_kernel<<<grid, kThreads, 0, compute_stream()>>>(
        static_cast<char*>(dst.data_ptr()), dst.dtype(), int64_t(dst.element_size()),
        static_cast<const char*>(src.data_ptr()), src.dtype(), int64_t(src.element_size()), dst.numel());
  } else {
    convert_kernel<<<grid, kThreads, 0, compute_stream()>>>(a);
  }
  STRATA_CUDA_CHECK_LAUNCH("copy ", src.str(), " -> ", dst.str());
}

void launch_fill(const Tensor& dst, double value) {
  if (dst.numel() == 0) return;
  // The element's bytes, converted on the host exactly as CpuBackend::fill does.
  RawElement<8> bits{};
  common::dispatch_dtype(dst.dtype(), [&](auto d) {
    using D = decltype(d);
    D v = common::convert<D>(value);
    std::memcpy(bits.b, &v, sizeof(D));
  });
  const size_t es = dst.element_size();
  bool zero = true;
  for (size_t k = 0; k < es; ++k) zero = zero && bits.b[k] == 0;
  if (zero && dst.is_contiguous()) {
    STRATA_CUDA_CHECK(cudaMemsetAsync(dst.data_ptr(), 0, dst.nbytes(), compute_stream()), "fill ", dst.str());
    return;
  }
  StridedArgs<1> a = make_strided_args<1>({&dst});
  const unsigned grid = grid_for(a.numel);
  auto as = [&](auto raw) {
    std::memcpy(raw.b, bits.b, sizeof(raw.b));
    return raw;
  };
  switch (es) {
    case 1: fill_kernel<1><<<grid, kThreads, 0, compute_stream()>>>(a, as(RawElement<1>{})); break;
    case 2: fill_kernel<2><<<grid, kThreads, 0, compute_stream()>>>(a, as(RawElement<2>{})); break;
    case 4: fill_kernel<4><<<grid, kThreads, 0, compute_stream()>>>(a, as(RawElement<4>{})); break;
    default: fill_kernel<8><<<grid, kThreads, 0, compute_stream()>>>(a, as(RawElement<8>{})); break;
  }
  STRATA_CUDA_CHECK_LAUNCH("fill ", dst.str());
}

void CudaBackend::fill(const Tensor& dst, double value) {
  const int dev = check_on_device("fill", {&dst});
  if (dst.numel() == 0) return;
  context(dev);
  DeviceGuard guard(dev);
  launch_fill(dst, value);
}

void CudaBackend::arange(const Tensor& dst, double start, double step) {
  const int dev = check_on_device("arange", {&dst});
  STRATA_CHECK(dst.dim() == 1 && dst.is_contiguous(), ShapeError, "arange: ", dst.str(),
               " is not a contiguous 1-D tensor");
  if (dst.numel() == 0) return;
  context(dev);
  DeviceGuard guard(dev);
  arange_kernel<<<grid_for(dst.numel()), kThreads, 0, compute_stream()>>>(
      static_cast<char*>(dst.data_ptr()), dst.dtype(), int64_t(dst.element_size()), dst.numel(), start, step);
  STRATA_CUDA_CHECK_LAUNCH("arange ", dst.str());
}

}  // namespace strata::gpu
