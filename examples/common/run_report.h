// What the trainers print about a run: progress bar, peak RSS, --profile's table, the tensor cache's lines.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "strata/core/memory_stats.h"
#include "strata/core/profiler.h"
#include "strata/memory/trainer_cache.h"

namespace strata::examples {

// Peak resident set of this process so far, in MB (getrusage).
double peak_rss_mb();

// "[#####...............]": `frac` of 20 cells filled (clamped to [0, 1]).
std::string progress_bar(double frac);

// `v` with four decimals, or "-" while it has not been measured (a step line's held-out loss
// before the first evaluation, or in a run that never evaluates). A measured NaN prints "nan".
std::string measured_or_dash(const std::optional<double>& v);

// One training step under --profile: while `on`, every op of the step goes into `prof`, under
// the phase it runs in (forward, backward, optimizer); the table and a chrome trace come at the
// end (report_profile). One per step, profiling the steps after the first two:
//   ProfiledStep p(prof, profile && steps_run >= 2);  p.phase("forward"); ...  p.step_done();
class ProfiledStep {
 public:
  ProfiledStep(Profiler& prof, bool on);
  void phase(const char* name);
  void step_done();

 private:
  Profiler& prof_;
  std::optional<OpObserverGuard> observing_;
};

// Prints `prof`'s table and writes <out_dir>/profile_trace.json.
void report_profile(const Profiler& prof, const std::string& out_dir);

// A trainer's tensor cache and the lines it prints (only where `print`: rank 0): what it does,
// at the start, unless it keeps everything; the plan made after a budget's planning step; its
// counters on each logged step; a warning at the end when a step went above the budget.
class CacheReport {
 public:
  CacheReport(const memory::CacheSettings& settings, bool print);
  // The SavePolicy to install around a step's forward and backward.
  const std::shared_ptr<memory::TensorCache>& tensor_cache() const { return cache_.cache(); }
  void begin_step() { cache_.begin_step(); }
  // Ends the step (TrainerCache::end_step) and prints the plan when it made one.
  void end_step(const MemorySnapshot& m);
  // The counters of the last step, under a logged step's line.
  void log_step() const;
  // The warning when a step's peak went above --memory-budget.
  void finish() const;

 private:
  memory::CacheSettings settings_;
  memory::TrainerCache cache_;
  bool print_, report_;
};

}  // namespace strata::examples
