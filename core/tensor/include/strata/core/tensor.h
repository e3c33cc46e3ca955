// Tensor: a strided view (shape, strides, offset, dtype) on a refcounted Storage, plus the
// autograd metadata (requires_grad, grad, grad_fn).
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "strata/core/device.h"
#include "strata/core/dtype.h"
#include "strata/core/error.h"
#include "strata/core/shape.h"
#include "strata/core/storage.h"

namespace strata {

namespace autograd {
class Node;
}
class TensorImpl;
struct AutogradMeta;

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // A view of `storage` (which must cover offset + extent of the view).
  static Tensor from_storage(Storage storage, Shape shape, Shape strides, int64_t offset,
                             DType dtype);
  // Allocates an uninitialized contiguous tensor (category from MemoryCategoryGuard).
  static Tensor empty(const Shape& shape, DType dtype = DType::f32, Device device = kCPU);

  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

  const Shape& shape() const;
  const Shape& sizes() const { return shape(); }
  const Shape& strides() const;
  int64_t size(int64_t dim) const;
  int64_t stride(int64_t dim) const;
  int64_t dim() const;
  int64_t numel() const;
  int64_t storage_offset() const;
  DType dtype() const;
  Device device() const;
  size_t element_size() const { return strata::element_size(dtype()); }
  size_t nbytes() const { return size_t(numel()) * element_size(); }
  bool is_contiguous() const;
  const Storage& storage() const;
  std::string str() const;  // "f32[2, 3] cpu"

  // Pointer to the first element; throws for Meta tensors.
  void* data_ptr() const;
  template <class T>
  T* data() const {
    STRATA_CHECK(dtype_of<T>::value == dtype(), TypeError, "Tensor::data<", dtype_name(dtype_of<T>::value),
                 ">() called on a ", dtype_name(dtype()), " tensor");
    return static_cast<T*>(data_ptr());
  }
  // The single element of a one-element tensor, converted to double (copies from device).
  double item() const;
  template <class T>
  T item() const { return static_cast<T>(item()); }
  // All elements in logical order, converted to T (copies from device). For tests and I/O. An
  // integer or boolean tensor read into an integral T goes through int64, exactly (a double holds
  // integers only up to 2^53); a floating one through double.
  template <class T>
  std::vector<T> to_vector() const {
    if constexpr (std::is_integral_v<T>) {
      if (is_integral(dtype())) {
        if constexpr (std::is_same_v<T, int64_t>) return to_int64_vector();
        std::vector<int64_t> v = to_int64_vector();
        return std::vector<T>(v.begin(), v.end());
      }
    }
    std::vector<double> v = to_double_vector();
    return std::vector<T>(v.begin(), v.end());
  }
  std::vector<double> to_double_vector() const;
  std::vector<int64_t> to_int64_vector() const;  // an integer or boolean tensor's elements

  // ---- autograd ----
  bool requires_grad() const;
  // Only leaves may be switched; returns *this for chaining.
  Tensor& set_requires_grad(bool requires_grad);
  const Tensor& grad() const;
  void set_grad(const Tensor& g);
  const std::shared_ptr<autograd::Node>& grad_fn() const;
  uint32_t output_nr() const;
  bool is_leaf() const;
  // Keep .grad() for this non-leaf after backward.
  void retain_grad();
  // Runs backward from this tensor; `gradient` defaults to ones for a one-element tensor.
  void backward(const Tensor& gradient = Tensor(), bool retain_graph = false) const;
  // Called after the gradient of this leaf has been accumulated in backward (data-parallel
  // all-reduce hangs off this).
  void register_post_accumulate_grad_hook(std::function<void(const Tensor&)> hook);
  // A tensor sharing storage (and version counter), outside the autograd graph.
  Tensor detach() const;
  bool is_parameter() const;
  void set_is_parameter(bool p);
  uint64_t version() const { return storage()->version(); }
  void bump_version() const { storage()->bump_version(); }
  AutogradMeta& autograd_meta() const;  // created on first use
  AutogradMeta* autograd_meta_if_exists() const;

  // ---- views and copies (defined by the ops layer; differentiable) ----
  Tensor view(const Shape& shape) const;
  Tensor reshape(const Shape& shape) const;
  Tensor permute(const Shape& dims) const;
  Tensor transpose(int64_t d0, int64_t d1) const;
  Tensor t() const;  // transpose of a 2-D tensor
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor expand(const Shape& shape) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor squeeze(int64_t dim) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor contiguous() const;
  Tensor clone() const;
  Tensor to(Device device) const;
  Tensor to(DType dtype) const;
  Tensor sum() const;
  Tensor mean() const;

  // In-place fills and copies (bump the version; not differentiable).
  Tensor& fill_(double value);
  Tensor& zero_() { return fill_(0.0); }
  Tensor& copy_(const Tensor& src);

 private:
  std::shared_ptr<TensorImpl> impl_;
};

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator*(double a, const Tensor& b);

// Autograd state of one tensor; allocated only for tensors that take part in autograd.
struct AutogradMeta {
  bool requires_grad = false;
  bool retains_grad = false;
  bool is_parameter = false;
  Tensor grad;
  std::shared_ptr<autograd::Node> grad_fn;
  uint32_t output_nr = 0;
  std::weak_ptr<autograd::Node> grad_accumulator;  // leaves only
  std::vector<std::function<void(const Tensor&)>> post_accumulate_hooks;
};

class TensorImpl {
 public:
  TensorImpl(Storage storage, Shape shape, Shape strides, int64_t offset, DType dtype);

  const Storage& storage() const { return storage_; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  int64_t offset() const { return offset_; }
  DType dtype() const { return dtype_; }
  Device device() const { return storage_->device(); }
  int64_t numel() const { return numel_; }
  bool is_contiguous() const { return contiguous_; }
  AutogradMeta* autograd() const { return autograd_.get(); }
  AutogradMeta& ensure_autograd();

 private:
  Storage storage_;
  Shape shape_;
  Shape strides_;
  int64_t offset_;
  DType dtype_;
  int64_t numel_;
  bool contiguous_;
  std::unique_ptr<AutogradMeta> autograd_;
};

}  // namespace strata
