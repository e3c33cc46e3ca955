// Graph: one storage for homogeneous and heterogeneous graphs, the input of the message-passing
// kernels and layers (a homogeneous graph is one node type and one relation).
//
//   Tensor src = ops::from_vector(std::vector<int64_t>{0, 1, 2, 2}, {4});
//   Tensor dst = ops::from_vector(std::vector<int64_t>{1, 2, 0, 1}, {4});
//   Graph g = Graph::from_edges(3, src, dst).add_self_loops();
//   Tensor w = g.symmetric_norm();   // PyG's gcn_norm weights, one per edge in CSC order
//
// Node type t holds the global ids [type_offset(t), type_offset(t + 1)). A relation is (source
// type, name, destination type). Edges are stored sorted by (relation, destination, source, input
// position): CSC. in_offsets() cuts them per relation and destination, and the transpose (CSR:
// sorted by relation, source, destination) is built once beside it, with csr_edges() giving each
// CSR edge's CSC position, so backward passes gather instead of scattering with atomics. Per-edge
// data (weights, attention scores) is kept in CSC order; edge_ids() maps a CSC position to the
// edge's position in the input, so input-order edge features follow with one index_select. Ids are
// i32 when every node id fits, else i64. A graph lives on a device and moves with to().
//
// A graph is immutable. What its const operations derive from it (degrees, the normalisation,
// the graph without or with self loops) is computed once and kept with it, shared by its copies
// (thread-safe), so layers that each ask for it per call pay once; it lives as long as the graph.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "strata/core/tensor.h"

namespace strata {

struct Relation {
  int64_t src_type = 0;
  std::string name = "edge";
  int64_t dst_type = 0;
  friend bool operator==(const Relation&, const Relation&) = default;
};

// Every relation's edges merged per node: node v's entries are [offsets[v], offsets[v + 1]) of
// `others` (the edge's other end) and `positions` (its CSC position; undefined: the identity), in
// relation order (Graph::in_edges_merged, out_edges_merged).
struct MergedEdges {
  Tensor offsets;    // i64 [N + 1]
  Tensor others;     // [E]
  Tensor positions;  // [E] or undefined
};

// The distinct (node, relation) pairs among the edges' sources (or destinations), grouped by
// relation: the rows of compact materialization, where a message that depends only on the source
// node and the relation is computed once per pair instead of once per edge (Hector). Relation r's
// pairs are [offsets[r], offsets[r + 1]) in increasing node order; the edges of pair p are the CSR
// (for destinations: CSC) positions [edge_offsets[p], edge_offsets[p + 1]).
struct NodeRelationPairs {
  std::vector<int64_t> offsets;  // [R + 1], on the host
  Tensor nodes;                  // [P] global node id of each pair
  Tensor edge_pair;              // [E] the pair of each edge, CSC order
  Tensor merged_pair;            // [E] the pair of each entry of in_edges_merged() (source pairs;
                                 // undefined for destination pairs: Graph::destination_merged_pair)
  Tensor edge_offsets;           // i64 [P + 1]
  Tensor relation;               // [P] the relation of each pair (offsets' segment), index dtype
  int64_t size() const { return offsets.empty() ? 0 : offsets.back(); }
};

class Graph {
 public:
  Graph() = default;

  // A homogeneous graph of `num_nodes` nodes; edge e goes src[e] -> dst[e] (integer tensors [E]
  // on the CPU). Throws IndexError naming the edge and the id that is out of range.
  static Graph from_edges(int64_t num_nodes, const Tensor& src, const Tensor& dst);
  // A heterogeneous graph: `nodes_per_type[t]` nodes of type `node_types[t]`, edge e of relation
  // rel[e] goes src[e] -> dst[e] in global ids, which must lie in the relation's source and
  // destination types (IndexError naming the edge otherwise).
  static Graph from_typed_edges(std::vector<std::string> node_types,
                                const std::vector<int64_t>& nodes_per_type, std::vector<Relation> relations,
                                const Tensor& src, const Tensor& dst, const Tensor& rel);
  // The index dtype for a graph of `num_nodes` nodes and `num_edges` edges: i32 when both fit.
  static DType index_dtype_for(int64_t num_nodes, int64_t num_edges);

  bool defined() const { return !type_offsets_.empty(); }
  int64_t num_nodes() const { return type_offsets_.empty() ? 0 : type_offsets_.back(); }
  int64_t num_edges() const { return relation_offsets_.empty() ? 0 : relation_offsets_.back(); }
  int64_t num_node_types() const { return int64_t(node_types_.size()); }
  int64_t num_relations() const { return int64_t(relations_.size()); }
  const std::vector<std::string>& node_types() const { return node_types_; }
  const std::vector<Relation>& relations() const { return relations_; }
  int64_t type_offset(int64_t t) const { return type_offsets_.at(size_t(t)); }
  int64_t nodes_of_type(int64_t t) const { return type_offset(t + 1) - type_offset(t); }
  // Edges [relation_offset(r), relation_offset(r + 1)) of the CSC (and of the CSR) are relation r's.
  int64_t relation_offset(int64_t r) const { return relation_offsets_.at(size_t(r)); }
  DType index_dtype() const { return src_.dtype(); }
  Device device() const { return src_.device(); }

  // CSC, [E] each: source, destination (global ids) and input position of each edge.
  const Tensor& src() const { return src_; }
  const Tensor& dst() const { return dst_; }
  const Tensor& edge_ids() const { return edge_ids_; }
  // Relation r's in-edges of its destination type's k-th node are the CSC positions
  // [in_offsets[in_start(r) + k], in_offsets[in_start(r) + k + 1]).
  const Tensor& in_offsets() const { return in_offsets_; }
  int64_t in_start(int64_t r) const { return in_starts_.at(size_t(r)); }
  // CSR, [E] each: source and destination of each edge sorted by (relation, source, destination),
  // and its CSC position. Relation r's out-edges of its source type's k-th node are the CSR
  // positions [out_offsets[out_start(r) + k], out_offsets[out_start(r) + k + 1]).
  const Tensor& csr_src() const { return csr_src_; }
  const Tensor& csr_dst() const { return csr_dst_; }
  const Tensor& csr_edges() const { return csr_edges_; }
  const Tensor& out_offsets() const { return out_offsets_; }
  int64_t out_start(int64_t r) const { return out_starts_.at(size_t(r)); }

  // In- and out-degree of every node over all relations, i64 [N] (kept: do not modify).
  Tensor in_degrees() const;
  Tensor out_degrees() const;
  // A self loop (v, v) for every node of every relation whose source and destination types are
  // the same, beside the edges already there (duplicates and loops stay); the loops' edge ids
  // continue after the largest.
  Graph add_self_loops() const;
  // The graph without its self loops (edges (v, v)); the other edges keep their ids.
  Graph remove_self_loops() const;
  // The id add_self_loops gives its first loop: the largest edge id + 1 (0 without edges).
  int64_t next_edge_id() const;
  // Each relation (s, name, d) gains its reverse ("rev_" + name: d -> s); the reverse edges' ids
  // continue after the largest, in edge-id order.
  Graph with_reverse_relations() const;
  // PyG's gcn_norm without self loops added: deg(v) = in-edges of v (all relations), and edge
  // (u, v) gets deg(u)^-1/2 deg(v)^-1/2 (0 where a degree is 0); [E] of `dtype` (f32, f64) in CSC
  // order (kept: do not modify).
  Tensor symmetric_norm(DType dtype = DType::f32) const;

  // In-edges (out-edges) of every node over all relations (kept). For a homogeneous graph these
  // are the CSC (CSR) as stored.
  MergedEdges in_edges_merged() const;
  MergedEdges out_edges_merged() const;
  // Each CSC edge's entry in in_edges_merged() (the inverse of its positions; kept), [E].
  Tensor in_edges_merged_rank() const;
  // 1 / |N_r(v)| for every CSC edge (v, its destination; r, its relation): the weights of a mean
  // over each destination's in-edges of one relation, [E] of `dtype` (f32, f64; kept).
  Tensor relation_mean_norm(DType dtype = DType::f32) const;
  // The relation of each CSC edge and the type of each node, i64 [E] and [N] (kept).
  Tensor edge_relations() const;
  Tensor node_type_ids() const;
  // Distinct (source, relation) and (destination, relation) pairs (kept). P / E of the sources is
  // the graph's compaction ratio.
  NodeRelationPairs source_pairs() const;
  NodeRelationPairs destination_pairs() const;
  // The destination pair of each entry of out_edges_merged(), [E] (kept apart from
  // destination_pairs(), so that only what needs it keeps it and the merged out-edges).
  Tensor destination_merged_pair() const;

  Graph to(Device device) const;

 private:
  struct Derived;  // what the const operations computed (graph.cpp)
  // derived_ under its lock: the kept value, else compute() kept.
  template <class T, class F>
  T kept(std::optional<T> Derived::*slot, F compute) const;
  Graph with_loops_built() const;
  Graph without_loops_built() const;
  Tensor norm_built(DType dtype) const;
  MergedEdges merged_built(bool by_source) const;
  NodeRelationPairs pairs_built(bool sources, const MergedEdges& other_end) const;
  // From edges in global ids (CPU, i64) and the metadata: sorts, builds the offsets and the CSR.
  static Graph build(std::vector<std::string> node_types, std::vector<int64_t> type_offsets,
                     std::vector<Relation> relations, const std::vector<int64_t>& src,
                     const std::vector<int64_t>& dst, const std::vector<int64_t>& rel,
                     const std::vector<int64_t>& edge_ids);
  // The edges by increasing edge id (CPU i64), with their ids: this graph's, to rebuild from.
  void edges_by_id(std::vector<int64_t>* src, std::vector<int64_t>* dst, std::vector<int64_t>* rel,
                   std::vector<int64_t>* ids) const;

  std::vector<std::string> node_types_;
  std::vector<int64_t> type_offsets_;  // [T + 1]
  std::vector<Relation> relations_;
  std::vector<int64_t> relation_offsets_;        // [R + 1]
  std::vector<int64_t> in_starts_, out_starts_;  // [R]
  Tensor src_, dst_, edge_ids_, in_offsets_;
  Tensor csr_src_, csr_dst_, csr_edges_, out_offsets_;
  std::shared_ptr<Derived> derived_;
};

}  // namespace strata
