#include "strata/core/profiler.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "strata/core/backend.h"
#include "strata/core/error.h"
#include "strata/core/output_path.h"

namespace strata {

Profiler::Profiler() : t0_(Clock::now()) {}

void Profiler::settle() const {
  if (!wait_for_.is_cpu()) backend_for(wait_for_).synchronize(wait_for_.index);
}

double Profiler::now_us() const { return std::chrono::duration<double, std::micro>(Clock::now() - t0_).count(); }

void Profiler::add(const std::string& phase, const std::string& kind, double seconds, double flops, double bytes) {
  Stat& s = stats_[{phase, kind}];
  s.calls += 1;
  s.seconds += seconds;
  s.flops += flops;
  s.bytes += bytes;
}

void Profiler::event(const std::string& name, int track, double ts_us, double dur_us) {
  if (events_.size() < kMaxEvents) events_.push_back({name, track, ts_us, dur_us});
}

void Profiler::on_op(const OpRecord& r) {
  settle();
  const double t = now_us();
  const double dur = t - last_us_;
  const double bytes = r.cost.bytes_read + r.cost.bytes_written;
  if (in_node_) {
    node_flops_ += r.cost.flops;
    node_bytes_ += bytes;
    event(r.op, 2, last_us_, dur);
  } else {
    add(phase_, r.op, dur * 1e-6, r.cost.flops, bytes);
    event(r.op, 1, last_us_, dur);
  }
  last_us_ = t;
}

void Profiler::on_node_begin(const std::string& node) {
  settle();
  const double t = now_us();
  if (!in_node_ && t > last_us_) add(phase_, "autograd engine", (t - last_us_) * 1e-6, 0, 0);
  in_node_ = true;
  node_ = node;
  node_start_us_ = t;
  node_flops_ = node_bytes_ = 0;
  last_us_ = t;
}

void Profiler::on_node_end() {
  settle();
  const double t = now_us();
  add(phase_, node_, (t - node_start_us_) * 1e-6, node_flops_, node_bytes_);
  event(node_, 1, node_start_us_, t - node_start_us_);
  in_node_ = false;
  last_us_ = t;
}

void Profiler::phase(const std::string& name) {
  end_phase();  // waits for the device
  phase_ = name;
  phase_start_us_ = last_us_ = now_us();
}

void Profiler::end_phase() {
  settle();
  if (phase_.empty()) return;
  const double t = now_us();
  // Time after the phase's last op (e.g. the optimizer's update loops) is the phase's own.
  if (t > last_us_ && !in_node_) add(phase_, "(no op reported)", (t - last_us_) * 1e-6, 0, 0);
  add(phase_, "*", (t - phase_start_us_) * 1e-6, 0, 0);
  event(phase_, 0, phase_start_us_, t - phase_start_us_);
  phase_.clear();
  last_us_ = t;
}

void Profiler::reset() {
  stats_.clear();
  events_.clear();
  phase_.clear();
  in_node_ = false;
  steps_ = 0;
  t0_ = Clock::now();
  last_us_ = 0;
}

std::string Profiler::table(int top) const {
  const double steps = double(std::max<int64_t>(steps_, 1));
  double total = 0;
  std::vector<std::string> phases;
  for (const auto& [key, s] : stats_)
    if (key.second == "*") {
      total += s.seconds;
      phases.push_back(key.first);
    }
  // Phases in order of time.
  std::sort(phases.begin(), phases.end(), [&](const std::string& a, const std::string& b) {
    return stats_.at({a, "*"}).seconds > stats_.at({b, "*"}).seconds;
  });
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "profile: %.1f ms/step over %ld steps (wall time from the previous event; GFLOP/s "
                "from the ops' cost)\n", total / steps * 1e3, long(steps_));
  out += line;
  std::snprintf(line, sizeof line, "%-10s %-40s %10s %6s %8s %9s\n", "phase", "op / node", "ms/step", "share",
                "calls", "GFLOP/s");
  out += line;
  for (const std::string& ph : phases) {
    const Stat& p = stats_.at({ph, "*"});
    std::snprintf(line, sizeof line, "%-10s %-40s %10.1f %5.1f%% %8s %9s\n", ph.c_str(), "(phase total)",
                  p.seconds / steps * 1e3, total > 0 ? 100.0 * p.seconds / total : 0.0, "", "");
    out += line;
    std::vector<std::pair<std::string, Stat>> rows;
    for (const auto& [key, s] : stats_)
      if (key.first == ph && key.second != "*") rows.emplace_back(key.second, s);
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
    int shown = 0;
    double rest = 0;
    for (const auto& [kind, s] : rows) {
      if (shown++ >= top) {
        rest += s.seconds;
        continue;
      }
      char gf[32] = "";
      if (s.flops > 0 && s.seconds > 0) std::snprintf(gf, sizeof gf, "%.1f", s.flops / s.seconds * 1e-9);
      std::snprintf(line, sizeof line, "%-10s   %-38s %10.1f %5.1f%% %8.1f %9s\n", "", kind.c_str(),
                    s.seconds / steps * 1e3, total > 0 ? 100.0 * s.seconds / total : 0.0, double(s.calls) / steps, gf);
      out += line;
    }
    if (rest > 0) {
      std::snprintf(line, sizeof line, "%-10s   %-38s %10.1f %5.1f%%\n", "", "(others)", rest / steps * 1e3,
                    100.0 * rest / total);
      out += line;
    }
  }
  return out;
}

namespace {
std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o.push_back('\\');
    if (static_cast<unsigned char>(c) >= 0x20) o.push_back(c);
  }
  return o;
}
}  // namespace

void Profiler::write_chrome_trace(const std::string& path) const {
  std::ostringstream f;
  f << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  const char* tracks[] = {"phases", "ops / backward nodes", "ops inside backward nodes"};
  for (int t = 0; t < 3; ++t)
    f << "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 0, \"tid\": " << t << ", \"args\": {\"name\": \""
      << tracks[t] << "\"}},\n";
  char buf[128];
  for (size_t i = 0; i < events_.size(); ++i) {
    const Event& e = events_[i];
    std::snprintf(buf, sizeof buf, "\"ph\": \"X\", \"pid\": 0, \"tid\": %d, \"ts\": %.3f, \"dur\": %.3f}", e.track,
                  e.ts_us, e.dur_us);
    f << "{\"name\": \"" << json_escape(e.name) << "\", " << buf << (i + 1 < events_.size() ? ",\n" : "\n");
  }
  f << "]}\n";
  write_file_atomically(path, f.str(), "Profiler: chrome trace");
}

}  // namespace strata
