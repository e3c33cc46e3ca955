// Test support for the image data tests: a temporary folder per test, raw file bytes, and the
// message of the strata::Error a call throws.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "strata/core/error.h"
#include "support/error_of.h"
#include "support/loader_files.h"

namespace strata::test {

// A temporary folder per test (<tmp>/strata_test_<pid>_<suite>_<test>), removed when it ends.
using TempImageDir = strata::testing::TempDir;

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), {});
}

inline void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

// What f() throws as a strata::Error (a test failure when it returns).
template <class F>
std::string error_message(F&& f) {
  return strata::testing::error_of<Error>(f);
}

}  // namespace strata::test
