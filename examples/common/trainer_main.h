// run_trainer_main: every trainer's main(): parse, train, and one error report and exit code.
#pragma once

#include <cstdint>
#include <exception>
#include <memory>

#include "strata/dist/process_group.h"

namespace strata::examples {

// What a failure report needs from the run it ends: the training step under way, and this rank's
// process group under mpirun (to name the rank and end the job).
struct TrainerRun {
  int64_t running_step = 0;  // 0: no step begun yet
  std::shared_ptr<dist::ProcessGroup> group;
};

// Reports `e` as one line "<program>: <message>" on stderr, an out-of-memory error with the flags
// that fit the step under the device (naming the step); under mpirun with more than one rank, the
// rank is named first and every rank ended (MPI_Abort) instead of leaving the others waiting in
// their next collective. Returns the exit code, 1.
int report_trainer_failure(const char* program, const std::exception& e, const TrainerRun& run);

// A trainer's main(): `parse(argc, argv, &options)` (false: --help or --version printed, exit 0),
// then `train(options, run)`, whose return is the exit code. Anything thrown is one line and exit 1
// (report_trainer_failure); never a signal or an unhandled exception.
template <class Options>
int run_trainer_main(const char* program, int argc, char** argv, bool (*parse)(int, char**, Options*),
                     int (*train)(Options&, TrainerRun&)) {
  TrainerRun run;
  try {
    Options options;
    if (!parse(argc, argv, &options)) return 0;
    return train(options, run);
  } catch (const std::exception& e) {  // strata::Error, and anything else
    return report_trainer_failure(program, e, run);
  }
}

}  // namespace strata::examples
