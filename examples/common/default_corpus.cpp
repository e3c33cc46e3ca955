#include "examples/common/default_corpus.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "strata/core/error.h"

namespace strata::examples {

std::string read_default_corpus() {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(kDefaultCorpusDir, ec))
    if (e.is_regular_file() && !e.is_symlink()) files.push_back(e.path());
  STRATA_CHECK(!ec && !files.empty(), IoError, "the default corpus '", kDefaultCorpusDir,
               "' is missing or empty; pass --text FILE or --train-data GLOB");
  std::sort(files.begin(), files.end());
  std::string text;
  for (const auto& p : files) {
    std::ifstream in(p, std::ios::binary);
    text.append(std::istreambuf_iterator<char>(in), {});
    text.push_back('\n');
  }
  return text;
}

}  // namespace strata::examples
