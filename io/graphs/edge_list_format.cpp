// Edge lists and CSV ("src dst [relation] [weight]" lines) with an optional node file
// ("id,label,f0,f1,...").
#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "io/graphs/graph_assembly.h"
#include "io/graphs/text_lines.h"
#include "strata/core/error.h"
#include "strata/io/graphs/graph_formats.h"

namespace strata::io {
namespace {

struct NodeRows {
  std::string path;
  std::vector<int64_t> ids, lines;
  std::vector<std::string> labels;
  std::vector<float> features;  // row after row, `width` each
  int64_t width = 0;
  int64_t max_id = -1;
};

NodeRows read_node_file(const std::string& path, int64_t limit) {
  NodeRows rows;
  rows.path = path;
  LineReader in(path);
  std::string_view line;
  std::vector<std::string_view> f;
  bool first = true;
  int64_t columns = -1;
  while (in.next(&line)) {
    if (is_comment_or_blank(line)) continue;
    split_fields(line, FieldSeparator::kCommaOrWhitespace, &f);
    if (std::exchange(first, false) && is_header_row(f[0])) continue;
    if (columns < 0) columns = int64_t(f.size());
    if (f.size() < 2 || int64_t(f.size()) != columns)
      in.fail(detail::concat("expected ", std::max<int64_t>(columns, 2),
                             " fields (id,label,features...), found ", f.size()));
    int64_t id = in.parse_int(f[0], "node id");
    if (id < 0 || id >= limit) in.fail(detail::concat("node id ", id, " out of range [0, ", limit, ")"));
    rows.ids.push_back(id);
    rows.lines.push_back(in.line_number());
    rows.max_id = std::max(rows.max_id, id);
    rows.labels.emplace_back(f[1]);
    for (size_t k = 2; k < f.size(); ++k) rows.features.push_back(float(in.parse_double(f[k], "feature")));
  }
  STRATA_CHECK(!rows.ids.empty(), IoError, path, ": no node rows (",
               in.line_number() == 0 ? "an empty file" : "a header alone",
               "): a node file gives each node's id, label and features");
  rows.width = std::max<int64_t>(columns - 2, 0);
  return rows;
}

// Labels and features [N, width] from the node file's rows; throws IoError naming the file and
// line of a node listed twice or a label below -1.
void attach_nodes(const NodeRows& rows, int64_t n, GraphDataset* data) {
  std::vector<std::string> names(static_cast<size_t>(n));
  std::vector<int64_t> line_of(size_t(n), 0);
  bool numeric = true;
  for (size_t i = 0; i < rows.ids.size(); ++i) {
    STRATA_CHECK(rows.ids[i] < n, IoError, rows.path, ":", rows.lines[i], ": node id ", rows.ids[i],
                 " is not below the node count ", n);
    const size_t id = size_t(rows.ids[i]);
    STRATA_CHECK(line_of[id] == 0, IoError, rows.path, ":", rows.lines[i], ": node ", id,
                 " is listed twice (first at line ", line_of[id], ")");
    line_of[id] = rows.lines[i];
    names[size_t(rows.ids[i])] = rows.labels[i];
    if (!rows.labels[i].empty() && !to_int(rows.labels[i])) numeric = false;
  }
  std::vector<int64_t> labels(size_t(n), -1);
  if (numeric) {
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i].empty()) continue;
      labels[i] = *to_int(names[i]);
      STRATA_CHECK(labels[i] >= -1, IoError, rows.path, ":", line_of[i], ": node ", i, " has the label ",
                   labels[i], " (labels are >= 0, or -1 for none)");
    }
  } else {
    std::vector<std::string> classes;
    labels = class_ids_of(names, &classes);
  }
  data->labels = host_tensor(labels);
  data->num_classes = count_classes(labels, rows.path);
  if (rows.width > 0) {
    for (size_t i = 0; i < rows.ids.size(); ++i)
      for (int64_t c = 0; c < rows.width; ++c) {
        const float v = rows.features[i * size_t(rows.width) + size_t(c)];
        STRATA_CHECK(std::isfinite(v), IoError, rows.path, ":", rows.lines[i], ": feature column ", c, " is ",
                     v, "; non-finite features are refused");
      }
    std::vector<float> features(size_t(n * rows.width), 0.0f);
    for (size_t i = 0; i < rows.ids.size(); ++i)
      std::copy_n(rows.features.begin() + std::ptrdiff_t(i) * rows.width, rows.width,
                  features.begin() + rows.ids[i] * rows.width);
    data->features = host_tensor(features, {n, rows.width});
  }
}

}  // namespace

GraphDataset load_edge_list(const std::string& path, const EdgeListOptions& options) {
  std::vector<int64_t> type_offsets{0};
  for (const auto& [name, count] : options.node_types) {
    STRATA_CHECK(count >= 0 && count <= kMaxGraphNodes - type_offsets.back(), ValueError, "load_edge_list('",
                 path, "'): node type '", name, "' has ", count, " nodes");
    type_offsets.push_back(type_offsets.back() + count);
  }
  const bool typed_counts = !options.node_types.empty();
  STRATA_CHECK(!typed_counts || options.relation_column, ValueError, "load_edge_list('", path,
               "'): node_types needs relation_column");
  STRATA_CHECK(!typed_counts || options.num_nodes < 0 || options.num_nodes == type_offsets.back(), ValueError,
               "load_edge_list('", path, "'): num_nodes ", options.num_nodes, " but the node types hold ",
               type_offsets.back());
  STRATA_CHECK(options.num_nodes <= kMaxGraphNodes, ValueError, "load_edge_list('", path, "'): num_nodes ",
               options.num_nodes, " is above 2^30");
  const int64_t limit = typed_counts             ? type_offsets.back()
                        : options.num_nodes >= 0 ? options.num_nodes
                                                 : kMaxGraphNodes;
  auto type_of = [&](int64_t id) {
    return int64_t(std::upper_bound(type_offsets.begin(), type_offsets.end(), id) - type_offsets.begin()) - 1;
  };

  const size_t columns = 2 + (options.relation_column ? 1 : 0) + (options.weight_column ? 1 : 0);
  std::vector<int64_t> src, dst, rel;
  std::vector<float> weights;
  std::vector<Relation> relations;
  std::map<std::string, int64_t, std::less<>> relation_ids;
  int64_t max_id = -1;
  LineReader in(path);
  std::string_view line;
  std::vector<std::string_view> f;
  bool first = true;
  while (in.next(&line)) {
    if (is_comment_or_blank(line)) continue;
    split_fields(line, FieldSeparator::kCommaOrWhitespace, &f);
    if (std::exchange(first, false) && is_header_row(f[0])) continue;
    if (f.size() != columns)
      in.fail(detail::concat("expected ", columns, " fields (src dst",
                             options.relation_column ? " relation" : "",
                             options.weight_column ? " weight" : "", "), found ", f.size()));
    int64_t s = in.parse_int(f[0], "source id"), d = in.parse_int(f[1], "destination id");
    for (int64_t id : {s, d})
      if (id < 0 || id >= limit) in.fail(detail::concat("node id ", id, " out of range [0, ", limit, ")"));
    max_id = std::max({max_id, s, d});
    src.push_back(s);
    dst.push_back(d);
    size_t next = 2;
    if (options.relation_column) {
      std::string_view name = f[next++];
      auto it = relation_ids.find(name);
      if (it == relation_ids.end()) {
        it = relation_ids.emplace(std::string(name), int64_t(relations.size())).first;
        relations.push_back(Relation{type_of(s), std::string(name), type_of(d)});
      }
      const Relation& r = relations[size_t(it->second)];
      if (type_of(s) != r.src_type || type_of(d) != r.dst_type)
        in.fail(detail::concat("edge ", s, " -> ", d, " of relation '", name, "' joins node types ",
                               options.node_types[size_t(type_of(s))].first, " -> ",
                               options.node_types[size_t(type_of(d))].first, ", but its first edge joined ",
                               options.node_types[size_t(r.src_type)].first, " -> ",
                               options.node_types[size_t(r.dst_type)].first));
      rel.push_back(it->second);
    }
    if (options.weight_column) weights.push_back(float(in.parse_double(f[next], "weight")));
  }

  STRATA_CHECK(!src.empty(), IoError, path, ": no edges (",
               in.line_number() == 0 ? "an empty file" : "no 'src dst' rows", ")");
  NodeRows rows;
  if (!options.node_file.empty()) rows = read_node_file(options.node_file, limit);
  int64_t n = typed_counts             ? type_offsets.back()
              : options.num_nodes >= 0 ? options.num_nodes
                                       : std::max(max_id, rows.max_id) + 1;
  if (!typed_counts && options.num_nodes < 0)  // a count the caller gave is the caller's
    check_node_count(n, 2 * int64_t(src.size()) + int64_t(rows.ids.size()), options.max_nodes,
                     detail::concat("load_edge_list('", path, "'): the largest node id, ", n - 1, ","));

  GraphDataset data;
  size_t e = src.size();
  if (options.undirected) {
    append_reverse_edges(&src, &dst);
    size_t base = relations.size();
    std::vector<int64_t> reverse_of(base, -1);
    for (size_t r = 0; r < base; ++r) {
      if (relations[r].src_type == relations[r].dst_type) continue;
      reverse_of[r] = int64_t(relations.size());
      relations.push_back(Relation{relations[r].dst_type, "rev_" + relations[r].name, relations[r].src_type});
    }
    for (size_t i = 0; i < rel.size() && i < e; ++i) {
      int64_t r = rel[i];
      rel.push_back(reverse_of[size_t(r)] >= 0 ? reverse_of[size_t(r)] : r);
    }
  }
  if (options.weight_column) {
    Tensor w = host_tensor(weights);
    data.edge_properties["weight"] = options.undirected ? repeat_rows_twice(w) : w;
  }
  if (options.relation_column) {
    std::vector<std::string> type_names{"node"};
    std::vector<int64_t> counts{n};
    if (typed_counts) {
      type_names.clear();
      counts.clear();
      for (const auto& [name, count] : options.node_types) {
        type_names.push_back(name);
        counts.push_back(count);
      }
    }
    data.graph = Graph::from_typed_edges(type_names, counts, relations, host_tensor(src), host_tensor(dst),
                                         host_tensor(rel));
  } else {
    data.graph = Graph::from_edges(n, host_tensor(src), host_tensor(dst));
  }
  if (!options.node_file.empty()) attach_nodes(rows, n, &data);
  data.name = path.substr(path.find_last_of('/') + 1);
  return data;
}

}  // namespace strata::io
