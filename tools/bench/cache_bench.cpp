// Tensor-cache benchmark, Strata side: one GPT configuration under one cache policy per process
// (so the process peak RSS belongs to that policy). A step is zero_grad + forward + loss +
// backward + AdamW; the first --warmup steps (and, under --memory-budget, the planning step) are
// not timed. Prints one line per timed step and a final `RESULT {json}` line with the median step
// time and the three memory figures (activation peak, step peak, process peak RSS) and the cache's
// counters. Refuses to report (exit 3) when the cache fell back (a tier was full or failed): the
// figures would not be those of the policy asked for. --device cuda|sim trains there (the cache moves that
// device's activations, the memory figures are its allocator's, each step waits for the device before
// its clock stops). Driven by tools/bench/cache_bench.py (CPU) and tools/gpu_bench.sh (devices).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "strata/models/gpt.h"
#include "strata/strata.h"
#include "step_timing.h"

using namespace strata;
using strata::bench::peak_rss_mb;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Strata tensor-cache benchmark: one GPT config, one cache policy"};
  std::string preset = "gpt2", policy = "keep", spill_dir, budget, host_pool = "0", tag, device_name = "cpu",
              spill_arena = "32G";
  bool tf32 = false;
  int64_t B = 4, T = 256, n_layer = 0;
  int warmup = 1, steps = 5;
  app.add_option("--preset", preset);
  app.add_option("--n-layer", n_layer, "override the preset's layer count");
  app.add_option("-b,--batch", B);
  app.add_option("-t,--seq", T);
  app.add_option("--policy", policy, "a --cache-policy spec");
  app.add_option("--memory-budget", budget);
  app.add_option("--spill-dir", spill_dir, "the NVMe tier's directory (none by default)");
  app.add_option("--spill-arena", spill_arena,
                 "the NVMe tier's arena (the budget plan's NVMe blocks fit in it)");
  app.add_option("--host-pool", host_pool);
  app.add_option("--warmup", warmup);
  app.add_option("--steps", steps);
  app.add_option("--tag", tag);
  app.add_option("--device", device_name, "cpu (default), cuda[:N] or sim[:N]");
  app.add_flag("--tf32", tf32, "f32 GEMMs may use TF32 (CUDA)");
  CLI11_PARSE(app, argc, argv);
  try {
    const Device device = Device::parse(device_name);
    Allocator& alloc = allocator_for(device);
    ops::AllowTf32Guard allow_tf32(tf32);
    models::GPTConfig c = models::GPTConfig::preset(preset);
    if (n_layer > 0) c.n_layer = n_layer;
    c.block_size = std::max(c.block_size, T);
    manual_seed(1337);
    models::GPT model(c);
    model.to(device);
    optim::AdamW opt(model.parameters(), optim::AdamWOptions(1e-4));
    memory::CacheSettings cs;
    cs.policy = policy;
    cs.spill_dir = spill_dir;
    cs.device = device;
    cs.spill_arena_bytes = memory::parse_byte_size(spill_arena, "--spill-arena");
    cs.host_pool_bytes = memory::parse_byte_size(host_pool, "--host-pool");
    if (!budget.empty()) cs.memory_budget = memory::parse_byte_size(budget, "--memory-budget");
    memory::TrainerCache tc(cs);
    Tensor x = Tensor::empty({B, T}, DType::i64), y = Tensor::empty({B, T}, DType::i64);
    uint32_t lcg = 1;
    for (int64_t i = 0; i < B * T; ++i) {
      x.data<int64_t>()[i] = int64_t((lcg = lcg * 1664525u + 1013904223u) >> 8) % c.vocab_size;
      y.data<int64_t>()[i] = int64_t((lcg = lcg * 1664525u + 1013904223u) >> 8) % c.vocab_size;
    }
    x = x.to(device);
    y = y.to(device);
    std::vector<double> times;
    int64_t act_peak = 0, step_peak = 0;
    memory::CacheStats last;
    const int planning = cs.memory_budget > 0 ? 1 : 0;
    for (int s = 0; s < planning + warmup + steps; ++s) {
      alloc.stats().reset_peaks();
      const auto t0 = std::chrono::steady_clock::now();
      opt.zero_grad();
      {
        autograd::SavePolicyGuard guard(tc.cache());
        tc.begin_step();
        Tensor loss = model.loss(x, y);
        loss.backward();
      }
      opt.step();
      backend_for(device).synchronize(device.index);
      const memory::BudgetOutcome plan = tc.end_step();
      const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (!plan.explanation.empty()) std::printf("plan: %s\n", plan.explanation.c_str());
      STRATA_CHECK(plan.feasible, ValueError, "--memory-budget: ", plan.explanation);
      const MemorySnapshot m = alloc.stats().snapshot();
      last = tc.last_stats();
      const bool timed = s >= planning + warmup;
      std::printf("step %d%s: %.3f s, act peak %.1f MB, step peak %.1f MB | %s\n", s, timed ? "" : " (untimed)", sec,
                  double(m.peak_of(MemoryCategory::SavedActivation)) / 1e6, double(m.total_peak) / 1e6,
                  tc.stats_line().c_str());
      std::fflush(stdout);
      if (last.fallbacks > 0) {
        std::fprintf(stderr, "cache_bench: %lu fallbacks (%s): refusing to report\n", (unsigned long)last.fallbacks,
                     last.warnings.empty() ? "?" : last.warnings.front().c_str());
        return 3;
      }
      if (!timed) continue;
      times.push_back(sec);
      act_peak = std::max(act_peak, m.peak_of(MemoryCategory::SavedActivation));
      step_peak = std::max(step_peak, m.total_peak);
    }
    std::printf(
        "RESULT {\"tag\": \"%s\", \"device\": \"%s\", \"policy\": \"%s\", \"budget\": \"%s\", \"preset\": "
        "\"%s\", \"n_layer\": %ld, "
        "\"B\": %ld, \"T\": %ld, \"step_s\": %.4f, \"min_step_s\": %.4f, \"activation_peak_mb\": %.1f, "
        "\"step_peak_mb\": %.1f, \"rss_peak_mb\": %.1f, \"nvme_written_mb\": %.1f, \"nvme_read_mb\": %.1f, "
        "\"host_written_mb\": %.1f, \"forwarded\": %lu, \"stall_s\": %.3f, \"recompute_s\": %.3f, \"io\": "
        "\"%s\"}\n",
        tag.c_str(), device_name.c_str(), policy.c_str(), budget.c_str(), preset.c_str(), long(c.n_layer),
        long(B), long(T), median(times), *std::min_element(times.begin(), times.end()),
        double(act_peak) / 1e6, double(step_peak) / 1e6, peak_rss_mb(), double(last.nvme.bytes_written) / 1e6,
        double(last.nvme.bytes_read) / 1e6, double(last.host.bytes_written) / 1e6,
        (unsigned long)last.forwarded, last.stall_seconds, last.recompute_seconds, last.io_engine.c_str());
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "cache_bench: %s\n", e.what());
    return 1;
  }
}
