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

namespace strata::test {

// <tmp>/strata_img_<pid>_<suite>_<test>, created empty for the running test and removed with
// everything in it when the test ends.
struct TempImageDir {
  TempImageDir() {
    const auto* t = ::testing::UnitTest::GetInstance()->current_test_info();
    path = (std::filesystem::temp_directory_path() /
            ("strata_img_" + std::to_string(::getpid()) + "_" + t->test_suite_name() + "_" + t->name()))
               .string();
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempImageDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempImageDir(const TempImageDir&) = delete;
  TempImageDir& operator=(const TempImageDir&) = delete;
  std::string path;
};

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
