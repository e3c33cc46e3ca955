#include "strata/core/tensor.h"

#include "strata/core/backend.h"
#include "strata/core/error.h"
#include "strata/core/meta_allocation.h"

namespace strata {

namespace {
bool compute_contiguous(const Shape& shape, const Shape& strides) {
  for (int64_t s : shape)
    if (s == 0) return true;  // no elements: any strides describe them
  int64_t expected = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}
}  // namespace

TensorImpl::TensorImpl(Storage storage, Shape shape, Shape strides, int64_t offset, DType dtype)
    : storage_(std::move(storage)), shape_(std::move(shape)), strides_(std::move(strides)),
      offset_(offset), dtype_(dtype), numel_(shape_numel(shape_)),
      contiguous_(compute_contiguous(shape_, strides_)) {}

AutogradMeta& TensorImpl::ensure_autograd() {
  if (!autograd_) autograd_ = std::make_unique<AutogradMeta>();
  return *autograd_;
}

Tensor Tensor::from_storage(Storage storage, Shape shape, Shape strides, int64_t offset,
                            DType dtype) {
  STRATA_CHECK(storage != nullptr, ValueError, "Tensor::from_storage: null storage");
  STRATA_CHECK(shape.size() == strides.size(), ShapeError, "Tensor::from_storage: shape ",
               shape_str(shape), " and strides ", shape_str(strides), " differ in rank");
  int64_t max_index = offset;
  for (size_t i = 0; i < shape.size(); ++i) {
    STRATA_CHECK(shape[i] >= 0, ShapeError, "Tensor::from_storage: negative size in ",
                 shape_str(shape));
    if (shape[i] == 0) {
      max_index = offset - 1;
      break;
    }
    max_index += (shape[i] - 1) * strides[i];
  }
  STRATA_CHECK(offset >= 0 && (max_index + 1) * int64_t(strata::element_size(dtype)) <= int64_t(storage->nbytes()),
               ShapeError, "Tensor::from_storage: view ", shape_str(shape), " strides ",
               shape_str(strides), " offset ", offset, " exceeds storage of ", storage->nbytes(),
               " bytes");
  return Tensor(std::make_shared<TensorImpl>(std::move(storage), std::move(shape),
                                             std::move(strides), offset, dtype));
}

namespace detail {
namespace {
thread_local bool tl_cpu_tensors_on_meta = false;
}
bool cpu_tensors_on_meta() { return tl_cpu_tensors_on_meta; }
void set_cpu_tensors_on_meta(bool on) { tl_cpu_tensors_on_meta = on; }
}  // namespace detail

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  if (device.is_cpu() && detail::cpu_tensors_on_meta()) device = kMeta;
  const size_t nbytes = shape_nbytes(shape, strata::element_size(dtype), "empty");
  Allocator* alloc = &allocator_for(device);
  std::shared_ptr<StorageImpl> storage;
  try {
    storage = std::make_shared<StorageImpl>(nbytes, device, alloc, MemoryCategoryGuard::current());
  } catch (const OutOfMemoryError& e) {  // the allocator's message, and the tensor it was for
    throw OutOfMemoryError(std::string(e.what()) + "; the request: a " + shape_str(shape) + " " +
                           dtype_name(dtype) + " tensor");
  }
  return Tensor(std::make_shared<TensorImpl>(std::move(storage), shape, contiguous_strides(shape),
                                             0, dtype));
}

const Shape& Tensor::shape() const { return impl_->shape(); }
const Shape& Tensor::strides() const { return impl_->strides(); }
int64_t Tensor::size(int64_t d) const { return impl_->shape()[wrap_dim(d, dim(), "size")]; }
int64_t Tensor::stride(int64_t d) const { return impl_->strides()[wrap_dim(d, dim(), "stride")]; }
int64_t Tensor::dim() const { return int64_t(impl_->shape().size()); }
int64_t Tensor::numel() const { return impl_->numel(); }
int64_t Tensor::storage_offset() const { return impl_->offset(); }
DType Tensor::dtype() const { return impl_->dtype(); }
Device Tensor::device() const { return impl_->device(); }
bool Tensor::is_contiguous() const { return impl_->is_contiguous(); }
const Storage& Tensor::storage() const { return impl_->storage(); }

std::string Tensor::str() const {
  if (!defined()) return "undefined";
  return std::string(dtype_name(dtype())) + shape_str(shape()) + " " + device().str();
}

void* Tensor::data_ptr() const {
  STRATA_CHECK(!device().is_meta(), DeviceError, "data_ptr() on a meta tensor ", str());
  return static_cast<char*>(storage()->data()) + storage_offset() * int64_t(element_size());
}

std::vector<double> Tensor::to_double_vector() const {
  STRATA_CHECK(defined() && !device().is_meta(), DeviceError, "to_vector on ", str());
  Tensor host = Tensor::empty(shape(), DType::f64, kCPU);
  backend_for(device().is_cpu() ? kCPU : device()).copy(host, *this);
  const double* p = host.data<double>();
  return std::vector<double>(p, p + numel());
}

std::vector<int64_t> Tensor::to_int64_vector() const {
  STRATA_CHECK(defined() && !device().is_meta(), DeviceError, "to_vector on ", str());
  STRATA_CHECK(is_integral(dtype()), TypeError, "to_int64_vector on ", str(), ": integers only");
  if (device().is_cpu() && dtype() == DType::i64 && is_contiguous()) {  // already what is asked for
    const int64_t* p = data<int64_t>();
    return std::vector<int64_t>(p, p + numel());
  }
  Tensor host = Tensor::empty(shape(), DType::i64, kCPU);
  backend_for(device().is_cpu() ? kCPU : device()).copy(host, *this);
  const int64_t* p = host.data<int64_t>();
  return std::vector<int64_t>(p, p + numel());
}

double Tensor::item() const {
  STRATA_CHECK(defined() && numel() == 1, ValueError, "item() needs a one-element tensor, got ", str());
  return to_double_vector()[0];
}

AutogradMeta& Tensor::autograd_meta() const { return impl_->ensure_autograd(); }
AutogradMeta* Tensor::autograd_meta_if_exists() const { return impl_ ? impl_->autograd() : nullptr; }

bool Tensor::requires_grad() const {
  auto* m = autograd_meta_if_exists();
  return m && (m->requires_grad || m->grad_fn);
}

Tensor& Tensor::set_requires_grad(bool r) {
  STRATA_CHECK(is_leaf(), AutogradError,
               "set_requires_grad: only leaf tensors can be switched; use detach() for ", str());
  STRATA_CHECK(!r || is_floating(dtype()), AutogradError,
               "set_requires_grad: only floating tensors can require grad, got ", str());
  autograd_meta().requires_grad = r;
  return *this;
}

const Tensor& Tensor::grad() const {
  static const Tensor undefined;
  auto* m = autograd_meta_if_exists();
  return m ? m->grad : undefined;
}

void Tensor::set_grad(const Tensor& g) { autograd_meta().grad = g; }

const std::shared_ptr<autograd::Node>& Tensor::grad_fn() const {
  static const std::shared_ptr<autograd::Node> none;
  auto* m = autograd_meta_if_exists();
  return m ? m->grad_fn : none;
}

uint32_t Tensor::output_nr() const {
  auto* m = autograd_meta_if_exists();
  return m ? m->output_nr : 0;
}

bool Tensor::is_leaf() const { return grad_fn() == nullptr; }

void Tensor::register_post_accumulate_grad_hook(std::function<void(const Tensor&)> hook) {
  STRATA_CHECK(is_leaf(), AutogradError,
               "register_post_accumulate_grad_hook: only for leaf tensors, got ", str());
  autograd_meta().post_accumulate_hooks.push_back(std::move(hook));
}

Tensor Tensor::detach() const {
  auto impl = std::make_shared<TensorImpl>(storage(), shape(), strides(), storage_offset(), dtype());
  return Tensor(std::move(impl));
}

bool Tensor::is_parameter() const {
  auto* m = autograd_meta_if_exists();
  return m && m->is_parameter;
}
void Tensor::set_is_parameter(bool p) {
  autograd_meta().is_parameter = p;
  if (p && storage()) storage()->set_holds_parameter(true);
}

}  // namespace strata
