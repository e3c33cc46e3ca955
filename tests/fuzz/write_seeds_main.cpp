// strata_fuzz_seeds DIR: writes the fuzz targets' seed corpus (small valid inputs) under DIR.
// The corpus in tests/fuzz/corpus is this program's output, committed: regenerate it with
//   build/tests/strata_fuzz_seeds tests/fuzz/corpus
#include <cstdio>
#include <exception>

#include "tests/fuzz/fuzz_targets.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: strata_fuzz_seeds DIR\n");
    return 2;
  }
  try {
    strata::fuzz::write_seeds(argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata_fuzz_seeds: %s\n", e.what());
    return 1;
  }
  return 0;
}
