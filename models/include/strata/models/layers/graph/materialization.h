// How a relational layer computes its typed linears over the edges (Hector's choices): per edge,
// once per (source node, relation) pair, or after aggregating per (destination, relation) pair,
// with or without multiplying adjacent weights first. A plan is an inspectable value: layers
// choose one from the graph's pair counts and a cost estimate, and users print or override it.
//
//   nn::RGCNConv conv(64, 64, R);
//   std::cout << conv.plan(g).str();                          // what forward will do on g
//   conv.set_materialization(nn::Materialization::kCompact);  // override the choice
#pragma once

#include <cstdint>
#include <string>

#include "strata/ops/graph.h"

namespace strata::nn {

enum class Materialization {
  kAuto,            // the layer's cost estimate chooses
  kEdgeWise,        // a message row per edge: x[src e] W_r, E rows
  kCompact,         // a row per distinct (source, relation) pair, gathered per edge: P rows
  kAggregateFirst,  // aggregate x per (destination, relation) pair, then transform: D rows
};

// "auto", "edge", "compact", "aggregate_first" (and back); ValueError on anything else.
std::string materialization_name(Materialization m);
Materialization materialization_from_name(const std::string& name);

struct MaterializationPlan {
  std::string layer;  // "RGCNConv", ...
  Materialization strategy = Materialization::kEdgeWise;
  bool reorder = false;  // adjacent linear operators multiplied weights-first
  int64_t edges = 0, source_pairs = 0, destination_pairs = 0;
  // Estimated forward multiply-adds and the elements of the rows it materializes, per strategy
  // (negative: not offered by the layer).
  double cost_edge = -1, cost_compact = -1, cost_aggregate_first = -1;
  double rows_edge = -1, rows_compact = -1, rows_aggregate_first = -1;

  // Source pairs per edge: the fraction of the edge-wise rows compact materialization computes.
  double compaction_ratio() const { return edges > 0 ? double(source_pairs) / double(edges) : 1.0; }
  // One line: the choice, the graph's counts and every strategy's estimate.
  std::string str() const;
};

// Counts of g (edges, source and destination pairs) in a plan for `layer`; no strategy offered yet.
MaterializationPlan plan_counts(const std::string& layer, const Graph& g);
// The cheapest offered strategy (least cost, then fewest rows), or `forced` unless kAuto.
Materialization cheapest(const MaterializationPlan& p, Materialization forced);

}  // namespace strata::nn
