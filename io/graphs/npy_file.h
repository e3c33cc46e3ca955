// read_npy: one NumPy .npy array (format versions 1-3, C order, little-endian i4, i8, f4, f8,
// u1 or b1) as a CPU tensor, the binary variant of OGB's raw files.
#pragma once

#include <cstdint>
#include <string>

#include "strata/core/tensor.h"

namespace strata::io {

// IoError naming the file and the byte offset for a bad magic or header, an unsupported dtype or
// Fortran order, or data of another size than the shape needs (checked before allocating).
// `data_offset`, when given, receives the byte offset of the first element.
Tensor read_npy(const std::string& path, uint64_t* data_offset = nullptr);

}  // namespace strata::io
