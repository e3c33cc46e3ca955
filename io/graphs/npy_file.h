// read_npy: one NumPy .npy array (format versions 1-3, C order, little-endian i4, i8, f2, f4,
// f8, u1 or b1) as a CPU tensor, the binary variant of OGB's raw files.
#pragma once

#include <cstdint>
#include <string>

#include "strata/core/tensor.h"

namespace strata::io {

// IoError naming the file and the byte offset for a bad magic or header, an unsupported dtype or
// Fortran order, or data of another size than the shape needs (checked before allocating).
// `data_offset`, when given, receives the byte offset of the first element.
Tensor read_npy(const std::string& path, uint64_t* data_offset = nullptr);

// Where a .npy file's array lies, for readers that map or page through the data instead of
// loading it: read_npy's checks, the data left unread.
struct NpyLayout {
  DType dtype = DType::f32;
  Shape shape;
  uint64_t data_offset = 0;  // byte offset of the first element
  uint64_t data_bytes = 0;   // exactly what the shape needs, up to the end of the file
};
NpyLayout read_npy_layout(const std::string& path);

}  // namespace strata::io
