// What the trainers print about a run: progress bar, peak RSS, --profile's table.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "strata/core/memory_stats.h"
#include "strata/core/profiler.h"

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

}  // namespace strata::examples
