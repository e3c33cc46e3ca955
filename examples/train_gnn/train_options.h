// GnnTrainOptions: train_gnn's settings (defaults < --config file < flags) and the model they describe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "examples/train_gnn/train_gnn.pb.h"
#include "strata/memory/trainer_cache.h"
#include "strata/models/gnn.h"
#include "strata/models/layers/graph/materialization.h"

namespace strata::examples {

struct GnnTrainOptions {
  // Every field train_gnn reads is set (train_options.cpp holds the defaults).
  TrainGnnConfig config;
  models::GNNConfig model;       // in_channels and num_classes are set from the data
  std::vector<int64_t> fanouts;  // empty: full graph
  memory::CacheSettings cache;   // config.cache(), sizes parsed
  // Relational layers (rgcn, rgat, hgt, the link task's encoder): --materialization and --reorder
  // (nullopt: by the layer's estimate).
  nn::Materialization materialization = nn::Materialization::kAuto;
  std::optional<bool> reorder;
  // --feature-budget in bytes (0: none given).
  uint64_t feature_budget_bytes = 0;
  // --task link.
  bool link_prediction() const { return config.task() == "link"; }
  // --model rgcn, rgat or hgt: entity classification on a typed graph.
  bool relational() const;
  // The run in a line, printed at the start and saved in checkpoints.
  std::string describe() const;
};

// --model rgcn, rgat or hgt: the relational convs of models::GNN.
bool is_relational_model(const std::string& model);

// Parses argv (and the --config file it names); throws ValueError/IoError on bad input.
// Returns false when --help was printed.
bool parse_gnn_train_options(int argc, char** argv, GnnTrainOptions* out);

}  // namespace strata::examples
