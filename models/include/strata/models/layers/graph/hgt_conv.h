// HGTConv: the heterogeneous graph transformer layer (Hu et al.) with PyTorch Geometric's
// semantics and parameter names (kqv_lin, out_lin, k_rel, v_rel, skip, p_rel), its keys and
// values computed per edge or once per (source node, relation) pair, with the node-type
// projections (and the scores' p_rel / sqrt(D)) folded into the relation matrices or not
// (strata/models/layers/graph/materialization.h).
//
//   nn::HGTConv conv(64, 64, g.node_types(), g.relations(), {.heads = 2});
//   Tensor h = conv.forward(g, x);  // x [N, 64] over every node type's global ids -> [N, 64]
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "strata/models/layers/graph/graph_conv.h"
#include "strata/models/layers/graph/materialization.h"
#include "strata/models/layers/linear.h"
#include "strata/ops/graph.h"

namespace strata::nn {

struct HGTConvOptions {
  int64_t heads = 1;
};

// Per node n of type t: [k | q | v] = kqv_lin.lins.t(x_n) (Linear in -> 3 out). Per edge
// e = (j -> i) of relation r and head h (D = out / heads): k'_e = k_j[h] k_rel[h R + r],
// v'_e = v_j[h] v_rel[h R + r], s_e = <q_i[h], k'_e> p_rel_r[h] / sqrt(D), alpha = softmax of s
// over all of i's in-edges (every relation); m_i = the alpha-weighted sum of v'_e per head;
// a_i = out_lin.lins.t(gelu(m_i)); y_i = sigmoid(skip_t) a_i + (1 - sigmoid(skip_t)) x_i when
// out == in, else a_i (torch_geometric.nn.HGTConv). Every node gets a row, including those of types
// no relation points to (PyG leaves those types out; their rows here are out_lin of gelu(0)).
// Parameters as PyG names them: kqv_lin.lins.<type>.{weight, bias}, out_lin.lins.<type>.{weight,
// bias}, k_rel.weight and v_rel.weight [heads R, D, D], skip.<type> [1], p_rel.<src>__<rel>__<dst>
// [1, heads]. Rows h R + r of k_rel and v_rel belong to the graph's relation r (for hetero_graph,
// the r-th edge type given), and p_rel is keyed by the relation's edge type, as PyG keys it.
class HGTConv : public GraphConv {
 public:
  HGTConv(int64_t in_channels, int64_t out_channels, std::vector<std::string> node_types,
          std::vector<Relation> relations, HGTConvOptions options = {});
  // x [N, in] in the graph's global node ids -> [N, out]; the graph's node types and relations
  // must be the layer's.
  Tensor forward(const Graph& g, const Tensor& x);
  // The whole graph only: a block with destinations of its own is NotImplementedError.
  Tensor forward(const GraphBlock& block, const Tensor& x) override {
    return forward(whole_graph(block, "HGTConv"), x);
  }
  // kEdgeWise or kCompact, and whether the type projections are folded into k_rel and v_rel (and
  // p_rel / sqrt(D) into k_rel).
  MaterializationPlan plan(const Graph& g) const override;
  void set_materialization(Materialization m);
  void set_reorder(std::optional<bool> reorder) { reorder_ = reorder; }
  void reset_parameters();

  std::vector<std::shared_ptr<Linear>> kqv_lin, out_lin;  // per node type
  Tensor k_rel, v_rel;
  std::vector<Tensor> skip, p_rel;  // per node type, per relation

 private:
  int64_t in_, out_, heads_;
  std::vector<std::string> node_types_;
  std::vector<Relation> relations_;
  Materialization materialization_ = Materialization::kAuto;
  std::optional<bool> reorder_;
};

}  // namespace strata::nn
