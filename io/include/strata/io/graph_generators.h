// Synthetic graphs: R-MAT (skewed degrees, for kernel and loader benchmarks) and a
// degree-corrected stochastic block model with planted classes and class-informative features
// (a node classification task of known difficulty). Both are deterministic functions of their
// options, seed included, whatever the number of OpenMP threads.
//
//   GraphDataset big = io::generate_rmat({.scale = 20, .edge_factor = 16, .seed = 1});
//   GraphDataset task = io::generate_dcsbm({.num_nodes = 2000, .num_blocks = 4, .mixing = 0.3});
#pragma once

#include <cstdint>
#include <vector>

#include "strata/io/graph_dataset.h"

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
