// The flags the training-step benchmarks (gpt_bench, bert_bench, resnet_bench) share, on a CLI11 app:
// warm-up and timed steps, profiled steps and their trace, a tag for the RESULT line, the device,
// bf16 autocast and TF32.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

namespace strata::bench {

struct StepFlags {
  int warmup = 2, steps = 5;
  int profile = 0;  // profiled steps after the timed ones
  std::string trace, tag, device = "cpu";
  bool bf16 = false, tf32 = false;
};

inline void add_step_flags(CLI::App& app, StepFlags* f) {
  app.add_option("--warmup", f->warmup, "untimed steps first")->capture_default_str();
  app.add_option("--steps", f->steps, "timed steps, one line each")->capture_default_str();
  app.add_option("--profile", f->profile, "profiled steps after the timed ones: an op table and --trace");
  app.add_option("--trace", f->trace, "the profiled steps' chrome trace")->capture_default_str();
  app.add_option("--tag", f->tag, "a label copied into the RESULT line");
  app.add_option("--device", f->device, "cpu, cuda[:N] or sim[:N]")->capture_default_str();
  app.add_flag("--bf16", f->bf16, "forward and loss under bf16 autocast (f32 master weights)");
  app.add_flag("--tf32", f->tf32, "f32 GEMMs may use TF32 (CUDA)");
}

// A model's sizes, each `--NAME N` with its default shown by --help.
inline void add_size_flags(CLI::App& app, std::initializer_list<std::pair<const char*, int64_t*>> sizes) {
  for (const auto& [name, value] : sizes) app.add_option(name, *value)->capture_default_str();
}

}  // namespace strata::bench
