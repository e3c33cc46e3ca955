// starts_with_llmc_magic: whether a weights file is llm.c's model format (its first word is llm.c's magic).
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>

#include "strata/io/weights/gpt_weights.h"

namespace strata::io {

inline bool starts_with_llmc_magic(const std::filesystem::path& file) {
  int32_t magic = 0;
  std::ifstream in(file, std::ios::binary);
  in.read(reinterpret_cast<char*>(&magic), sizeof(magic));
  return in.gcount() == std::streamsize(sizeof(magic)) && magic == kLlmcModelMagic;
}

}  // namespace strata::io
