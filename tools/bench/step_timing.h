// What the training-step benchmarks (gpt_bench, bert_bench, resnet_bench, cache_bench) share:
// the clock, the process peak RSS, a FLOP counter, the timed-steps loop with its "step i: loss L
// T ms" lines and the summary their RESULT lines report, and the per-phase op profile.
#pragma once

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "host_info.h"
#include "strata/core/profiler.h"
#include "strata/strata.h"

namespace strata::bench {

inline double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_maxrss) / 1024.0;
}

// The peak of all memory categories on `device`'s allocator, in MB (0 on the CPU, whose figure is the
// process's peak RSS).
inline double device_peak_mb(Device device) {
  return device.is_cpu() ? 0.0 : double(allocator_for(device).stats().snapshot().total_peak) / 1e6;
}

// Sums the FLOPs of every op, and of the GEMM-like ones (matmul, linear, fused attention).
class FlopCounter final : public OpObserver {
 public:
  void on_op(const OpRecord& r) override {
    total += r.cost.flops;
    const std::string op = r.op;
    if (op.find("matmul") != std::string::npos || op.find("linear") != std::string::npos ||
        op.find("attention") != std::string::npos)
      gemm += r.cost.flops;
  }
  double total = 0, gemm = 0;
};

// One training step: zero_grad, loss_of() (forward and loss), backward, the optimizer's step;
// returns the loss (item() waits for the device).
template <class Loss>
double train_step(optim::Optimizer& opt, Loss&& loss_of) {
  opt.zero_grad(/*set_to_none=*/true);
  Tensor loss = loss_of();
  loss.backward();
  opt.step();
  return loss.item();
}

// Runs `steps` timed calls of `step` (which returns the loss), printing a line for each; returns
// the seconds of each and leaves the last loss in *loss.
template <class Step>
std::vector<double> time_steps(int steps, Step step, double* loss) {
  std::vector<double> times;
  for (int i = 0; i < steps; ++i) {
    const double t0 = now_s();
    *loss = step();
    times.push_back(now_s() - t0);
    std::printf("step %d: loss %.4f %.1f ms\n", i, *loss, times.back() * 1e3);
    std::fflush(stdout);
  }
  return times;
}

// What a RESULT line reports of the timed steps: the fastest, the median (the mean of the middle
// two for an even count) and every step's time, in ms, as a JSON list's contents.
struct StepTimes {
  double min_ms = 0, median_ms = 0;
  std::string times_ms;
};

inline StepTimes summarize(const std::vector<double>& times) {
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  const double med = sorted.size() % 2 ? sorted[sorted.size() / 2]
                                       : 0.5 * (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]);
  StepTimes s{sorted.front() * 1e3, med * 1e3, ""};
  for (double t : times) s.times_ms += (s.times_ms.empty() ? "" : ", ") + std::to_string(t * 1e3);
  return s;
}

// `n` profiled steps, each in the phases zero_grad (unless `zero_grad_phase` is false: then it
// counts as forward), forward (+ loss), backward and optimizer; then prints the table and, unless
// `trace` is empty, writes the chrome trace there. On a device other than the CPU every op waits
// for the device (Profiler::wait_for): the times are device times, the step serialized.
template <class Loss>
void profile_steps(int n, optim::Optimizer& opt, Loss loss_of, const std::string& trace,
                   bool zero_grad_phase = true, Device device = kCPU) {
  Profiler prof;
  prof.wait_for(device);
  OpObserverGuard g(&prof);
  for (int i = 0; i < n; ++i) {
    prof.phase(zero_grad_phase ? "zero_grad" : "forward");
    opt.zero_grad(/*set_to_none=*/true);
    if (zero_grad_phase) prof.phase("forward");
    Tensor l = loss_of();
    prof.phase("backward");
    l.backward();
    prof.phase("optimizer");
    opt.step();
    backend_for(device).synchronize(device.index);
    prof.end_phase();
    prof.step_done();
  }
  std::fputs(prof.table().c_str(), stdout);
  if (trace.empty()) return;
  prof.write_chrome_trace(trace);
  std::printf("chrome trace: %s\n", trace.c_str());
}

}  // namespace strata::bench
