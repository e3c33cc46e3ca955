#include "ops/dispatch.h"

#include <mutex>

#include "ops/cpu/cpu_backend.h"
#include "ops/meta/meta_backend.h"
#include "ops/sim/sim_backend.h"
#include "strata/config.h"

#if STRATA_HAVE_CUDA
namespace strata::gpu {
std::unique_ptr<Backend> make_cuda_backend();
}
#endif

namespace strata::ops::detail {

void register_builtin_backends() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto& reg = BackendRegistry::instance();
    reg.add(DeviceType::CPU, std::make_unique<cpu::CpuBackend>());
    reg.add(DeviceType::Meta, meta::make_meta_backend());
    reg.add(DeviceType::Sim, simulated::make_sim_backend());
#if STRATA_HAVE_CUDA
    reg.add(DeviceType::CUDA, gpu::make_cuda_backend());
#endif
  });
}

namespace {
// Registers at load time too, so core code (the engine, Tensor::empty) finds the backends
// even before the first op runs.
const bool registered_at_load = (register_builtin_backends(), true);
}  // namespace

Backend& kernels(Device d) {
  register_builtin_backends();
  return BackendRegistry::instance().get(d.type);
}

void record(const char* op, Device device, double flops, double bytes_read, double bytes_written) {
  if (OpObserver* o = OpObserverGuard::current()) o->on_op(OpRecord{op, device, {flops, bytes_read, bytes_written}});
}

Device common_device(const char* op, std::initializer_list<const Tensor*> ts) {
  const Tensor* first = nullptr;
  for (const Tensor* t : ts) {
    if (!t->defined()) continue;
    if (!first) {
      first = t;
      continue;
    }
    STRATA_CHECK(t->device() == first->device(), DeviceError, op, ": tensors on different devices (",
                 first->str(), " and ", t->str(), ")");
  }
  STRATA_CHECK(first != nullptr, ValueError, op, ": no defined input");
  return first->device();
}

void check_defined(const char* op, const Tensor& t, const char* what) {
  STRATA_CHECK(t.defined(), ValueError, op, ": ", what, " is undefined");
}

Tensor raw_view(const Tensor& x, Shape shape, Shape strides, int64_t offset) {
  return Tensor::from_storage(x.storage(), std::move(shape), std::move(strides), offset, x.dtype());
}

Tensor raw_expand(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  const int64_t n = int64_t(shape.size()), k = x.dim();
  STRATA_CHECK(n >= k, ShapeError, "expand: cannot expand ", shape_str(x.shape()), " to ", shape_str(shape));
  Shape st(size_t(n), 0);
  for (int64_t i = 0; i < k; ++i) {
    int64_t xs = x.size(i), ts = shape[size_t(n - k + i)];
    STRATA_CHECK(xs == ts || xs == 1, ShapeError, "expand: cannot expand ", shape_str(x.shape()), " to ",
                 shape_str(shape));
    st[size_t(n - k + i)] = xs == 1 && ts != 1 ? 0 : x.stride(i);
  }
  return raw_view(x, shape, st, x.storage_offset());
}

Tensor raw_contiguous(const Tensor& x) {
  if (x.is_contiguous()) return x;
  Tensor out = alloc(x.shape(), x.dtype(), x.device());
  kernels(x.device()).copy(out, x);
  record("contiguous", x.device(), 0, double(x.nbytes()), double(out.nbytes()));
  return out;
}

Tensor raw_cast(const Tensor& x, DType dtype) {
  if (x.dtype() == dtype) return x;
  Tensor out = alloc(x.shape(), dtype, x.device());
  kernels(x.device()).copy(out, x);
  record("to_dtype", x.device(), 0, double(x.nbytes()), double(out.nbytes()));
  return out;
}

Shape infer_shape(const Shape& shape, int64_t numel, const char* op) {
  Shape out = shape;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      STRATA_CHECK(infer < 0, ShapeError, op, ": only one dim can be -1 in ", shape_str(shape));
      infer = int64_t(i);
    } else {
      STRATA_CHECK(out[i] >= 0, ShapeError, op, ": invalid size in ", shape_str(shape));
      STRATA_CHECK(!__builtin_mul_overflow(known, out[i], &known), ShapeError, op, ": shape ",
                   shape_str(shape), " has more elements than a 64-bit count holds");
    }
  }
  if (infer >= 0) {
    STRATA_CHECK(known != 0 && numel % known == 0, ShapeError, op, ": shape ", shape_str(shape),
                 " is invalid for ", numel, " elements");
    out[size_t(infer)] = numel / known;
  }
  STRATA_CHECK(shape_numel(out) == numel, ShapeError, op, ": shape ", shape_str(shape),
               " is invalid for ", numel, " elements");
  return out;
}

// PyTorch's computeStride: groups of input dims that are contiguous among themselves may be
// re-split freely.
bool view_strides(const Tensor& x, const Shape& shape, Shape* strides) {
  const Shape& old = x.shape();
  const Shape& ost = x.strides();
  Shape st(shape.size(), 0);
  if (x.numel() == 0 || old.empty()) {
    *strides = contiguous_strides(shape);
    return true;
  }
  int64_t view_d = int64_t(shape.size()) - 1;
  int64_t chunk_base_stride = ost.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = int64_t(old.size()) - 1; d >= 0; --d) {
    tensor_numel *= old[size_t(d)];
    if (d == 0 || (old[size_t(d - 1)] != 1 && ost[size_t(d - 1)] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[size_t(view_d)] == 1)) {
        st[size_t(view_d)] = view_numel * chunk_base_stride;
        view_numel *= shape[size_t(view_d)];
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (d > 0) {
        chunk_base_stride = ost[size_t(d - 1)];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return false;
  *strides = st;
  return true;
}

Tensor raw_reshape(const Tensor& x, const Shape& shape) {
  Shape s = infer_shape(shape, x.numel(), "reshape");
  Shape st;
  if (view_strides(x, s, &st)) return raw_view(x, s, st, x.storage_offset());
  return raw_view(raw_contiguous(x), s, contiguous_strides(s), 0);
}

}  // namespace strata::ops::detail
