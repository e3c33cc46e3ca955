// write_file_atomically: write to a temporary file, fsync, rename over the target.
#pragma once

#include <cstddef>
#include <string>

namespace strata::io {

// Never leaves a partial file at `path`: on any failure the old file (if any) is intact and
// an IoError names the file and the failing call (e.g. a full disk).
void write_file_atomically(const std::string& path, const void* data, size_t bytes);

}  // namespace strata::io
