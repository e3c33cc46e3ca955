// Spill-file test support: a per-process temporary directory, and STRATA_SKIP_WITHOUT_SPILL_ROOM(),
// which skips a test that writes spill files when the temporary directory's file system has less
// than 256 MB free (the tests' arenas are MB-sized).
#pragma once

#include <gtest/gtest.h>
#include <sys/statvfs.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include <unistd.h>

namespace strata::test {

inline bool spill_room(uint64_t bytes = uint64_t(256) << 20) {
  struct statvfs v {};
  if (::statvfs(std::filesystem::temp_directory_path().c_str(), &v) != 0) return true;
  return uint64_t(v.f_bavail) * v.f_frsize >= bytes;
}

// <tmp>/strata_<tag>_<pid>, created.
inline std::string spill_dir(const std::string& tag) {
  auto d = std::filesystem::temp_directory_path() / ("strata_" + tag + "_" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return d.string();
}

}  // namespace strata::test

#define STRATA_SKIP_WITHOUT_SPILL_ROOM()                                                       \
  if (!::strata::test::spill_room())                                                           \
  GTEST_SKIP() << "less than 256 MB free in " << std::filesystem::temp_directory_path() \
               << ": the spill-file tests need room"
