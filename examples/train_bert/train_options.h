// BertTrainOptions: train_bert's resolved settings (defaults < --config file < flags).
#pragma once

#include <cstdint>
#include <string>

#include "strata/memory/trainer_cache.h"
#include "strata/models/bert.h"

namespace strata::examples {

struct BertTrainOptions {
  models::BertConfig model;
  std::string preset = "small";
  std::string train_data, val_data, text;
  double mask_prob = 0.15, short_seq_prob = 0.1;
  bool two_segments = true;
  int64_t batch_size = 32, seq_len = 64, max_steps = 1000000;
  double max_seconds = 300;
  double lr = 2e-3, min_lr = 2e-4, weight_decay = 0.01, beta1 = 0.9, beta2 = 0.999, grad_clip = 1.0;
  int64_t warmup_steps = 50;
  int64_t lr_decay_steps = 0;  // 0: max_steps, or estimated from step time when time-bounded
  uint64_t seed = 1337;
  bool shuffle = true;
  int64_t eval_every = 50, eval_batches = 8, ckpt_every = 0, log_every = 10;
  std::string out_dir = "out/train_bert";
  bool resume = false;
  bool bf16 = false;
  memory::CacheSettings cache;
  bool time_bounded() const { return max_seconds > 0 && max_steps >= 1000000; }
  std::string describe() const;
};

// Parses argv (and the --config file it names); throws ValueError/IoError on bad input.
// Returns false when --help was printed.
bool parse_bert_train_options(int argc, char** argv, BertTrainOptions* out);

}  // namespace strata::examples
