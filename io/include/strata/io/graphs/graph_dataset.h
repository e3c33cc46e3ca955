// GraphDataset: a graph with its node features, labels and splits, as the loaders
// (graph_formats.h), the generators (graph_generators.h) and train_gnn exchange it.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "strata/core/tensor.h"
#include "strata/io/data_identity.h"
#include "strata/ops/graph.h"

namespace strata::io {

struct GraphDataset {
  std::string name;  // what the trainer prints: "polblogs", "dcsbm(n=2000, k=4)", a file name
  Graph graph;       // on the CPU; homogeneous or typed
  Tensor features;   // f32 [N, F], undefined when the source has none
  // A typed graph whose node types differ in feature width, or where some have none: each type's
  // features, f32 [nodes of the type, F_t] (features is then undefined). Empty otherwise.
  std::map<std::string, Tensor> typed_features;
  Tensor labels;  // i64 [N] in [0, num_classes), -1 where a node has no label; may be undefined
  int64_t num_classes = 0;
  // boolean [N] each, undefined when the source gives no split (train_gnn then draws a
  // stratified random one, split_nodes below).
  Tensor train_mask, val_mask, test_mask;
  // Every property the source had, by name, raw: node properties [N, ...], edge properties
  // [E, ...] in the input's edge order (Graph::edge_ids() maps CSC positions to it).
  std::map<std::string, Tensor> node_properties, edge_properties;
};

// The dataset's name and size, with a digest of everything a model trains on: node types, relations,
// edges, labels, split and features (io/data_identity.h).
DataIdentity data_identity(const GraphDataset& data);

// A stratified random split of the labelled nodes: within each class, a `train` fraction, a
// `val` fraction and the rest as test (each class keeps at least one training node when it has
// any), reproducible from `seed`. Fills the three masks; throws ValueError when labels are
// undefined or the fractions are not in [0, 1] with train + val <= 1.
void split_nodes(GraphDataset* data, double train, double val, uint64_t seed);

}  // namespace strata::io
