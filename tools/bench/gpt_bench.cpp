// GPT training-step benchmark, Strata side: one configuration per process (so peak RSS belongs
// to it). A step is zero_grad + forward + loss + backward + AdamW step, the same as
// tools/bench/gpt_bench_torch.py (nanoGPT-style GPT-2: tied embeddings, pre-LN, tanh GELU,
// causal attention, vocab padded to a multiple of 128, AdamW lr 1e-4, betas (0.9, 0.999),
// eps 1e-8, no weight decay); --bf16 runs forward + loss under ops::AutocastGuard (bf16 GEMMs, f32
// master weights), as the reference's torch.autocast. --device cuda|sim runs the model, batches and optimizer
// there (the step ends with loss.item(), which waits for the device); --tf32 lets f32 GEMMs use TF32 on CUDA.
// Prints one line per timed step and a final `RESULT {json}` line (peak_device_mb: the device allocator's
// peak). Driven by tools/bench/gpt_bench.py (CPU) and tools/gpu_bench.sh (devices), which run the PyTorch
// reference in the same session.
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "step_flags.h"
#include "step_timing.h"
#include "strata/memory/planner/hardware.h"
#include "strata/models/gpt.h"
#include "strata/models/model_flops.h"
#include "strata/strata.h"

using namespace strata;
using namespace strata::bench;

namespace {

struct Args : StepFlags {
  int64_t L = 12, C = 768, NH = 12, V = 50257, Vp = 0, maxT = 1024, B = 4, T = 256;
  bool gemm_rate = false;
  std::string hardware;  // a profile whose matmul peak gives the MFU
  Args() { trace = "gpt_bench_trace.json"; }
};

// Median GFLOP/s of a [M, K] @ [K, N] f32 matmul (the machine's GEMM rate as Strata reaches it).
double gemm_gflops(int64_t M, int64_t K, int64_t N) {
  NoGradGuard ng;
  Tensor a = ops::randn({M, K}), b = ops::randn({K, N});
  std::vector<double> secs;
  for (int r = 0; r < 13; ++r) {
    const double t0 = now_s();
    Tensor c = ops::matmul(a, b);
    if (r >= 3) secs.push_back(now_s() - t0);
  }
  std::sort(secs.begin(), secs.end());
  return 2.0 * double(M) * double(K) * double(N) / secs[secs.size() / 2] * 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  CLI::App app{
      "GPT training-step benchmark, Strata side (tools/bench/gpt_bench.py and tools/gpu_bench.sh drive it)"};
  add_size_flags(app, {{"--L", &a.L},
                       {"--C", &a.C},
                       {"--NH", &a.NH},
                       {"--V", &a.V},
                       {"--maxT", &a.maxT},
                       {"--B", &a.B},
                       {"--T", &a.T}});
  app.add_option("--Vp", a.Vp, "the vocabulary padded (default: --V up to a multiple of 128)");
  app.add_flag("--gemm-rate", a.gemm_rate, "also measure the machine's f32 GEMM rate");
  app.add_option("--hardware", a.hardware, "a hardware profile whose matmul peak gives the MFU");
  add_step_flags(app, &a);
  CLI11_PARSE(app, argc, argv);
  if (a.Vp <= 0) a.Vp = (a.V + 127) / 128 * 128;
  try {
    const Device device = Device::parse(a.device);
    manual_seed(0);
    models::GPTConfig cfg;
    cfg.n_layer = a.L, cfg.n_head = a.NH, cfg.n_embd = a.C, cfg.block_size = a.maxT, cfg.vocab_size = a.Vp;
    models::GPT model(cfg);
    model.train();
    model.to(device);
    optim::AdamW opt(model.parameters(),
                     optim::AdamWOptions(1e-4).betas(0.9, 0.999).eps(1e-8).weight_decay(0.0));
    std::mt19937_64 rng(1234);
    std::uniform_int_distribution<int64_t> tok(0, a.V - 1);
    std::vector<int64_t> idx(size_t(a.B * a.T)), tgt(size_t(a.B * a.T));
    for (auto& t : idx) t = tok(rng);
    for (auto& t : tgt) t = tok(rng);
    Tensor x = ops::from_vector(idx, {a.B, a.T}).to(device), y = ops::from_vector(tgt, {a.B, a.T}).to(device);
    ops::AllowTf32Guard tf32(a.tf32);

    auto loss_of = [&] {
      ops::AutocastGuard amp(DType::bf16, a.bf16);  // as torch.autocast around forward + loss
      return model.loss(x, y);
    };
    auto step = [&] { return train_step(opt, loss_of); };
    double loss = 0;
    for (int i = 0; i < a.warmup; ++i) loss = step();
    FlopCounter flops;
    {
      OpObserverGuard g(&flops);  // one counted step (untimed)
      loss = step();
    }
    const std::vector<double> times = time_steps(a.steps, step, &loss);
    const double peak = peak_rss_mb();
    const double peak_device = device_peak_mb(device);
    if (a.profile > 0) profile_steps(a.profile, opt, loss_of, a.trace, /*zero_grad_phase=*/true, device);
    const StepTimes st = summarize(times);
    // The trainers' MFU: their FLOP count per token, their peak for this precision.
    const double flops_per_token =
        models::transformer_training_flops_per_token(model.num_parameters(), a.L, a.C, a.T);
    const double peak_flops = a.hardware.empty()
                                  ? 0.0
                                  : memory::planner::peak_matmul_flops(
                                        memory::planner::load_hardware_profile(a.hardware), a.bf16, a.tf32);
    const double mfu = memory::planner::model_flops_utilization(
        flops_per_token, double(a.B * a.T) * 1e3 / st.median_ms, peak_flops);
    const double gemm = a.gemm_rate && device.type == DeviceType::CPU ? gemm_gflops(4096, 768, 768) : 0.0;
    std::printf(
        "RESULT {\"side\": \"strata\", \"device\": \"%s\", \"bf16\": %s, \"tf32\": %s, \"tag\": \"%s\", "
        "\"threads\": %d, \"params\": %ld, \"cfg\": {\"L\": %ld, \"C\": "
        "%ld, \"NH\": %ld, \"V\": %ld, \"Vp\": %ld, \"B\": %ld, \"T\": %ld}, \"min_ms\": %.1f, "
        "\"median_ms\": %.1f, "
        "\"peak_rss_mb\": %.1f, \"peak_device_mb\": %.1f, \"step_gflop\": %.1f, \"step_gemm_gflop\": %.1f, "
        "\"gemm_gflops\": %.1f, \"loss\": %.4f, \"flops_per_token\": %.6g, \"peak_flops\": %.6g, \"mfu\": "
        "%.6g, "
        "\"times_ms\": [%s]}\n",
        a.device.c_str(), a.bf16 ? "true" : "false", a.tf32 ? "true" : "false", a.tag.c_str(),
        omp_get_max_threads(), long(model.num_parameters()), long(a.L), long(a.C), long(a.NH), long(a.V),
        long(a.Vp), long(a.B), long(a.T), st.min_ms, st.median_ms, peak, peak_device, flops.total * 1e-9,
        flops.gemm * 1e-9, gemm, loss, flops_per_token, peak_flops, mfu, st.times_ms.c_str());
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "strata_gpt_bench: %s\n", e.what());
    return 1;
  }
}
