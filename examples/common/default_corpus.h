// The built-in training corpus: the license texts every Debian machine has.
#pragma once

#include <string>

namespace strata::examples {

inline constexpr const char* kDefaultCorpusDir = "/usr/share/common-licenses";

// The regular files (not symlinks) of kDefaultCorpusDir, sorted by name and concatenated.
// Throws IoError when the directory is missing or empty.
std::string read_default_corpus();

}  // namespace strata::examples
