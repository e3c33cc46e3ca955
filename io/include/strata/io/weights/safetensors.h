// The safetensors format (Hugging Face): an 8-byte little-endian header length N, N bytes of
// JSON {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
// "__metadata__": {"key": "value"}}, then the raw little-endian tensor bytes (offsets are
// relative to the end of the header).
#pragma once

#include <map>
#include <string>

#include "strata/nn/module.h"

namespace strata::io {

struct Safetensors {
  nn::StateDict tensors;  // in file (data offset) order; contiguous CPU tensors
  std::map<std::string, std::string> metadata;
};

// Reads every tensor. Dtypes F64, F32, F16, BF16, I64, I32, U8 and BOOL map to Strata's;
// others are an IoError naming the tensor. Validates the header (length, JSON, fields, shape
// against data_offsets, offsets inside the file, no overlaps) and throws IoError naming the
// file, the tensor and the offsets at fault.
Safetensors read_safetensors(const std::string& path);

// Writes `tensors` (any device and layout; copied to contiguous CPU bytes) in dict order with
// an 8-byte aligned header, atomically (temporary file, fsync, rename).
void write_safetensors(const std::string& path, const nn::StateDict& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace strata::io
