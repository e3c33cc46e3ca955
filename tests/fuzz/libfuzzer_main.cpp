// One fuzz target under libFuzzer: built per target with -DSTRATA_FUZZ_TARGET="name" and
// -fsanitize=fuzzer,address,undefined (cmake -DSTRATA_BUILD_FUZZERS=ON with clang), run by hand:
//   build/tests/fuzz_checkpoint -max_total_time=600 tests/fuzz/corpus/checkpoint
// A strata::Error is the expected end of a bad input; anything else aborts, and libFuzzer keeps
// the input that did it.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "strata/core/error.h"
#include "tests/fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const strata::fuzz::Target& t = strata::fuzz::target(STRATA_FUZZ_TARGET);
  try {
    t.run(data, size);
  } catch (const strata::Error&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: a non-strata exception: %s\n", t.name, e.what());
    std::abort();
  }
  return 0;
}
