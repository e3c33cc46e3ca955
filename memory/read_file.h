// read_whole_file: a plan's, trace's or hardware profile's bytes, with errors that say what is
// wrong with the path (missing, a directory, unreadable). Private to memory/.
#pragma once

#include <string>

namespace strata::memory {

// Throws IoError naming `who` (the calling function) and `path`.
std::string read_whole_file(const std::string& path, const char* who);

}  // namespace strata::memory
