// Profiler: wall time per op kind and phase (forward ops, backward nodes, optimizer, ...) and a
// chrome-trace JSON (chrome://tracing, Perfetto), built on the OpObserver hook.
//
//   Profiler prof;
//   {
//     OpObserverGuard g(&prof);
//     prof.phase("forward");   Tensor loss = model.loss(x, y);
//     prof.phase("backward");  loss.backward();
//     prof.phase("optimizer"); opt.step();
//     prof.end_phase();
//   }
//   std::puts(prof.table().c_str());
//   prof.write_chrome_trace("trace.json");
//
// CPU kernels run synchronously on the calling thread, so an op's time is the wall time from
// the previous event (previous op, node start, or phase start) to its report: it includes the
// op's dispatch and autograd bookkeeping. In backward each node (e.g. "MatmulBackward") is timed
// from its start to its end, and the time between nodes is the engine's ("autograd engine").
// Phases time everything, so work no op reports (the optimizer's update loops) still shows.
// On an asynchronous device (CUDA) a kernel's launch returns before it runs: wait_for(device)
// makes every event wait for that device first, so each op is charged the time its kernels took
// (the step runs serialized, without the overlap of launches and kernels).
// Single-threaded use: one Profiler observes the thread that installed it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "strata/core/device.h"
#include "strata/core/op_observer.h"

namespace strata {

class Profiler final : public OpObserver {
 public:
  struct Stat {
    int64_t calls = 0;
    double seconds = 0;
    double flops = 0;
    double bytes = 0;
  };

  Profiler();
  // Every later event first waits for `device`'s queued work (nothing for the CPU).
  void wait_for(Device device) { wait_for_ = device; }
  void on_op(const OpRecord& record) override;
  void on_node_begin(const std::string& node) override;
  void on_node_end() override;

  // Ends the current phase (if any) and starts `name`; ops are attributed to it.
  void phase(const std::string& name);
  void end_phase();
  // Counts one profiled step (the table reports per-step averages).
  void step_done() { ++steps_; }
  void reset();

  // Rows (phase, kind) -> stats; "*" kinds hold phase totals.
  const std::map<std::pair<std::string, std::string>, Stat>& stats() const { return stats_; }
  // Per-step table: each phase's total, then its op kinds by time (ms/step, share, calls/step,
  // GFLOP/s); at most `top` kinds per phase.
  std::string table(int top = 25) const;
  // Chrome trace format ("X" events: phases on track 0, ops/nodes on 1, ops inside nodes on 2).
  void write_chrome_trace(const std::string& path) const;

 private:
  using Clock = std::chrono::steady_clock;
  double now_us() const;
  void settle() const;  // waits for wait_for_'s device
  void add(const std::string& phase, const std::string& kind, double seconds, double flops, double bytes);
  void event(const std::string& name, int track, double ts_us, double dur_us);

  struct Event {
    std::string name;
    int track;
    double ts_us, dur_us;
  };
  Clock::time_point t0_;
  std::map<std::pair<std::string, std::string>, Stat> stats_;
  std::vector<Event> events_;
  std::string phase_;
  double phase_start_us_ = 0;
  double last_us_ = 0;  // previous event's end
  // Current backward node.
  bool in_node_ = false;
  std::string node_;
  double node_start_us_ = 0, node_flops_ = 0, node_bytes_ = 0;
  int64_t steps_ = 0;
  Device wait_for_ = kCPU;
  static constexpr size_t kMaxEvents = 2'000'000;
};

}  // namespace strata
