// with_threads: runs a function under a given OpenMP thread count, for the tests that check a
// result does not depend on it.
#pragma once

#include <omp.h>

#include <utility>

namespace strata::testing {

// Runs f with `threads` OpenMP threads, then restores the previous count; returns f's result.
template <class F>
auto with_threads(int threads, F&& f) {
  const int before = omp_get_max_threads();
  omp_set_num_threads(threads);
  auto result = std::forward<F>(f)();
  omp_set_num_threads(before);
  return result;
}

}  // namespace strata::testing
