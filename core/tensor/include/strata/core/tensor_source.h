// TensorSource: a tensor's contiguous elements produced a piece at a time, for data that is not
// held in memory whole (an optimizer's state in a spill file, streamed into a checkpoint).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "strata/core/dtype.h"
#include "strata/core/shape.h"

namespace strata {

struct TensorSource {
  DType dtype = DType::f32;
  Shape shape;
  int64_t piece = 0;  // elements per fill() call (the last one may be shorter)
  // Writes elements [begin, end) of the tensor's contiguous data to `dst`.
  std::function<void(int64_t begin, int64_t end, void* dst)> fill;
};

// Sources by name, standing in for the undefined tensors of a state dict under the same names.
using TensorSources = std::map<std::string, TensorSource>;

}  // namespace strata
