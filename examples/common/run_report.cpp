#include "examples/common/run_report.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>

namespace strata::examples {

double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_maxrss) / 1024.0;
}

std::string progress_bar(double frac) {
  const int n = int(std::clamp(frac, 0.0, 1.0) * 20);
  std::string s = "[";
  s.append(size_t(n), '#').append(size_t(20 - n), '.').push_back(']');
  return s;
}

std::string measured_or_dash(const std::optional<double>& v) {
  if (!v) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", *v);
  return buf;
}

ProfiledStep::ProfiledStep(Profiler& prof, bool on) : prof_(prof) {
  if (on) observing_.emplace(&prof);
}

void ProfiledStep::phase(const char* name) {
  if (observing_) prof_.phase(name);
}

void ProfiledStep::step_done() {
  if (!observing_) return;
  prof_.end_phase();
  prof_.step_done();
}

void report_profile(const Profiler& prof, const std::string& out_dir) {
  std::fputs(prof.table().c_str(), stdout);
  prof.write_chrome_trace(out_dir + "/profile_trace.json");
  std::printf("chrome trace: %s/profile_trace.json\n", out_dir.c_str());
}

CacheReport::CacheReport(const memory::CacheSettings& settings, bool print)
    : settings_(settings),
      cache_(settings),
      print_(print),
      report_(settings.policy != "keep" || settings.memory_budget > 0) {
  // Asked-for behaviour that cannot happen is an error, not a warning and a run without it: every
  // block's activations sent to an NVMe tier that is not there.
  if (settings.policy == "nvme") {
    const memory::CacheStats st = cache_.cache()->stats();
    STRATA_CHECK(!st.io_engine.empty(), IoError, "--cache-policy nvme: no NVMe tier to write to (",
                 settings.spill_dir.empty() ? std::string("no --spill-dir given")
                 : st.warnings.empty()      ? "spill directory '" + settings.spill_dir + "' unusable"
                                            : st.warnings.front(),
                 ")");
  }
  if (print_ && report_) std::printf("  %s\n", cache_.describe().c_str());
}

void CacheReport::end_step(const MemorySnapshot& m) {
  const std::string planned = cache_.end_step(m);
  if (print_ && !planned.empty()) std::printf("  plan: %s\n", planned.c_str());
}

void CacheReport::log_step() const {
  if (print_ && report_) std::printf("      %s\n", cache_.stats_line().c_str());
}

void CacheReport::finish() const {
  if (print_ && cache_.budget_exceeded())
    std::printf("warning: a step's peak went above --memory-budget %.1f MB (the plan's estimate was short)\n",
                double(settings_.memory_budget) / 1e6);
}

}  // namespace strata::examples
