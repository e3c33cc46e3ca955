// Tensor factories and in-place random initializers. Each works on the device its tensor got (Meta
// for a CPU tensor under nn::MetaInitGuard).
#include "strata/core/factory.h"

#include <algorithm>
#include <cmath>

#include "strata/core/backend.h"
#include "strata/core/generator.h"
#include "strata/core/op_observer.h"

namespace strata {

namespace {
// The backends (CPU, Meta, CUDA) register themselves when the library loads (ops/dispatch.cpp).
Backend& kernels(Device d) { return backend_for(d); }
Tensor alloc(const Shape& shape, DType dtype, Device device) { return Tensor::empty(shape, dtype, device); }
void record(const char* op, const Tensor& t) {
  if (OpObserver* o = OpObserverGuard::current())
    o->on_op(OpRecord{op, t.device(), {double(t.numel()), 0, double(t.nbytes())}});
}
Tensor finish(Tensor t, const TensorOptions& o) {
  if (o.requires_grad_) t.set_requires_grad(true);
  return t;
}
}  // namespace

Tensor empty(const Shape& shape, TensorOptions o) {
  return finish(alloc(shape, o.dtype_, o.device_), o);
}

Tensor full(const Shape& shape, double value, TensorOptions o) {
  Tensor t = alloc(shape, o.dtype_, o.device_);
  kernels(t.device()).fill(t, value);
  return finish(t, o);
}

Tensor zeros(const Shape& shape, TensorOptions o) { return full(shape, 0.0, o); }
Tensor ones(const Shape& shape, TensorOptions o) { return full(shape, 1.0, o); }

Tensor arange(double start, double end, double step, TensorOptions o) {
  STRATA_CHECK(step != 0, ValueError, "arange: step must be nonzero");
  int64_t n = std::max<int64_t>(0, int64_t(std::ceil((end - start) / step)));
  Tensor t = alloc({n}, o.dtype_, o.device_);
  if (n > 0 && !t.device().is_meta()) kernels(t.device()).arange(t, start, step);  // on the device itself
  return finish(t, o);
}

Tensor arange(int64_t end, TensorOptions o) { return arange(0.0, double(end), 1.0, o); }

Tensor from_vector(const std::vector<double>& values, const Shape& shape, TensorOptions o) {
  STRATA_CHECK(int64_t(values.size()) == shape_numel(shape), ShapeError, "from_vector: ", values.size(),
               " values for shape ", shape_str(shape));
  Tensor host = Tensor::from_storage(
      std::make_shared<StorageImpl>(const_cast<double*>(values.data()), values.size() * sizeof(double), kCPU, nullptr),
      shape, contiguous_strides(shape), 0, DType::f64);
  Tensor t = alloc(shape, o.dtype_, o.device_);
  if (!t.device().is_meta()) kernels(t.device()).copy(t, host);
  return finish(t, o);
}

Tensor from_vector(const std::vector<float>& values, const Shape& shape, TensorOptions o) {
  return from_vector(std::vector<double>(values.begin(), values.end()), shape, o);
}

Tensor from_vector(const std::vector<int64_t>& values, const Shape& shape, TensorOptions o) {
  STRATA_CHECK(int64_t(values.size()) == shape_numel(shape), ShapeError, "from_vector: ", values.size(),
               " values for shape ", shape_str(shape));
  Tensor host = Tensor::from_storage(
      std::make_shared<StorageImpl>(const_cast<int64_t*>(values.data()), values.size() * sizeof(int64_t), kCPU,
                                    nullptr),
      shape, contiguous_strides(shape), 0, DType::i64);
  Tensor t = alloc(shape, o.dtype_, o.device_);
  if (!t.device().is_meta()) kernels(t.device()).copy(t, host);
  return finish(t, o);
}

Tensor scalar_tensor(double value, TensorOptions o) { return full({}, value, o); }

Tensor rand(const Shape& shape, TensorOptions o) {
  Tensor t = alloc(shape, o.dtype_, o.device_);
  uniform_(t, 0.0, 1.0);
  return finish(t, o);
}

Tensor randn(const Shape& shape, TensorOptions o) {
  Tensor t = alloc(shape, o.dtype_, o.device_);
  normal_(t, 0.0, 1.0);
  return finish(t, o);
}

Tensor empty_like(const Tensor& t) { return alloc(t.shape(), t.dtype(), t.device()); }
Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), TensorOptions(t.dtype()).device(t.device())); }
Tensor ones_like(const Tensor& t) { return ones(t.shape(), TensorOptions(t.dtype()).device(t.device())); }
Tensor full_like(const Tensor& t, double v) { return full(t.shape(), v, TensorOptions(t.dtype()).device(t.device())); }

void uniform_(Tensor& t, double low, double high) {
  RngState s = current_generator().reserve(uint64_t(t.numel()));
  kernels(t.device()).random_uniform(t, s, low, high);
  record("uniform_", t);
  t.bump_version();
}

void normal_(Tensor& t, double mean, double std) {
  RngState s = current_generator().reserve(2 * uint64_t(t.numel()));
  kernels(t.device()).random_normal(t, s, mean, std);
  record("normal_", t);
  t.bump_version();
}

}  // namespace strata
