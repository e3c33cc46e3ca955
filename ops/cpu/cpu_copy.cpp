// CPU copy (strided, with dtype conversion) and fill.
#include <cstring>

#include "ops/cpu/cpu_backend.h"
#include "ops/common/dtype_dispatch.h"
#include "ops/cpu/strided_loop.h"

namespace strata::cpu {

namespace {

template <size_t Bytes>
struct Chunk {
  unsigned char b[Bytes];
};

// Same-dtype copy: moves raw element bytes.
template <size_t Bytes>
void copy_same(const Tensor& dst, const Tensor& src) {
  strided_for_each<2>(dst.shape(), {static_cast<char*>(dst.data_ptr()), static_cast<char*>(src.data_ptr())},
                      {&dst.strides(), &src.strides()}, {int64_t(Bytes), int64_t(Bytes)},
                      [](std::array<char*, 2> p, const int64_t* s, int64_t n) {
                        if (s[0] == int64_t(Bytes) && s[1] == int64_t(Bytes)) {
                          std::memcpy(p[0], p[1], size_t(n) * Bytes);
                          return;
                        }
                        for (int64_t i = 0; i < n; ++i)
                          *reinterpret_cast<Chunk<Bytes>*>(p[0] + i * s[0]) =
                              *reinterpret_cast<const Chunk<Bytes>*>(p[1] + i * s[1]);
                      });
}

}  // namespace

// Contiguous f32 <-> bf16, vectorized (cpu_bf16_convert.cpp).
void convert_f32_to_bf16(uint16_t* dst, const float* src, int64_t n);
void convert_bf16_to_f32(float* dst, const uint16_t* src, int64_t n);

void CpuBackend::copy(const Tensor& dst, const Tensor& src) {
  STRATA_CHECK(dst.shape() == src.shape(), ShapeError, "copy: destination ", dst.str(),
               " and source ", src.str(), " differ in shape");
  STRATA_CHECK(dst.device().is_host_memory() && src.device().is_host_memory(), DeviceError,
               "CPU copy between ", src.str(), " and ", dst.str());
  if (dst.numel() == 0) return;
  if (dst.dtype() == src.dtype()) {
    switch (dst.element_size()) {
      case 1: return copy_same<1>(dst, src);
      case 2: return copy_same<2>(dst, src);
      case 4: return copy_same<4>(dst, src);
      default: return copy_same<8>(dst, src);
    }
  }
  if (dst.is_contiguous() && src.is_contiguous()) {
    if (dst.dtype() == DType::bf16 && src.dtype() == DType::f32)
      return convert_f32_to_bf16(static_cast<uint16_t*>(dst.data_ptr()), src.data<float>(), dst.numel());
    if (dst.dtype() == DType::f32 && src.dtype() == DType::bf16)
      return convert_bf16_to_f32(dst.data<float>(), static_cast<const uint16_t*>(src.data_ptr()), dst.numel());
  }
  common::dispatch_dtype(dst.dtype(), [&](auto d) {
    using D = decltype(d);
    common::dispatch_dtype(src.dtype(), [&](auto s) {
      using S = decltype(s);
      strided_for_each<2>(dst.shape(), {static_cast<char*>(dst.data_ptr()), static_cast<char*>(src.data_ptr())},
                          {&dst.strides(), &src.strides()}, {int64_t(sizeof(D)), int64_t(sizeof(S))},
                          [](std::array<char*, 2> p, const int64_t* st, int64_t n) {
                            for (int64_t i = 0; i < n; ++i)
                              *reinterpret_cast<D*>(p[0] + i * st[0]) =
                                  common::convert<D>(*reinterpret_cast<const S*>(p[1] + i * st[1]));
                          });
    });
  });
}

void CpuBackend::fill(const Tensor& dst, double value) {
  if (dst.numel() == 0) return;
  common::dispatch_dtype(dst.dtype(), [&](auto d) {
    using D = decltype(d);
    D v = common::convert<D>(value);
    strided_for_each<1>(dst.shape(), {static_cast<char*>(dst.data_ptr())}, {&dst.strides()},
                        {int64_t(sizeof(D))}, [v](std::array<char*, 1> p, const int64_t* st, int64_t n) {
                          for (int64_t i = 0; i < n; ++i) *reinterpret_cast<D*>(p[0] + i * st[0]) = v;
                        });
  });
}

Tensor contiguous_as(const Tensor& t, DType dt) {
  if (t.dtype() == dt && t.is_contiguous()) return t;
  Tensor out = Tensor::empty(t.shape(), dt, kCPU);
  CpuBackend().copy(out, t);
  return out;
}

void check_row_kernel_input(const Tensor& t, const char* kernel) {
  STRATA_CHECK(t.is_contiguous() && (t.dtype() == DType::f32 || t.dtype() == DType::f64), TypeError,
               kernel, ": expects a contiguous f32/f64 tensor, got ", t.str());
}

}  // namespace strata::cpu
