// ResNet training-step benchmark, Strata side: one configuration per process (so peak RSS
// belongs to it). A step is zero_grad + forward + cross-entropy + backward + SGD step (momentum
// 0.9, weight decay 1e-4), as tools/bench/resnet_bench_torch.py. Prints one line per timed step
// and a final `RESULT {json}` line; driven by tools/bench/resnet_bench.py.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <omp.h>

#include "strata/models/resnet.h"
#include "strata/strata.h"
#include "step_timing.h"

using namespace strata;
using namespace strata::bench;

int main(int argc, char** argv) {
  std::string preset = "resnet50", device_name = "cpu";
  bool bf16 = false, tf32 = false;
  int64_t B = 8, HW = 224;
  int warmup = 2, steps = 5, profile = 0;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) std::exit((std::fprintf(stderr, "resnet_bench: %s needs a value\n", k.c_str()), 2));
      return argv[++i];
    };
    if (k == "--preset") preset = next();
    else if (k == "--B") B = std::atol(next());
    else if (k == "--size") HW = std::atol(next());
    else if (k == "--warmup") warmup = std::atoi(next());
    else if (k == "--steps") steps = std::atoi(next());
    else if (k == "--profile") profile = std::atoi(next());
    else if (k == "--device")
      device_name = next();
    else if (k == "--bf16")
      bf16 = true;
    else if (k == "--tf32")
      tf32 = true;
    else {
      std::fprintf(stderr,
                   "usage: strata_resnet_bench [--preset resnet50[-cifar] --B 8 --size 224 --warmup 2 "
                   "--steps 5 --profile N --bf16 --tf32 --device cpu|cuda[:N]|sim[:N]]\n");
      return 2;
    }
  }
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
    if (profile > 0) profile_steps(profile, opt, loss_of, /*trace=*/"", /*zero_grad_phase=*/false, device);
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
