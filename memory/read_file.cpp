#include "memory/read_file.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "strata/core/error.h"

namespace strata::memory {

std::string read_whole_file(const std::string& path, const char* who) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  STRATA_CHECK(std::filesystem::exists(status), IoError, who, ": '", path, "' does not exist");
  STRATA_CHECK(std::filesystem::is_regular_file(status), IoError, who, ": '", path, "' is ",
               std::filesystem::is_directory(status) ? "a directory" : "not a regular file", ", not a file");
  std::ifstream f(path, std::ios::binary);
  STRATA_CHECK(bool(f), IoError, who, ": cannot open '", path, "'");
  std::stringstream ss;
  ss << f.rdbuf();
  STRATA_CHECK(!f.bad(), IoError, who, ": reading '", path, "' failed");
  return ss.str();
}

}  // namespace strata::memory
