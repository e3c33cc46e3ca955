// BERT MLM training-step benchmark, Strata side: one configuration per process (so peak RSS
// belongs to it). A step is zero_grad + forward + MLM loss + backward + AdamW step on
// models::BertForMaskedLM (BERT-base by default: L12 C768 H12 I3072 V30522), the same model,
// batch and optimizer as tools/bench/bert_bench_torch.py: random tokens, two segments, no
// padding, 15% of positions labelled, AdamW lr 1e-4, betas (0.9, 0.999), eps 1e-6, weight decay
// 0.01 on every parameter, dropout 0. The MLM head runs on the labelled rows only (gathered
// first). Prints one line per timed step and a final `RESULT {json}` line; driven by
// tools/bench/bert_bench.py, which runs the PyTorch reference in the same session.
#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "step_flags.h"
#include "step_timing.h"
#include "strata/models/bert.h"
#include "strata/strata.h"

using namespace strata;
using namespace strata::bench;

namespace {

struct Args : StepFlags {
  int64_t L = 12, C = 768, NH = 12, I = 3072, V = 30522, B = 8, T = 128;
  Args() { trace = "bert_bench_trace.json"; }
};

}  // namespace

int main(int argc, char** argv) {
  Args a;
  CLI::App app{"BERT masked-LM training-step benchmark, Strata side (tools/bench/bert_bench.py drives it)"};
  add_size_flags(app, {{"--L", &a.L},
                       {"--C", &a.C},
                       {"--NH", &a.NH},
                       {"--I", &a.I},
                       {"--V", &a.V},
                       {"--B", &a.B},
                       {"--T", &a.T}});
  add_step_flags(app, &a);
  CLI11_PARSE(app, argc, argv);
  try {
    const Device device = Device::parse(a.device);
    ops::AllowTf32Guard allow_tf32(a.tf32);
    manual_seed(0);
    models::BertConfig cfg = models::BertConfig::preset("bert-base");
    cfg.num_hidden_layers = a.L, cfg.hidden_size = a.C, cfg.num_attention_heads = a.NH,
    cfg.intermediate_size = a.I;
    cfg.vocab_size = a.V, cfg.hidden_dropout_prob = 0.0;
    models::BertForMaskedLM model(cfg);
    model.train();
    model.to(device);
    optim::AdamW opt(model.parameters(),
                     optim::AdamWOptions(1e-4).betas(0.9, 0.999).eps(1e-6).weight_decay(0.01));
    std::mt19937_64 rng(1234);
    std::uniform_int_distribution<int64_t> tok(1, a.V - 1);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    std::vector<int64_t> ids(size_t(a.B * a.T)), types(size_t(a.B * a.T)), labels(size_t(a.B * a.T), -100);
    int64_t masked = 0;
    for (size_t i = 0; i < ids.size(); ++i) {
      ids[i] = tok(rng);
      types[i] = int64_t(i % size_t(a.T)) >= a.T / 2 ? 1 : 0;
      if (u(rng) < 0.15) labels[i] = ids[i], ++masked;
    }
    Tensor x = ops::from_vector(ids, {a.B, a.T}).to(device),
           tt = ops::from_vector(types, {a.B, a.T}).to(device);
    Tensor am = ops::ones({a.B, a.T}, DType::i64).to(device),
           y = ops::from_vector(labels, {a.B, a.T}).to(device);
    auto loss_of = [&] {
      ops::AutocastGuard amp(DType::bf16, a.bf16);  // as torch.autocast around forward + loss
      return model.loss(x, tt, am, y);
    };

    auto step = [&] { return train_step(opt, loss_of); };
    double loss = 0;
    for (int i = 0; i < a.warmup; ++i) loss = step();
    const std::vector<double> times = time_steps(a.steps, step, &loss);
    const double peak = peak_rss_mb();
    const double peak_device = device_peak_mb(device);
    if (a.profile > 0) profile_steps(a.profile, opt, loss_of, a.trace, /*zero_grad_phase=*/true, device);
    const StepTimes st = summarize(times);
    std::printf(
        "RESULT {\"side\": \"strata\", \"device\": \"%s\", \"bf16\": %s, \"tf32\": %s, \"tag\": \"%s\", "
        "\"threads\": %d, \"params\": %ld, \"cfg\": {\"L\": %ld, \"C\": %ld, "
        "\"NH\": %ld, \"I\": %ld, \"V\": %ld, \"B\": %ld, \"T\": %ld}, \"masked\": %ld, \"min_ms\": %.1f, "
        "\"median_ms\": %.1f, \"peak_rss_mb\": %.1f, \"peak_device_mb\": %.1f, \"loss\": %.4f, \"times_ms\": "
        "[%s]}\n",
        a.device.c_str(), a.bf16 ? "true" : "false", a.tf32 ? "true" : "false", a.tag.c_str(),
        omp_get_max_threads(), long(model.num_parameters()), long(a.L), long(a.C), long(a.NH), long(a.I),
        long(a.V), long(a.B), long(a.T), long(masked), st.min_ms, st.median_ms, peak, peak_device, loss,
        st.times_ms.c_str());
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "strata_bert_bench: %s\n", e.what());
    return 1;
  }
}
