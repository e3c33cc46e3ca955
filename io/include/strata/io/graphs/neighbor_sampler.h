// NeighborSampler: fanout neighbour sampling of a homogeneous graph into blocks (DGL's
// message-flow graphs), the input of minibatch GNN training.
//
//   NeighborSampler sampler(graph, /*fanouts=*/{15, 10}, /*seed=*/0);  // input layer first
//   std::vector<SampledBlock> blocks = sampler.sample(seeds, epoch, batch_index);
//   // blocks[0] reads features of blocks[0].nodes; blocks.back() ends at the seeds.
//
// Fanouts are listed input layer first, the way DGL's NeighborSampler([15, 10]) lists them:
// fanouts[l] is how many in-neighbours each destination of blocks[l] draws, so fanouts.back() is
// what every seed draws and fanouts[0] what the nodes farthest from the seeds draw. PyTorch
// Geometric's num_neighbors lists hops from the seeds outward, the reverse: PyG's [15, 10] is
// {10, 15} here. -1 takes every in-neighbour.
//
// Each destination takes min(fanout, in-degree) of its in-edges uniformly without replacement
// (Floyd's algorithm, "Programming Pearls: A sample of brilliance", CACM 30(9), 1987), with
// Philox words keyed by (seed, epoch, batch index, layer) and counted per node id: a batch is the
// same bits whichever thread makes it, and in whatever order.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "strata/core/tensor.h"
#include "strata/ops/graph.h"

namespace strata::io {

// One layer's bipartite message-flow graph. Local node i is global node nodes[i]; the first
// num_dst local nodes are the destinations (the next block's nodes, or the seeds for the last
// block), then the sources that are not destinations, in order of first appearance while the
// destinations are scanned in order and their sampled in-edges in the parent's CSC order.
struct SampledBlock {
  // Homogeneous, over the block's num_src() local nodes; every edge u -> v has v < num_dst. Its
  // input edge order is its CSC order (by destination, then local source), so edge_ids() is the
  // identity.
  Graph graph;
  int64_t num_dst = 0;
  Tensor nodes;         // i64 [num_src]: global id of each local node, destinations first
  Tensor parent_edges;  // i64 [E_block]: parent edge id (input order) of each block edge (input order)
  int64_t num_src() const { return nodes.defined() ? nodes.numel() : 0; }
};

// `num_layers` blocks that are the whole of `graph`: each block's graph is `graph` itself,
// num_dst = N, nodes and parent_edges the identity. Lets a trainer run full-graph and sampled
// training through one code path. Throws NotImplementedError for a typed graph.
std::vector<SampledBlock> full_graph_blocks(const Graph& graph, int64_t num_layers);

class NeighborSampler {
 public:
  // `graph` must be homogeneous and on the CPU (NotImplementedError / DeviceError otherwise);
  // fanouts as above, each positive or -1 (ValueError otherwise), at least one.
  NeighborSampler(Graph graph, std::vector<int64_t> fanouts, uint64_t seed = 0);
  ~NeighborSampler();
  NeighborSampler(NeighborSampler&&) noexcept;
  NeighborSampler& operator=(NeighborSampler&&) noexcept;

  // fanouts().size() blocks for `seeds` (global ids, distinct: ValueError names a repeat,
  // IndexError one out of range), input layer first. Thread safe: concurrent calls each take
  // their own workspace.
  std::vector<SampledBlock> sample(std::span<const int64_t> seeds, int64_t epoch, int64_t batch_index) const;
  // The same for an integer CPU tensor [B] of seeds.
  std::vector<SampledBlock> sample(const Tensor& seeds, int64_t epoch, int64_t batch_index) const;

  const Graph& graph() const { return graph_; }
  const std::vector<int64_t>& fanouts() const { return fanouts_; }
  int64_t num_layers() const { return int64_t(fanouts_.size()); }
  uint64_t seed() const { return seed_; }

 private:
  struct WorkspacePool;
  Graph graph_;
  std::vector<int64_t> fanouts_;
  uint64_t seed_ = 0;
  std::unique_ptr<WorkspacePool> pool_;  // per-thread relabel tables, reused across calls
};

}  // namespace strata::io
