// TrainOptions: train_gpt's settings (defaults < --config file < flags) and the model they describe.
#pragma once

#include <string>

#include "examples/train_gpt/train_gpt.pb.h"
#include "strata/io/weights/gpt_weights.h"
#include "strata/memory/trainer_cache.h"
#include "strata/models/gpt.h"

namespace strata::examples {

struct TrainOptions {
  // Every field train_gpt reads is set (train_options.cpp holds the defaults).
  TrainGptConfig config;
  models::GPTConfig model;      // the preset with config's overrides
  memory::CacheSettings cache;  // config.cache(), sizes parsed
  // --init-from's weights (the model's shape is theirs); the trainer loads and drops them.
  std::shared_ptr<io::GptWeights> init_weights;
  // The run in a line, printed at the start and saved in checkpoints.
  std::string describe() const;
};

// Parses argv (and the --config file it names); throws ValueError/IoError on bad input.
// Returns false when --help was printed.
bool parse_train_options(int argc, char** argv, TrainOptions* out);

}  // namespace strata::examples
