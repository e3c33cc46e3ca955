// Runs one body per rank of an in-process group, each on its own thread, and rethrows the
// first failure (gtest assertions inside the body are reported as usual).
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "strata/dist/process_group.h"

namespace strata::dist::testing {

inline void run_ranks(int world, const std::function<void(int rank, std::shared_ptr<ProcessGroup> pg)>& body,
                      ProcessGroupOptions options = {}) {
  auto groups = make_local_group(world, options);
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      try {
        body(r, groups[size_t(r)]);
      } catch (...) {
        errors[size_t(r)] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace strata::dist::testing
