// What the loader tests share: TempDir (an empty scratch folder per running test), read_file, write_file,
// and io_error (the message of the IoError a call throws).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>

#include "strata/core/error.h"
#include "support/error_of.h"

namespace strata::testing {

// <tmp>/strata_test_<pid>_<suite>_<test>, created empty for the running test and removed after it.
struct TempDir {
  TempDir() {
    const auto* t = ::testing::UnitTest::GetInstance()->current_test_info();
    path = (std::filesystem::temp_directory_path() /
            ("strata_test_" + std::to_string(::getpid()) + "_" + t->test_suite_name() + "_" + t->name()))
               .string();
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return path + "/" + name; }
  std::string operator/(const std::string& name) const { return file(name); }
  std::string path;
};

// The bytes of the file at `path` ("" when it cannot be read).
inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Writes `bytes` to `path`, creating its folder.
inline void write_file(const std::string& path, const std::string& bytes) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

// What f() throws as an IoError, or "" (and a failure) when it returns or throws something else.
template <class F>
std::string io_error(F&& f) {
  return error_of<IoError>(std::forward<F>(f));
}

}  // namespace strata::testing
