// ResNet training-step benchmark, Strata side: one configuration per process (so peak RSS
// belongs to it). A step is zero_grad + forward + cross-entropy + backward + SGD step (momentum
// 0.9, weight decay 1e-4), as tools/bench/resnet_bench_torch.py. Prints one line per timed step
// and a final `RESULT {json}` line; driven by tools/bench/resnet_bench.py.
#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "step_flags.h"
#include "step_timing.h"
#include "strata/models/resnet.h"
#include "strata/strata.h"

using namespace strata;
using namespace strata::bench;

int main(int argc, char** argv) {
  StepFlags f;
  std::string preset = "resnet50";
  int64_t B = 8, HW = 224;
  CLI::App app{"ResNet training-step benchmark, Strata side (tools/bench/resnet_bench.py drives it)"};
  app.add_option("--preset", preset, "resnet18 ... resnet152, -cifar for the CIFAR stem")
      ->capture_default_str();
  add_size_flags(app, {{"--B", &B}, {"--size", &HW}});  // --size: the images' height and width
  add_step_flags(app, &f);
  CLI11_PARSE(app, argc, argv);
  const std::string& device_name = f.device;
  const bool bf16 = f.bf16, tf32 = f.tf32;
  const int warmup = f.warmup, steps = f.steps, profile = f.profile;
  try {
    const Device device = Device::parse(device_name);
    ops::AllowTf32Guard allow_tf32(tf32);
    manual_seed(0);
    models::ResNetConfig cfg = models::ResNetConfig::preset(preset);
    models::ResNet model(cfg);
    model.train();
    model.to(device);
    optim::SGD opt(model.parameters(), optim::SGDOptions(0.01).momentum(0.9).weight_decay(1e-4));
    Tensor x = ops::randn({B, 3, HW, HW}).to(device);
    std::vector<int64_t> labels(static_cast<size_t>(B));
    for (int64_t i = 0; i < B; ++i) labels[size_t(i)] = (i * 37) % cfg.num_classes;
    Tensor y = ops::from_vector(labels, {B}).to(device);
    auto loss_of = [&] {
      ops::AutocastGuard amp(DType::bf16, bf16);  // as torch.autocast around forward + loss
      return ops::cross_entropy(model(x), y);
    };

    auto step = [&] { return train_step(opt, loss_of); };
    double loss = 0;
    for (int i = 0; i < warmup; ++i) loss = step();
    FlopCounter flops;
    {
      OpObserverGuard g(&flops);
      loss = step();
    }
    const std::vector<double> times = time_steps(steps, step, &loss);
    const double peak = peak_rss_mb();
    const double peak_device = device_peak_mb(device);
    if (profile > 0) profile_steps(profile, opt, loss_of, f.trace, /*zero_grad_phase=*/false, device);
    const StepTimes st = summarize(times);
    std::printf(
        "RESULT {\"side\": \"strata\", \"device\": \"%s\", \"bf16\": %s, \"tf32\": %s, \"preset\": \"%s\", "
        "\"B\": %ld, \"size\": %ld, \"threads\": %d, "
        "\"params\": %ld, \"min_ms\": %.1f, \"median_ms\": %.1f, \"peak_rss_mb\": %.1f, \"peak_device_mb\": "
        "%.1f, \"step_gflop\": %.1f, "
        "\"loss\": %.4f, \"times_ms\": [%s]}\n",
        device_name.c_str(), bf16 ? "true" : "false", tf32 ? "true" : "false", preset.c_str(), long(B),
        long(HW), omp_get_max_threads(), long(model.num_parameters()), st.min_ms, st.median_ms, peak,
        peak_device, flops.total * 1e-9, loss, st.times_ms.c_str());
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "strata_resnet_bench: %s\n", e.what());
    return 1;
  }
}
