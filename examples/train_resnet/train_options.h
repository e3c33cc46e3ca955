// ResNetTrainOptions: train_resnet's settings (defaults < --config file < flags) and the model they describe.
#pragma once

#include <string>

#include "examples/train_resnet/train_resnet.pb.h"
#include "strata/memory/trainer_cache.h"
#include "strata/models/resnet.h"

namespace strata::examples {

struct ResNetTrainOptions {
  // Every field train_resnet reads is set (train_options.cpp holds the defaults).
  TrainResNetConfig config;
  models::ResNetConfig model;   // the preset with config's overrides; num_classes is set from the data
  memory::CacheSettings cache;  // config.cache(), sizes parsed
  // The run in a line, printed at the start and saved in checkpoints.
  std::string describe() const;
};

// Parses argv (and the --config file it names); throws ValueError/IoError on bad input.
// Returns false when --help was printed.
bool parse_resnet_train_options(int argc, char** argv, ResNetTrainOptions* out);

}  // namespace strata::examples
