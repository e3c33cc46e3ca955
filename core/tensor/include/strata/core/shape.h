// Shape and stride helpers: contiguous strides, numel, dim wrapping, broadcasting.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace strata {

using Shape = std::vector<int64_t>;

// The product of the sizes; ShapeError naming the shape when it does not fit in an int64.
int64_t shape_numel(const Shape& shape);
// The bytes of a contiguous tensor of `shape`: ShapeError naming `what` and the shape for a
// negative size or a count that does not fit in an int64 (sizes from a file or a flag can be
// anything; a wrapped product would allocate a few bytes and be written past).
size_t shape_nbytes(const Shape& shape, size_t element_size, const char* what);
Shape contiguous_strides(const Shape& shape);
std::string shape_str(const Shape& shape);
// Maps a possibly negative dim into [0, ndim); throws IndexError naming `op` when out of range.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);
// NumPy broadcasting of two shapes; throws ShapeError naming `op` on mismatch.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

}  // namespace strata
