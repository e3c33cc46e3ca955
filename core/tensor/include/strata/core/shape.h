// Shape and stride helpers: contiguous strides, numel, dim wrapping, broadcasting.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata {

using Shape = std::vector<int64_t>;

int64_t shape_numel(const Shape& shape);
Shape contiguous_strides(const Shape& shape);
std::string shape_str(const Shape& shape);
// Maps a possibly negative dim into [0, ndim); throws IndexError naming `op` when out of range.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);
// NumPy broadcasting of two shapes; throws ShapeError naming `op` on mismatch.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

}  // namespace strata
