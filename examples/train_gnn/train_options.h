// GnnTrainOptions: train_gnn's settings (defaults < --config file < flags) and the model they describe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "examples/train_gnn/train_gnn.pb.h"
#include "strata/memory/trainer_cache.h"
#include "strata/models/gnn.h"

namespace strata::examples {

struct GnnTrainOptions {
  // Every field train_gnn reads is set (train_options.cpp holds the defaults).
  TrainGnnConfig config;
  models::GNNConfig model;       // in_channels and num_classes are set from the data
  std::vector<int64_t> fanouts;  // empty: full graph
  memory::CacheSettings cache;   // config.cache(), sizes parsed
  // The run in a line, printed at the start and saved in checkpoints.
  std::string describe() const;
};

// Parses argv (and the --config file it names); throws ValueError/IoError on bad input.
// Returns false when --help was printed.
bool parse_gnn_train_options(int argc, char** argv, GnnTrainOptions* out);

}  // namespace strata::examples
