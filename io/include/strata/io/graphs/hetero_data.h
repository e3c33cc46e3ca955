// HeteroData: a typed graph as PyG's HeteroData holds it (node counts, features, labels and split
// masks per node type; a [2, E] edge index in local ids per edge type), saved and loaded as one
// safetensors file, the typed extension of train_gnn's --save-data format.
//
//   io::HeteroData d = io::load_hetero_data("dblp.safetensors");  // tools/pyg_hetero_to_safetensors.py
//   Graph g = d.graph();                                           // global ids, ops/hetero_graph.h
//   Tensor x = cat_node_features(g, d.x);
//
// Keys: x.<type>, y.<type>, train_mask.<type>, val_mask.<type>, test_mask.<type> (u8),
// edge_index.<src>__<rel>__<dst> (i64 [2, E]); metadata "format" = "strata-hetero/1",
// "node_types" and "num_nodes" (comma-separated, in the graph's type order), "edge_types"
// (comma-separated <src>__<rel>__<dst>, in relation order: the relational layers' weight rows),
// "name", "num_classes". Type names may not hold ',' or "__".
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "strata/io/graphs/graph_dataset.h"
#include "strata/ops/hetero_graph.h"

namespace strata::io {

struct HeteroData {
  std::vector<std::pair<std::string, int64_t>> num_nodes;  // node types in order, with their counts
  std::vector<TypedEdgeIndex> edge_index;                  // edge types in relation order
  // Per node type, where the data has it: features [n, F_t], labels [n], masks [n] (u8 / bool).
  std::map<std::string, Tensor> x, y, train_mask, val_mask, test_mask;
  std::string name;
  int64_t num_classes = 0;

  // The graph in global ids (hetero_graph).
  Graph graph() const;
};

// IoError naming the file and the key or metadata entry at fault: a missing or malformed entry,
// a tensor for a type the metadata does not list, rows that differ from the type's count, an edge
// index that is not [2, E] or holds an id outside its types (checked by hetero_graph).
HeteroData load_hetero_data(const std::string& path);
// Atomically; ValueError for a type name the format cannot hold, or tensors whose rows differ from
// their type's count.
void save_hetero_data(const HeteroData& data, const std::string& path);

// As train_gnn takes a dataset: the graph, the features in global rows when every node type has
// features of one width (else per type, in typed_features, for a per-type input projection),
// labels (-1 where a type has none), masks (false where a type has none; undefined where no type
// has any).
GraphDataset to_graph_dataset(const HeteroData& data);
// The inverse: each node type's rows of the features, labels and masks, each relation's edges in
// local ids in the graph's input order (edge properties are not kept).
HeteroData to_hetero_data(const GraphDataset& data);

}  // namespace strata::io
