// plan_bench: the planner's predictions against this machine. Traces one GPT training step
// (forward + backward) on the CPU, plans it for a budget with a calibrated hardware profile, then
// runs the plan and every baseline policy for real through the tensor cache (rounds interleaved,
// a shared machine's speed drifts; each round runs one step of each policy, in reverse order every other
// round, so a steady drift cancels in the pairs) and prints predicted vs measured step time and
// activation peak, and each policy paired with the plan round by round. The plan is made from
// the traced steps before the rounds; each round also traces one step, and the predictions are
// the simulator on the median of all of them (the machine's speed during the rounds), beside the
// predictions made before them.
//
//   strata_plan_bench --hardware this-machine.textproto --preset gpt2 --batch 4 --seq 256 --budget 33%
//   --spill-dir /tmp
// With --device cuda or sim the model, its batches and the cache's device tier are on that device
// (the profile should be strata_calibrate --device's for it), and the peaks are its allocator's.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "strata/memory/planner/planner.h"
#include "strata/memory/planner/tracer.h"
#include "strata/models/gpt.h"
#include "strata/strata.h"

using namespace strata;
using namespace strata::memory;
using namespace strata::memory::planner;

namespace {

// One-sided sign test: the chance of at least `wins` wins in `n` fair coin flips.
double sign_test_p(int wins, int n) {
  double p = 0, c = 1;  // c = C(n, k)
  for (int k = 0; k <= n; ++k) {
    if (k >= wins) p += c;
    c = c * double(n - k) / double(k + 1);
  }
  return p / std::pow(2.0, n);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// One traced step is one sample of every op's time (a shared 2-core machine drifts 10-20% between steps): the
// plan works on the median of each op's time over several traced steps of the same graph.
StepTrace median_of(std::vector<StepTrace> traces) {
  StepTrace out = traces.front();
  for (const StepTrace& t : traces)
    STRATA_CHECK(t.ops.size() == out.ops.size() && t.tensors.size() == out.tensors.size(), ValueError,
                 "plan_bench: traced steps differ (", t.ops.size(), " against ", out.ops.size(), " ops)");
  for (size_t i = 0; i < out.ops.size(); ++i) {
    std::vector<double> s;
    for (const StepTrace& t : traces) s.push_back(t.ops[i].seconds);
    out.ops[i].seconds = median(s);
  }
  out.recompute_costs_from_ops();
  return out;
}

struct Run {
  const PolicyResult* policy;
  std::shared_ptr<TensorCache> cache;
  std::vector<double> seconds, stall, recompute;
  int64_t activation_peak = 0;
  uint64_t fallbacks = 0, forwarded = 0;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"strata_plan_bench: predicted vs measured for the planner's plan and the baseline policies"};
  std::string preset = "gpt2", hardware, budget_text = "33%", spill_dir = "/tmp";
  int64_t B = 4, T = 256, n_layer = 0;
  int rounds = 5, trace_steps = 3;
  bool all = false, per_round = false;
  std::vector<std::string> only;
  app.add_option("--preset", preset);
  app.add_option("--n-layer", n_layer, "override the preset's layer count");
  app.add_option("-b,--batch", B);
  app.add_option("-t,--seq", T);
  app.add_option("--hardware", hardware, "this machine's profile (strata_calibrate)")->required();
  app.add_option("--budget", budget_text, "activation budget: bytes or % of the keep-all activation peak");
  app.add_option("--spill-dir", spill_dir, "the NVMe tier's directory");
  std::string device_name = "cpu";
  app.add_option("--device", device_name, "cpu (default), cuda[:N] or sim[:N]");
  app.add_option("--rounds", rounds, "timed steps per policy (one per round, policies interleaved)");
  app.add_flag("--all", all, "also run the baselines that do not hold the budget");
  app.add_flag("--per-round", per_round, "print every timed step: policy, round, seconds, activation peak");
  app.add_option("--only", only, "run only these baselines beside the plan (e.g. swap,ssdtrain)")->delimiter(',');
  app.add_option("--trace-steps", trace_steps, "steps traced; the plan uses each op's median time")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  try {
    const HardwareProfile hw = load_hardware_profile(hardware);
    models::GPTConfig c = models::GPTConfig::preset(preset);
    if (n_layer > 0) c.n_layer = n_layer;
    c.block_size = std::max(c.block_size, T);
    const Device device = Device::parse(device_name);
    Allocator& alloc = allocator_for(device);
    const auto sync = [&] { backend_for(device).synchronize(device.index); };
    manual_seed(1337);
    models::GPT model(c);
    Tensor x = Tensor::empty({B, T}, DType::i64), y = Tensor::empty({B, T}, DType::i64);
    uint32_t lcg = 1;
    for (int64_t i = 0; i < B * T; ++i) {
      x.data<int64_t>()[i] = int64_t((lcg = lcg * 1664525u + 1013904223u) >> 8) % c.vocab_size;
      y.data<int64_t>()[i] = int64_t((lcg = lcg * 1664525u + 1013904223u) >> 8) % c.vocab_size;
    }
    model.to(device);
    x = x.to(device);
    y = y.to(device);
    auto clear_grads = [&] {
      for (auto& p : model.parameters()) p.set_grad(Tensor());
    };
    // Warm-up, then the traced steps.
    model.loss(x, y).backward();
    clear_grads();
    std::vector<StepTrace> traces;
    auto traced_step = [&] {
      auto tracer = std::make_shared<StepTracer>();
      {
        OpObserverGuard obs(tracer.get());
        autograd::SavePolicyGuard save(tracer);
        tracer->begin();
        model.loss(x, y).backward();
        sync();
      }
      traces.push_back(tracer->finish(preset + " B=" + std::to_string(B) + " T=" + std::to_string(T)));
      clear_grads();
    };
    for (int i = 0; i < trace_steps; ++i) traced_step();
    StepTrace trace = median_of(traces);
    PlannerOptions opt;
    const SimResult keep = simulate(trace, SimPlan::keep_all(trace), hw);
    uint64_t budget = budget_text.back() == '%'
                          ? uint64_t(double(keep.activation_peak) * std::stod(budget_text) / 100.0)
                          : parse_byte_size(budget_text, "--budget");
    PlannerResult r = plan_step(trace, hw, budget, opt);
    std::printf("plan_bench: %s, %zu ops, %zu saved tensors, %zu blocks; budget %.1f MB (%s of keep-all %.1f MB)\n%s\n"
                "planner time %.3f s\n",
                trace.model.c_str(), trace.ops.size(), trace.tensors.size(), trace.blocks.size(), double(budget) / 1e6,
                budget_text.c_str(), double(keep.activation_peak) / 1e6, r.explanation.c_str(), r.solve_seconds);

    uint64_t saved = 0;
    for (const auto& t : trace.tensors) saved += t.bytes;
    TensorCacheOptions co;
    co.device = device;
    co.min_bytes = 0;
    co.host_pool_bytes = saved + (uint64_t(64) << 20);
    co.spill_dir = spill_dir;
    co.spill_arena_bytes = saved + (uint64_t(64) << 20);
    // The cache holds the budget when stores lag: forward waits for them (counted as stall).
    co.activation_limit_bytes = budget;
    std::vector<Run> runs;
    auto add = [&](const PolicyResult& p, bool always) {
      if (!always && !only.empty() && std::find(only.begin(), only.end(), p.name) == only.end()) return;
      if (!p.fits && !all && !always && only.empty()) return;
      Plan plan = cache_plan_for(trace, p.plan);
      plan.solver = p.name;
      runs.push_back({&p, TensorCache::create(co, make_plan_policy(plan)), {}, {}, {}, 0, 0, 0});
    };
    add(r.plan, true);  // first: the others are compared with it
    for (const auto& b : r.baselines) add(b, false);
    for (int round = 0; round < rounds + 1; ++round) {  // round 0: warm-up per policy
      if (round > 0) traced_step();
      for (size_t k = 0; k < runs.size(); ++k) {
        Run& run = runs[round % 2 ? runs.size() - 1 - k : k];  // ABBA: a steady drift cancels in pairs
        alloc.stats().reset_peaks();
        auto t0 = std::chrono::steady_clock::now();
        {
          autograd::SavePolicyGuard guard(run.cache);
          run.cache->begin_step();
          model.loss(x, y).backward();
          sync();
        }
        CacheStats s = run.cache->end_step();
        const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const int64_t act = alloc.stats().snapshot().peak_of(MemoryCategory::SavedActivation);
        clear_grads();
        run.fallbacks += s.fallbacks;
        run.forwarded += s.forwarded;
        if (round == 0) continue;
        run.seconds.push_back(sec);
        run.stall.push_back(s.stall_seconds + s.store_wait_seconds);
        run.recompute.push_back(s.recompute_seconds);
        run.activation_peak = std::max(run.activation_peak, act);
        if (per_round)
          std::printf("round %2d %-14s %.3f s  act peak %.1f MB  stall %.3f s  store waits %lu, %.3f s\n", round,
                      run.policy->name.c_str(), sec, double(act) / 1e6, s.stall_seconds, (unsigned long)s.store_waits,
                      s.store_wait_seconds);
      }
    }
    // The simulator on the op times of the whole run (the traced steps before and during the rounds).
    const StepTrace run_trace = median_of(traces);
    std::vector<SimResult> predicted;
    for (const Run& run : runs) predicted.push_back(simulate(run_trace, run.policy->plan, hw));
    std::printf("\npredictions from the median of %zu traced steps (%d before the rounds, one per round): keep-all "
                "%.3f s (%.3f s from the %d before)\n",
                traces.size(), trace_steps, simulate(run_trace, SimPlan::keep_all(run_trace), hw).step_seconds,
                keep.step_seconds, trace_steps);
    // Paired against the plan round by round (the rounds interleave, so the VM's drift cancels):
    // the median ratio, and in how many rounds the plan was the faster of the two.
    std::printf("\n%-14s %-5s %10s %12s %12s %7s %9s %6s %7s %14s %14s %7s %15s %15s %9s %9s  %s\n", "policy", "fits",
                "pred@start", "pred step s", "meas step s", "err", "vs plan", "wins", "p", "pred act MB", "meas act MB", "err",
                "recomp s p/m", "stall s p/m", "fallbacks", "forwarded", "blocks");
    for (const Run& run : runs) {
      const SimResult& p = predicted[size_t(&run - runs.data())];
      const double m = median(run.seconds);
      std::vector<double> ratios;
      int plan_wins = 0;
      for (size_t i = 0; i < run.seconds.size(); ++i) {
        ratios.push_back(run.seconds[i] / runs.front().seconds[i]);
        plan_wins += runs.front().seconds[i] < run.seconds[i];
      }
      std::printf("%-14s %-5s %10.3f %12.3f %12.3f %+6.1f%% %8.3fx %3d/%-2zu %7.4f %14.1f %14.1f %+6.1f%% %7.3f/%-7.3f %7.3f/%-7.3f %9lu %9lu  %s\n",
                  run.policy->name.c_str(), run.policy->fits ? "yes" : "no", run.policy->predicted.step_seconds,
                  p.step_seconds, m,
                  100.0 * (p.step_seconds / m - 1.0), median(ratios), plan_wins, run.seconds.size(),
                  &run == &runs.front() ? 1.0 : sign_test_p(plan_wins, int(run.seconds.size())),
                  double(p.activation_peak) / 1e6, double(run.activation_peak) / 1e6,
                  100.0 * (double(p.activation_peak) / double(run.activation_peak) - 1.0), p.recompute_seconds,
                  median(run.recompute), p.stall_seconds, median(run.stall), (unsigned long)run.fallbacks,
                  (unsigned long)run.forwarded, run.policy->block_summary.c_str());
    }
    std::printf("\n(step = forward + backward; medians of %d interleaved rounds; pred@start: the prediction the plan was made with; vs plan: median of the per-round "
                "ratio to the plan's step; wins: rounds in which the plan's step was the shorter; p: one-sided sign test, the chance of "
                "that many wins if the plan were no faster; recomp, stall: predicted / measured, stall including forward's waits for stores above the budget)\n", rounds);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata_plan_bench: %s\n", e.what());
    return 1;
  }
}
