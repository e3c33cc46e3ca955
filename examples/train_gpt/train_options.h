// TrainOptions: train_gpt's resolved settings (defaults < --config file < flags).
#pragma once

#include <cstdint>
#include <string>

#include "strata/memory/trainer_cache.h"
#include "strata/models/gpt.h"

namespace strata::examples {

struct TrainOptions {
  models::GPTConfig model;
  std::string preset = "small";
  std::string train_data, val_data, text;
  int64_t batch_size = 16, seq_len = 128, grad_accum = 1, max_steps = 1000000;
  double max_seconds = 300;
  double lr = 2e-3, min_lr = 2e-4, weight_decay = 0.1, beta1 = 0.9, beta2 = 0.95, grad_clip = 1.0;
  int64_t warmup_steps = 50;
  int64_t lr_decay_steps = 0;  // 0: max_steps, or estimated from step time when time-bounded
  uint64_t seed = 1337;
  bool shuffle = true;
  int64_t eval_every = 50, eval_batches = 8, ckpt_every = 0, log_every = 10;
  std::string out_dir = "out/train_gpt";
  bool resume = false;
  int64_t sample_tokens = 200, top_k = 40;
  double temperature = 0.8;
  // Data parallel (under mpirun): ZeRO-1 optimizer sharding, gradient bucket size, and how
  // long a collective may wait for the other ranks before the run fails naming them.
  bool zero1 = false;
  double bucket_mb = 25.0;
  double collective_timeout = 300.0;  // seconds
  // Per-op profile of every step after the first two: table at the end, chrome trace in out_dir.
  bool profile = false;
  // bf16 mixed precision: forward + loss under ops::AutocastGuard (bf16 GEMMs, f32 master weights).
  bool bf16 = false;
  // CUDA: forward and backward under ops::AllowTf32Guard (TF32 Tensor Cores for f32 GEMMs).
  bool tf32 = false;
  // Tensor cache: policy, budget, tiers (memory::CacheSettings).
  memory::CacheSettings cache;
  // Whether the run is bounded by time (no --max-steps): the schedule length is then estimated.
  bool time_bounded() const { return max_seconds > 0 && max_steps >= 1000000; }
  std::string describe() const;
};

// Parses argv (and the --config file it names); throws ValueError/IoError on bad input.
// Returns false when --help was printed.
bool parse_train_options(int argc, char** argv, TrainOptions* out);

}  // namespace strata::examples
