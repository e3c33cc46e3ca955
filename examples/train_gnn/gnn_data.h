// The graph train_gnn trains on: loaded or generated, made undirected, given input features and
// a split when the source has none.
#pragma once

#include <memory>
#include <string>

#include "examples/train_gnn/train_gnn.pb.h"
#include "strata/core/device.h"
#include "strata/io/features/feature_store.h"
#include "strata/io/graphs/graph_dataset.h"

namespace strata::examples {

// The dataset `c` names (see train_gnn.proto), on the CPU, with labels, f32 features and the
// three masks; ValueError naming the flag when the source has no labels.
std::shared_ptr<io::GraphDataset> make_gnn_data(const TrainGnnConfig& c);

// The store --feature-store names for the sampled loader, holding data.features' rows (null for
// memory: the loader gathers from the tensor). file: --feature-file, written from data.features
// first when it does not exist, its resident limit `budget_bytes` (0: none); pinned: page-locked
// for `device`, its rows copied from --feature-file when given. A --feature-file that existed must
// hold data.features' values: another one (written by another --seed or --features) is a
// ValueError naming the first value that differs.
std::unique_ptr<io::FeatureStore> open_feature_store(const TrainGnnConfig& c, uint64_t budget_bytes,
                                                     const io::GraphDataset& data, Device device);

// Writes `data` as safetensors: edge_index i64 [2, E] (CSC order), x, y, and the masks as u8.
void save_gnn_data(const io::GraphDataset& data, const std::string& path);

// The graph with every edge's reverse added, duplicates and self loops dropped (PyG's
// ToUndirected then coalesce); edge properties are dropped with them.
Graph undirected_simple(const Graph& g);

}  // namespace strata::examples
