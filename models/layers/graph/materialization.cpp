#include "strata/models/layers/graph/materialization.h"

#include <cstdio>
#include <limits>
#include <tuple>

#include "strata/core/error.h"

namespace strata::nn {

std::string materialization_name(Materialization m) {
  switch (m) {
    case Materialization::kAuto: return "auto";
    case Materialization::kEdgeWise: return "edge";
    case Materialization::kCompact: return "compact";
    case Materialization::kAggregateFirst: return "aggregate_first";
  }
  return "?";
}

Materialization materialization_from_name(const std::string& name) {
  for (Materialization m : {Materialization::kAuto, Materialization::kEdgeWise, Materialization::kCompact,
                            Materialization::kAggregateFirst})
    if (materialization_name(m) == name) return m;
  throw ValueError("materialization '" + name + "' is not one of auto, edge, compact, aggregate_first");
}

std::string MaterializationPlan::str() const {
  char buf[512];
  auto cost = [](double c, double rows) {
    if (c < 0) return std::string("-");
    char b[64];
    std::snprintf(b, sizeof b, "%.3g MAC, %.3g elements", c, rows);
    return std::string(b);
  };
  std::snprintf(buf, sizeof buf,
                "%s: %s%s; %lld edges, %lld source pairs (compaction %.3f), %lld destination pairs; edge %s, "
                "compact %s, aggregate_first %s",
                layer.c_str(), materialization_name(strategy).c_str(), reorder ? " reordered" : "",
                static_cast<long long>(edges), static_cast<long long>(source_pairs), compaction_ratio(),
                static_cast<long long>(destination_pairs), cost(cost_edge, rows_edge).c_str(),
                cost(cost_compact, rows_compact).c_str(),
                cost(cost_aggregate_first, rows_aggregate_first).c_str());
  return buf;
}

MaterializationPlan plan_counts(const std::string& layer, const Graph& g) {
  MaterializationPlan p;
  p.layer = layer;
  p.edges = g.num_edges();
  p.source_pairs = g.source_pairs().size();
  p.destination_pairs = g.destination_pairs().size();
  return p;
}

Materialization cheapest(const MaterializationPlan& p, Materialization forced) {
  if (forced != Materialization::kAuto) return forced;
  Materialization best = Materialization::kEdgeWise;
  double best_cost = std::numeric_limits<double>::infinity(), best_rows = best_cost;
  for (auto [m, c, r] :
       {std::tuple{Materialization::kEdgeWise, p.cost_edge, p.rows_edge},
        std::tuple{Materialization::kCompact, p.cost_compact, p.rows_compact},
        std::tuple{Materialization::kAggregateFirst, p.cost_aggregate_first, p.rows_aggregate_first}}) {
    if (c < 0) continue;
    if (c < best_cost || (c == best_cost && r < best_rows)) best = m, best_cost = c, best_rows = r;
  }
  return best;
}

}  // namespace strata::nn
