#include "examples/common/trainer_main.h"

#include <cstdio>

#include "examples/common/trainer_device.h"
#include "strata/core/error.h"

namespace strata::examples {

int report_trainer_failure(const char* program, const std::exception& e, const TrainerRun& run) {
  if (run.group && run.group->size() > 1) {
    std::fprintf(stderr, "%s: rank %d of %d: %s\n", program, run.group->rank(), run.group->size(), e.what());
    std::fflush(stderr);
    run.group->abort(1);
  }
  const bool oom = dynamic_cast<const OutOfMemoryError*>(&e) != nullptr;
  std::fprintf(stderr, "%s: %s\n", program,
               oom ? out_of_memory_advice(e.what(), run.running_step).c_str() : e.what());
  return 1;
}

}  // namespace strata::examples
