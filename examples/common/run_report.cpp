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

}  // namespace strata::examples
