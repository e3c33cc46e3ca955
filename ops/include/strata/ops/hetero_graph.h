// A typed graph built the PyG way: node counts per type and a [2, E] edge index per edge type in
// per-type local ids (torch_geometric.data.HeteroData), turned into one Graph in global ids, with
// node features and outputs converted between per-type dicts and the graph's global rows.
//
//   Graph g = hetero_graph({{"author", 3}, {"paper", 4}},
//                          {{{"author", "writes", "paper"}, writes},    // [2, E] local ids
//                           {{"paper", "cites", "paper"}, cites}});
//   Tensor x = cat_node_features(g, {{"author", x_author}, {"paper", x_paper}});  // [7, F]
//   std::map<std::string, Tensor> out = split_node_rows(g, conv.forward(g, x));
//
// Node type t's nodes take the global ids [type_offset(t), type_offset(t + 1)) in the order the
// types are given; relation r is the r-th edge type given, and the relational layers' weight rows
// (RGCN's W_r, RGAT's, HGT's k_rel/v_rel/p_rel) follow that order: give the edge types in
// HeteroData.edge_types' order to match PyG's to_homogeneous() and its weights.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "strata/ops/graph.h"

namespace strata {

// PyG's edge type (source node type, relation, destination node type).
struct EdgeType {
  std::string src, rel, dst;
  // "src__rel__dst", as PyG joins them in parameter and file keys.
  std::string key() const { return src + "__" + rel + "__" + dst; }
  friend bool operator==(const EdgeType&, const EdgeType&) = default;
};

struct TypedEdgeIndex {
  EdgeType type;
  Tensor edge_index;  // [2, E] integer, on the CPU: row 0 sources, row 1 destinations, local ids
};

// Throws ValueError for a type named twice, an edge type whose node type is not given, or an
// edge index that is not [2, E] of integers; IndexError naming the edge type, the edge and the
// local id out of its type's range.
Graph hetero_graph(const std::vector<std::pair<std::string, int64_t>>& num_nodes,
                   const std::vector<TypedEdgeIndex>& edge_index);

// The index of node type `type` in g (ValueError naming it and the graph's types otherwise).
int64_t node_type_index(const Graph& g, const std::string& type);

// Per-type rows [nodes of the type, F] -> [N, F] in global order (differentiable). Every node type
// of g needs its rows; ShapeError naming the type whose row count or width differs, ValueError for a
// missing or unknown type. Types of different widths go through nn::HeteroDictLinear first.
Tensor cat_node_features(const Graph& g, const std::map<std::string, Tensor>& x);
// [N, ...] in global order -> each type's rows (views of x, differentiable).
std::map<std::string, Tensor> split_node_rows(const Graph& g, const Tensor& x);

// Local ids of `type` -> global ids (i64, same shape); IndexError naming the id out of range.
Tensor to_global_ids(const Graph& g, const std::string& type, const Tensor& local);
// Global ids -> (node type index, local id), i64 each, same shape; IndexError for an id outside g.
std::pair<Tensor, Tensor> to_local_ids(const Graph& g, const Tensor& global);

}  // namespace strata
