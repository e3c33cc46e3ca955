// Synthetic graphs: R-MAT (skewed degrees, for kernel and loader benchmarks), a typed R-MAT
// shaped like ogbn-mag (relational GNN benchmarks and entity classification), and a
// degree-corrected stochastic block model with planted classes and class-informative features
// (a node classification task of known difficulty). All are deterministic functions of their
// options, seed included, whatever the number of OpenMP threads.
//
//   GraphDataset big = io::generate_rmat({.scale = 20, .edge_factor = 16, .seed = 1});
//   GraphDataset mag = io::generate_typed_rmat({.total_edges = 10'000'000, .reverse_relations = true});
//   GraphDataset task = io::generate_dcsbm({.num_nodes = 2000, .num_blocks = 4, .mixing = 0.3});
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "strata/io/graphs/graph_dataset.h"

namespace strata::io {

// R-MAT (Chakrabarti, Zhan, Faloutsos, SDM 2004): each edge picks one quadrant of the adjacency
// matrix per level with probabilities a, b (src half 0, dst half 1), c, d, over `scale` levels.
struct RmatOptions {
  int scale = 16;                                 // 2^scale nodes (1..31)
  int64_t edge_factor = 16;                       // edge_factor * 2^scale edges drawn
  double a = 0.57, b = 0.19, c = 0.19, d = 0.05;  // must sum to 1
  uint64_t seed = 0;
  // Relabel the nodes by a random permutation, as Graph500's generator does, so that the hubs
  // are not the low ids.
  bool permute_ids = true;
  bool remove_self_loops = false;
  bool remove_duplicates = false;
  // Each drawn edge in both directions (duplicates then judged on the unordered pair).
  bool undirected = false;
};

struct GeneratedEdges {
  int64_t num_nodes = 0;
  Tensor src, dst;  // i64 [E] on the CPU
};

// The edges alone: drawn in parallel (OpenMP over edge chunks), edge e from Philox blocks of its
// own, so the result does not depend on the thread count. Without removals E = edge_factor *
// 2^scale (twice that when undirected: edge e's reverse is edge e + E/2); removals keep the
// first occurrence in that order.
GeneratedEdges rmat_edges(const RmatOptions& options);
// The same edges as a GraphDataset named "rmat(scale=S, edge_factor=F)", without features,
// labels or masks.
GraphDataset generate_rmat(const RmatOptions& options);

// A typed R-MAT: node types as consecutive id ranges and relations each drawn by its own R-MAT
// on the (source type x destination type) matrix, rows and columns each split over
// ceil(log2(count)) levels (the shorter side stops splitting first) and a cell's position scaled
// onto the type's count. A node keeps one matrix position per type, so a hub of one relation of
// its type is a hub of the others too (a prolific author writes many papers and has many
// affiliations), and the Graph500 permutation relabels each type's nodes.
//
// Planted classes: every node has one of num_classes classes, each aligned block of num_classes
// matrix positions holding every class once in a random rotation (so class sizes differ by at
// most one per type, and no class is favoured by the R-MAT's low bits). An edge's destination
// moves, with probability `homophily`, to the position of its block whose class is the source's:
// degrees keep their skew above the block scale (within a block the moved edges spread evenly)
// while edges join same-class nodes. The label type's nodes are labelled with their class and get
// class features (dcsbm's: a class mean plus N(0, 1) noise), so a 2-layer relational GNN reads the
// class from a paper's features, its citations, and its authors' and fields' other papers.
struct TypedRmatRelation {
  std::string src_type, name, dst_type;
  int64_t num_edges = 0;
  double a = 0.57, b = 0.19, c = 0.19, d = 0.05;  // must sum to 1 (a + b: rows in the top half)
};

struct TypedRmatOptions {
  // (name, count) per node type, in id order. Default: ogbn-mag's four types and counts.
  std::vector<std::pair<std::string, int64_t>> node_types{
      {"paper", 736389}, {"author", 1134649}, {"institution", 8740}, {"field_of_study", 59965}};
  // Default: ogbn-mag's relations and edge counts; the skews put most of the mass on the side
  // where mag's degrees are skewed (institutions, fields of study, cited papers, prolific
  // authors) and less on the other.
  std::vector<TypedRmatRelation> relations{
      {"author", "affiliated_with", "institution", 1043998, 0.45, 0.10, 0.30, 0.15},
      {"author", "writes", "paper", 7145660, 0.35, 0.25, 0.20, 0.20},
      {"paper", "cites", "paper", 5416271, 0.57, 0.19, 0.19, 0.05},
      {"paper", "has_topic", "field_of_study", 7505078, 0.40, 0.15, 0.30, 0.15}};
  // > 0: every node and edge count above is scaled by total_edges / (their edge sum), the edge
  // counts rounded to sum to total_edges exactly (largest remainders) and each node count to at
  // least 1, so the graph keeps its mean degrees: 50'000 to 60'000'000 are the intended range.
  // 0: the counts as given (mag's 21.1M edges, 1.94M nodes by default).
  int64_t total_edges = 1'000'000;
  // Each relation (s, name, d) also gets its reverse "rev_<name>" (d -> s), edge e's reverse
  // being edge e + E, as Graph::with_reverse_relations builds it.
  bool reverse_relations = false;
  bool permute_ids = true;
  std::string label_type = "paper";  // the node type that is labelled and has features
  int64_t num_classes = 16;
  // In [0, 1]; 0: a plain typed R-MAT whose labels have nothing to do with its edges. At 0.3, a
  // classifier on a paper's features alone gets about 20% of 16 classes right, and one that also
  // reads its citations' and its authors' and fields' papers' mean features about 78%.
  double homophily = 0.3;
  // Features f32 [N, feature_dim] for all N nodes: the label type's rows as in DcsbmOptions, the
  // other types' rows zero (N * feature_dim * 4 bytes: lower it for the largest graphs). 0: none.
  int64_t feature_dim = 128;
  double feature_signal = 1.0;
  uint64_t seed = 0;
};

// Edges in relation order, relation r's as the consecutive input edges after relation r - 1's,
// each drawn from Philox blocks of its own (the same graph for any thread count); duplicates and
// self loops stay, so relation r has exactly its num_edges. Labels (-1 outside the label type),
// num_classes, features, and node_properties["class"]: every node's planted class, i64 [N]. No
// masks (split_nodes draws them). Named "typed_rmat(edges=E)", E without the reverse edges.
GraphDataset generate_typed_rmat(const TypedRmatOptions& options = {});

// A degree-corrected stochastic block model (Karrer and Newman, PRE 83, 016107, 2011), undirected,
// sampled in O(N + E): intra-block edges per block and inter-block edges by rejection, each end
// drawn in proportion to its node's degree propensity (Walker alias tables).
struct DcsbmOptions {
  int64_t num_nodes = 1000;
  int64_t num_blocks = 4;
  // Block sizes summing to num_nodes (num_blocks is then their count); empty: equal sizes (the
  // first num_nodes % num_blocks blocks one larger). Block r holds the consecutive ids after
  // block r - 1's, and its nodes are labelled r.
  std::vector<int64_t> block_sizes{};
  // Mean degree (each undirected edge counted at both ends); <= 0: the propensities' mean.
  double avg_degree = 10;
  // Expected fraction of a node's edges that leave its block (exact for equal block sizes): 0 puts
  // every edge inside its block, 1 - 1/num_blocks is no community structure at all.
  double mixing = 0.2;
  // Degree propensities drawn from a power law p(x) ~ x^-degree_exponent on [min_degree,
  // num_nodes - 1]; degree_exponent <= 1 gives every node the same propensity (a plain SBM).
  double degree_exponent = 2.5;
  double min_degree = 2;
  // Features f32 [N, feature_dim]: node i's class mean plus N(0, 1) noise per dimension, the class
  // means being feature_signal times random unit vectors. 0 dims: no features.
  int64_t feature_dim = 16;
  double feature_signal = 1.0;
  uint64_t seed = 0;
};

// Labels (num_classes = the block count) and features, no masks (split_nodes draws them). Self
// loops are redrawn and duplicate pairs dropped, so E comes out slightly below N * avg_degree;
// edge e's reverse is edge e + E/2.
GraphDataset generate_dcsbm(const DcsbmOptions& options);

}  // namespace strata::io
