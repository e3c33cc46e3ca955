// SelfLoopCache: a layer's copy of its last input graph with its self loops replaced (PyG's
// remove_self_loops + add_self_loops), rebuilt only when a different graph comes in. The cached
// input graph is held, so its storage (the identity compared) cannot be reused by another graph.
#pragma once

#include <algorithm>
#include <cstdint>

#include "strata/ops/graph.h"

namespace strata::nn {

class SelfLoopCache {
 public:
  // g without its loops, and with one loop per node added (ids after the largest of the first).
  const Graph& without_loops(const Graph& g) {
    refresh(g);
    return without_;
  }
  const Graph& with_loops(const Graph& g) {
    refresh(g);
    return with_;
  }
  // The id of the first added loop (node v's loop is first_loop_id + v on a homogeneous graph).
  int64_t first_loop_id(const Graph& g) {
    refresh(g);
    return first_loop_;
  }

 private:
  void refresh(const Graph& g) {
    if (key_.defined() && key_.src().defined() && g.src().defined() &&
        key_.src().data_ptr() == g.src().data_ptr() && key_.num_edges() == g.num_edges() &&
        key_.num_nodes() == g.num_nodes() && key_.device() == g.device())
      return;
    key_ = g;
    without_ = g.remove_self_loops();
    with_ = without_.add_self_loops();
    first_loop_ = 0;
    for (int64_t id : without_.edge_ids().to(kCPU).to(DType::i64).to_vector<int64_t>())
      first_loop_ = std::max(first_loop_, id + 1);
  }
  Graph key_, without_, with_;
  int64_t first_loop_ = 0;
};

}  // namespace strata::nn
