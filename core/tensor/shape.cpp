#include "strata/core/shape.h"

#include "strata/core/error.h"

namespace strata {

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t s : shape)
    STRATA_CHECK(!__builtin_mul_overflow(n, s, &n), ShapeError, "shape ", shape_str(shape),
                 " has more elements than a 64-bit count holds");
  return n;
}

size_t shape_nbytes(const Shape& shape, size_t element_size, const char* what) {
  int64_t n = 1;
  for (int64_t s : shape) {
    STRATA_CHECK(s >= 0, ShapeError, what, ": negative size in ", shape_str(shape));
    STRATA_CHECK(!__builtin_mul_overflow(n, s, &n), ShapeError, what, ": shape ", shape_str(shape),
                 " has more elements than a 64-bit count holds");
  }
  int64_t bytes = 0;
  STRATA_CHECK(!__builtin_mul_overflow(n, int64_t(element_size), &bytes), ShapeError, what, ": ",
               shape_str(shape), " of ", element_size,
               "-byte elements needs more bytes than a 64-bit size holds");
  return size_t(bytes);
}

Shape contiguous_strides(const Shape& shape) {
  Shape st(shape.size());
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    st[i] = acc;
    acc *= std::max<int64_t>(shape[i], 1);
  }
  return st;
}

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  int64_t n = std::max<int64_t>(ndim, 1);
  STRATA_CHECK(dim >= -n && dim < n, IndexError, op, ": dim ", dim, " out of range for a ",
               ndim, "-d tensor");
  return dim < 0 ? dim + n : dim;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    STRATA_CHECK(da == db || da == 1 || db == 1, ShapeError, op, ": shapes ", shape_str(a),
                 " and ", shape_str(b), " cannot be broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace strata
