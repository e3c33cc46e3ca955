#include "strata/ops/hetero_graph.h"

#include <algorithm>
#include <set>

#include "strata/core/error.h"
#include "strata/ops/factory.h"
#include "strata/ops/shape_ops.h"

namespace strata {

namespace {

std::string type_list(const std::vector<std::string>& types) {
  std::string s;
  for (const std::string& t : types) s += (s.empty() ? "'" : ", '") + t + "'";
  return s;
}

}  // namespace

Graph hetero_graph(const std::vector<std::pair<std::string, int64_t>>& num_nodes,
                   const std::vector<TypedEdgeIndex>& edge_index) {
  std::vector<std::string> types;
  std::vector<int64_t> counts, offsets{0};
  for (const auto& [type, n] : num_nodes) {
    STRATA_CHECK(std::find(types.begin(), types.end(), type) == types.end(), ValueError,
                 "hetero_graph: node type '", type, "' is given twice");
    STRATA_CHECK(n >= 0, ValueError, "hetero_graph: node type '", type, "' has ", n, " nodes");
    types.push_back(type);
    counts.push_back(n);
    offsets.push_back(offsets.back() + n);
  }
  STRATA_CHECK(!types.empty(), ValueError, "hetero_graph: no node type");
  STRATA_CHECK(!edge_index.empty(), ValueError, "hetero_graph: no edge type");
  auto index_of = [&](const std::string& type, const EdgeType& et) {
    auto it = std::find(types.begin(), types.end(), type);
    STRATA_CHECK(it != types.end(), ValueError, "hetero_graph: edge type ('", et.src, "', '", et.rel, "', '",
                 et.dst, "') names node type '", type, "', which is not among ", type_list(types));
    return int64_t(it - types.begin());
  };
  std::vector<Relation> relations;
  std::vector<int64_t> src, dst, rel;
  std::set<std::string> seen;
  for (const TypedEdgeIndex& e : edge_index) {
    const EdgeType& et = e.type;
    STRATA_CHECK(seen.insert(et.key()).second, ValueError, "hetero_graph: edge type ('", et.src, "', '",
                 et.rel, "', '", et.dst, "') is given twice");
    const int64_t s = index_of(et.src, et), d = index_of(et.dst, et);
    const Tensor& ei = e.edge_index;
    STRATA_CHECK(ei.defined() && ei.dim() == 2 && ei.size(0) == 2 && is_integral(ei.dtype()), ValueError,
                 "hetero_graph: the edge index of ('", et.src, "', '", et.rel, "', '", et.dst,
                 "') must be an integer tensor [2, E], not ",
                 ei.defined() ? std::string(dtype_name(ei.dtype())) + " " + shape_str(ei.sizes())
                              : std::string("undefined"));
    const std::vector<int64_t> v = ei.to_vector<int64_t>();
    const size_t E = size_t(ei.size(1));
    const int64_t r = int64_t(relations.size());
    for (size_t k = 0; k < E; ++k) {
      const int64_t a = v[k], b = v[E + k];
      STRATA_CHECK(a >= 0 && a < counts[size_t(s)], IndexError, "hetero_graph: edge ", k, " of ('", et.src,
                   "', '", et.rel, "', '", et.dst, "') starts at local id ", a, ", outside '", et.src,
                   "' [0, ", counts[size_t(s)], ")");
      STRATA_CHECK(b >= 0 && b < counts[size_t(d)], IndexError, "hetero_graph: edge ", k, " of ('", et.src,
                   "', '", et.rel, "', '", et.dst, "') ends at local id ", b, ", outside '", et.dst, "' [0, ",
                   counts[size_t(d)], ")");
      src.push_back(a + offsets[size_t(s)]);
      dst.push_back(b + offsets[size_t(d)]);
      rel.push_back(r);
    }
    relations.push_back({.src_type = s, .name = et.rel, .dst_type = d});
  }
  const int64_t E = int64_t(src.size());
  return Graph::from_typed_edges(types, counts, relations, ops::from_vector(src, {E}),
                                 ops::from_vector(dst, {E}), ops::from_vector(rel, {E}));
}

int64_t node_type_index(const Graph& g, const std::string& type) {
  const auto& types = g.node_types();
  auto it = std::find(types.begin(), types.end(), type);
  STRATA_CHECK(it != types.end(), ValueError, "node type '", type, "' is not among the graph's ",
               type_list(types));
  return int64_t(it - types.begin());
}

Tensor cat_node_features(const Graph& g, const std::map<std::string, Tensor>& x) {
  for (const auto& [type, rows] : x) (void)node_type_index(g, type);  // an unknown type is refused by name
  std::vector<Tensor> parts;
  int64_t width = -1;
  std::string first;
  for (int64_t t = 0; t < g.num_node_types(); ++t) {
    const std::string& type = g.node_types()[size_t(t)];
    auto it = x.find(type);
    STRATA_CHECK(it != x.end(), ValueError, "cat_node_features: no features for node type '", type, "'");
    const Tensor& rows = it->second;
    STRATA_CHECK(rows.dim() == 2 && rows.size(0) == g.nodes_of_type(t), ShapeError, "cat_node_features: '",
                 type, "' has ", g.nodes_of_type(t), " nodes, its features are ", shape_str(rows.sizes()));
    if (width < 0) width = rows.size(1), first = type;
    STRATA_CHECK(rows.size(1) == width, ShapeError, "cat_node_features: '", type, "' features are ",
                 rows.size(1), " wide, '", first, "' ", width,
                 " (project each type to one width first: nn::HeteroDictLinear)");
    parts.push_back(rows);
  }
  return parts.size() == 1 ? parts[0] : ops::cat(parts, 0);
}

std::map<std::string, Tensor> split_node_rows(const Graph& g, const Tensor& x) {
  STRATA_CHECK(x.dim() >= 1 && x.size(0) == g.num_nodes(), ShapeError, "split_node_rows: ", g.num_nodes(),
               " nodes, rows ", shape_str(x.sizes()));
  std::map<std::string, Tensor> out;
  for (int64_t t = 0; t < g.num_node_types(); ++t)
    out[g.node_types()[size_t(t)]] = ops::narrow(x, 0, g.type_offset(t), g.nodes_of_type(t));
  return out;
}

Tensor to_global_ids(const Graph& g, const std::string& type, const Tensor& local) {
  const int64_t t = node_type_index(g, type);
  std::vector<int64_t> v = local.to_vector<int64_t>();
  for (int64_t& id : v) {
    STRATA_CHECK(id >= 0 && id < g.nodes_of_type(t), IndexError, "to_global_ids: local id ", id, " outside '",
                 type, "' [0, ", g.nodes_of_type(t), ")");
    id += g.type_offset(t);
  }
  return ops::from_vector(v, local.sizes());
}

std::pair<Tensor, Tensor> to_local_ids(const Graph& g, const Tensor& global) {
  std::vector<int64_t> v = global.to_vector<int64_t>(), types(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    STRATA_CHECK(v[i] >= 0 && v[i] < g.num_nodes(), IndexError, "to_local_ids: id ", v[i], " outside [0, ",
                 g.num_nodes(), ")");
    int64_t t = 0;
    while (v[i] >= g.type_offset(t + 1)) ++t;
    types[i] = t;
    v[i] -= g.type_offset(t);
  }
  return {ops::from_vector(types, global.sizes()), ops::from_vector(v, global.sizes())};
}

}  // namespace strata
