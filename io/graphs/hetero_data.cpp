#include "strata/io/graphs/hetero_data.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "strata/core/error.h"
#include "strata/io/weights/safetensors.h"
#include "strata/ops/factory.h"
#include "strata/ops/shape_ops.h"

namespace strata::io {

namespace {

constexpr const char* kFormat = "strata-hetero/1";
const char* const kPerType[] = {"x", "y", "train_mask", "val_mask", "test_mask"};

// d.x, d.y, ... by the field's name (HeteroData or const HeteroData).
template <class Data>
auto& per_type(Data& d, const std::string& field) {
  if (field == "x") return d.x;
  if (field == "y") return d.y;
  if (field == "train_mask") return d.train_mask;
  if (field == "val_mask") return d.val_mask;
  return d.test_mask;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

std::string join(const std::vector<std::string>& items) {
  std::string s;
  for (const std::string& i : items) s += (s.empty() ? "" : ",") + i;
  return s;
}

EdgeType parse_edge_type(const std::string& key, const std::string& path) {
  const size_t a = key.find("__"), b = a == std::string::npos ? a : key.find("__", a + 2);
  STRATA_CHECK(b != std::string::npos && key.find("__", b + 2) == std::string::npos, IoError,
               "load_hetero_data: '", path, "': edge type '", key, "' is not <src>__<rel>__<dst>");
  return {key.substr(0, a), key.substr(a + 2, b - a - 2), key.substr(b + 2)};
}

}  // namespace

Graph HeteroData::graph() const { return hetero_graph(num_nodes, edge_index); }

HeteroData load_hetero_data(const std::string& path) {
  Safetensors f = read_safetensors(path);
  auto meta = [&](const std::string& key) -> const std::string& {
    auto it = f.metadata.find(key);
    STRATA_CHECK(it != f.metadata.end(), IoError, "load_hetero_data: '", path, "' has no metadata '", key,
                 "'");
    return it->second;
  };
  STRATA_CHECK(meta("format") == kFormat, IoError, "load_hetero_data: '", path, "' is format '",
               meta("format"), "', not ", kFormat);
  HeteroData d;
  const std::vector<std::string> types = split(meta("node_types")), counts = split(meta("num_nodes"));
  STRATA_CHECK(!types.empty() && types.size() == counts.size(), IoError, "load_hetero_data: '", path,
               "': ", types.size(), " node types but ", counts.size(), " node counts");
  for (size_t t = 0; t < types.size(); ++t) {
    int64_t n = -1;
    try {
      size_t used = 0;
      n = std::stoll(counts[t], &used);
      if (used != counts[t].size()) n = -1;
    } catch (const std::exception&) {
    }
    STRATA_CHECK(n >= 0, IoError, "load_hetero_data: '", path, "': node count '", counts[t], "' of '",
                 types[t], "' is not a count");
    d.num_nodes.emplace_back(types[t], n);
  }
  std::map<std::string, bool> used;
  for (const auto& [key, tensor] : f.tensors) used[key] = false;
  for (const std::string& key : split(meta("edge_types"))) {
    const std::string name = "edge_index." + key;
    const Tensor* ei = f.tensors.find(name);
    STRATA_CHECK(ei != nullptr, IoError, "load_hetero_data: '", path, "' lists edge type '", key,
                 "' but has no '", name, "'");
    d.edge_index.push_back({parse_edge_type(key, path), *ei});
    used[name] = true;
  }
  for (const char* field : kPerType)
    for (const auto& [type, n] : d.num_nodes) {
      const std::string name = std::string(field) + "." + type;
      const Tensor* t = f.tensors.find(name);
      if (!t) continue;
      STRATA_CHECK(t->dim() >= 1 && t->size(0) == n, IoError, "load_hetero_data: '", path, "': '", name,
                   "' has ", t->dim() >= 1 ? t->size(0) : 0, " rows, '", type, "' ", n, " nodes");
      per_type(d, field)[type] = *t;
      used[name] = true;
    }
  for (const auto& [key, seen] : used)
    STRATA_CHECK(seen, IoError, "load_hetero_data: '", path, "': tensor '", key,
                 "' is not a listed edge type's or node type's (node types: ", meta("node_types"), ")");
  if (auto it = f.metadata.find("name"); it != f.metadata.end()) d.name = it->second;
  if (auto it = f.metadata.find("num_classes"); it != f.metadata.end()) {
    try {
      d.num_classes = std::stoll(it->second);
    } catch (const std::exception&) {
      throw IoError("load_hetero_data: '" + path + "': num_classes '" + it->second + "' is not a count");
    }
  }
  try {
    (void)d.graph();  // the edge indices' shapes and ids against the node counts
  } catch (const Error& e) {
    throw IoError("load_hetero_data: '" + path + "': " + e.what());
  }
  return d;
}

void save_hetero_data(const HeteroData& d, const std::string& path) {
  std::vector<std::string> types, counts, edge_types;
  for (const auto& [type, n] : d.num_nodes) {
    STRATA_CHECK(!type.empty() && type.find(',') == std::string::npos && type.find("__") == std::string::npos,
                 ValueError, "save_hetero_data: node type '", type, "' is empty or holds ',' or \"__\"");
    types.push_back(type);
    counts.push_back(std::to_string(n));
  }
  nn::StateDict t;
  for (const TypedEdgeIndex& e : d.edge_index) {
    for (const std::string* part : {&e.type.src, &e.type.rel, &e.type.dst})
      STRATA_CHECK(
          !part->empty() && part->find(',') == std::string::npos && part->find("__") == std::string::npos,
          ValueError, "save_hetero_data: edge type part '", *part, "' is empty or holds ',' or \"__\"");
    edge_types.push_back(e.type.key());
    t.insert("edge_index." + e.type.key(), e.edge_index.to(DType::i64));
  }
  for (const char* field : kPerType)
    for (const auto& [type, v] : per_type(d, field)) {
      const auto it = std::find(types.begin(), types.end(), type);
      STRATA_CHECK(it != types.end(), ValueError, "save_hetero_data: ", field, " for node type '", type,
                   "', which is not among ", join(types));
      const int64_t n = d.num_nodes[size_t(it - types.begin())].second;
      STRATA_CHECK(v.dim() >= 1 && v.size(0) == n, ValueError, "save_hetero_data: ", field, ".", type,
                   " has ", v.dim() >= 1 ? v.size(0) : 0, " rows, '", type, "' ", n, " nodes");
      const bool mask = std::string(field).find("mask") != std::string::npos;
      t.insert(std::string(field) + "." + type, mask ? v.to(DType::u8) : v);
    }
  (void)d.graph();  // refuses what the loader would refuse
  write_safetensors(path, t,
                    {{"format", kFormat},
                     {"node_types", join(types)},
                     {"num_nodes", join(counts)},
                     {"edge_types", join(edge_types)},
                     {"name", d.name},
                     {"num_classes", std::to_string(d.num_classes)}});
}

GraphDataset to_graph_dataset(const HeteroData& d) {
  GraphDataset out;
  out.name = d.name;
  out.graph = d.graph();
  out.num_classes = d.num_classes;
  const Graph& g = out.graph;
  // Features: in global rows when every type has them at one width, else per type.
  std::map<std::string, Tensor> x;
  std::set<int64_t> widths;
  for (const auto& [type, t] : d.x) x[type] = t.to(DType::f32), widths.insert(t.size(1));
  if (x.size() == d.num_nodes.size() && widths.size() == 1)
    out.features = cat_node_features(g, x);
  else
    out.typed_features = std::move(x);
  // Labels and masks, padded where a type has none.
  auto gather = [&](const std::map<std::string, Tensor>& per_type, DType dtype, double fill) {
    if (per_type.empty()) return Tensor();
    std::vector<Tensor> parts;
    for (int64_t t = 0; t < g.num_node_types(); ++t) {
      auto it = per_type.find(g.node_types()[size_t(t)]);
      parts.push_back(it != per_type.end() ? it->second.to(dtype)
                                           : ops::full({g.nodes_of_type(t)}, fill, dtype));
    }
    return ops::cat(parts, 0);
  };
  out.labels = gather(d.y, DType::i64, -1);
  out.train_mask = gather(d.train_mask, DType::boolean, 0);
  out.val_mask = gather(d.val_mask, DType::boolean, 0);
  out.test_mask = gather(d.test_mask, DType::boolean, 0);
  if (out.labels.defined() && out.num_classes == 0) {
    int64_t top = -1;
    for (int64_t y : out.labels.to_vector<int64_t>()) top = std::max(top, y);
    out.num_classes = top + 1;
  }
  return out;
}

HeteroData to_hetero_data(const GraphDataset& data) {
  HeteroData d;
  d.name = data.name;
  d.num_classes = data.num_classes;
  const Graph& g = data.graph;
  for (int64_t t = 0; t < g.num_node_types(); ++t)
    d.num_nodes.emplace_back(g.node_types()[size_t(t)], g.nodes_of_type(t));
  // Each relation's edges by input position, in local ids.
  const std::vector<int64_t> src = g.src().to_vector<int64_t>(), dst = g.dst().to_vector<int64_t>(),
                             ids = g.edge_ids().to_vector<int64_t>(),
                             rel = g.edge_relations().to_vector<int64_t>();
  std::vector<size_t> order(src.size());
  for (size_t p = 0; p < order.size(); ++p) order[p] = p;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ids[a] < ids[b]; });
  for (int64_t r = 0; r < g.num_relations(); ++r) {
    const Relation& R = g.relations()[size_t(r)];
    std::vector<int64_t> s, e;
    for (size_t p : order)
      if (rel[p] == r)
        s.push_back(src[p] - g.type_offset(R.src_type)), e.push_back(dst[p] - g.type_offset(R.dst_type));
    const int64_t E = int64_t(s.size());
    s.insert(s.end(), e.begin(), e.end());
    d.edge_index.push_back({{g.node_types()[size_t(R.src_type)], R.name, g.node_types()[size_t(R.dst_type)]},
                            ops::from_vector(s, {2, E})});
  }
  auto split = [&](const Tensor& t, std::map<std::string, Tensor>* out, bool labels) {
    if (!t.defined()) return;
    for (const auto& [type, rows] : split_node_rows(g, t)) {
      if (labels && rows.numel() > 0) {  // a type whose nodes have no label keeps none
        bool any = false;
        for (int64_t y : rows.to_vector<int64_t>()) any |= y >= 0;
        if (!any) continue;
      }
      (*out)[type] = rows.contiguous();
    }
  };
  split(data.features, &d.x, false);
  for (const auto& [type, t] : data.typed_features) d.x[type] = t.contiguous();
  split(data.labels, &d.y, true);
  split(data.train_mask, &d.train_mask, false);
  split(data.val_mask, &d.val_mask, false);
  split(data.test_mask, &d.test_mask, false);
  return d;
}

}  // namespace strata::io
