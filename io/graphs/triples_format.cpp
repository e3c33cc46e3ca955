// Label triples ("head<TAB>relation<TAB>tail" per line, train/valid/test files) into a
// KnowledgeGraph whose ids follow PyKEEN's TriplesFactory (pykeen/triples/triples_factory.py:
// create_entity_mapping, create_relation_mapping, _map_triples_elements_to_ids).
#include <algorithm>
#include <array>
#include <filesystem>
#include <functional>
#include <string_view>
#include <unordered_map>

#include "io/graphs/graph_assembly.h"
#include "io/graphs/text_lines.h"
#include "strata/core/error.h"
#include "strata/io/graphs/knowledge_graph.h"

namespace strata::io {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kInverseSuffix = "_inverse";

struct LabelHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// Labels numbered in order of first appearance (over all three files).
class LabelTable {
 public:
  int64_t intern(std::string_view label) {
    auto it = ids_.find(label);
    if (it != ids_.end()) return it->second;
    labels_.emplace_back(label);
    return ids_.emplace(labels_.back(), int64_t(labels_.size()) - 1).first->second;
  }
  const std::vector<std::string>& labels() const { return labels_; }

 private:
  std::vector<std::string> labels_;
  std::unordered_map<std::string, int64_t, LabelHash, std::equal_to<>> ids_;
};

using Triple = std::array<int64_t, 3>;

// One file's triples in first-appearance label numbers, with the line each came from.
struct SplitRows {
  std::string path;
  std::vector<Triple> rows;
  std::vector<int64_t> lines;
};

std::string split_path(const std::string& dir, const std::string& split) {
  const std::string txt = (fs::path(dir) / (split + ".txt")).string();
  if (fs::exists(txt)) return txt;
  if (fs::exists(txt + ".gz")) return txt + ".gz";
  throw IoError(detail::concat("load_triples('", dir, "'): no ", split, ".txt or ", split, ".txt.gz"));
}

SplitRows read_split(const std::string& path, LabelTable* entities, LabelTable* relations) {
  SplitRows out;
  out.path = path;
  LineReader in(path);
  std::string_view line;
  std::array<std::string_view, 3> f;
  while (in.next(&line)) {
    if (line.find_first_not_of(' ') == std::string_view::npos) continue;  // blank
    size_t fields = 0, start = 0;
    for (;;) {
      const size_t tab = line.find('\t', start);
      if (fields < 3) f[fields] = line.substr(start, tab == std::string_view::npos ? tab : tab - start);
      ++fields;
      if (tab == std::string_view::npos) break;
      start = tab + 1;
    }
    if (fields != 3)
      in.fail(detail::concat("expected 3 tab-separated fields (head, relation, tail), found ", fields));
    static constexpr const char* kWhat[3] = {"head", "relation", "tail"};
    for (size_t k = 0; k < 3; ++k)
      if (f[k].empty()) in.fail(detail::concat("empty ", kWhat[k], " label"));
    out.rows.push_back({entities->intern(f[0]), relations->intern(f[1]), entities->intern(f[2])});
    out.lines.push_back(in.line_number());
  }
  return out;
}

// final[i]: the id of first-appearance label i among those `used` marks, numbered in the order
// `before` sorts their labels; -1 for the unused ones. `names` receives the labels by id.
template <class Less>
std::vector<int64_t> number_sorted(const std::vector<std::string>& labels, const std::vector<uint8_t>& used,
                                   Less before, std::vector<std::string>* names) {
  std::vector<int64_t> order;
  for (size_t i = 0; i < labels.size(); ++i)
    if (used[i]) order.push_back(int64_t(i));
  std::sort(order.begin(), order.end(),
            [&](int64_t x, int64_t y) { return before(labels[size_t(x)], labels[size_t(y)]); });
  std::vector<int64_t> final_id(labels.size(), -1);
  names->clear();
  for (size_t k = 0; k < order.size(); ++k) {
    final_id[size_t(order[k])] = int64_t(k);
    names->push_back(labels[size_t(order[k])]);
  }
  return final_id;
}

// PyKEEN's relation order: by the label without a trailing "_inverse", then plain before inverse.
bool relation_before(const std::string& x, const std::string& y) {
  auto key = [](std::string_view s) {
    const bool inverse = s.ends_with(kInverseSuffix);
    if (inverse) s.remove_suffix(kInverseSuffix.size());
    return std::make_pair(s, inverse);
  };
  return key(x) < key(y);
}

// A split's rows in final ids, distinct and sorted: i64 [n, 3]. Rows naming an unnumbered label
// are counted in *unseen (or throw, naming file and line).
Tensor map_rows(const SplitRows& split, const std::vector<int64_t>& entity_id,
                const std::vector<int64_t>& relation_id, const LabelTable& entities,
                const LabelTable& relations, const TriplesOptions& options, KnowledgeGraph* kg) {
  std::vector<Triple> rows;
  rows.reserve(split.rows.size());
  for (size_t i = 0; i < split.rows.size(); ++i) {
    const Triple& t = split.rows[i];
    const Triple mapped{entity_id[size_t(t[0])], relation_id[size_t(t[1])], entity_id[size_t(t[2])]};
    const auto missing = std::find(mapped.begin(), mapped.end(), int64_t(-1));
    if (missing == mapped.end()) {
      rows.push_back(mapped);
      continue;
    }
    if (!options.drop_unseen) {
      const size_t k = size_t(missing - mapped.begin());
      const std::string& label = k == 1 ? relations.labels()[size_t(t[1])] : entities.labels()[size_t(t[k])];
      throw IoError(detail::concat(split.path, ":", split.lines[i], ": ", k == 1 ? "relation" : "entity",
                                   " '", label, "' appears in no training triple"));
    }
    ++kg->unseen_triples;
  }
  std::sort(rows.begin(), rows.end());
  const size_t distinct = size_t(std::unique(rows.begin(), rows.end()) - rows.begin());
  kg->duplicate_triples += int64_t(rows.size() - distinct);
  rows.resize(distinct);
  std::vector<int64_t> flat;
  flat.reserve(3 * rows.size());
  for (const Triple& t : rows) flat.insert(flat.end(), t.begin(), t.end());
  return host_tensor(flat, {int64_t(rows.size()), 3});
}

}  // namespace

KnowledgeGraph load_triples(const std::string& dir, const TriplesOptions& options) {
  LabelTable entities, relations;
  const SplitRows train = read_split(split_path(dir, "train"), &entities, &relations);
  const SplitRows valid = read_split(split_path(dir, "valid"), &entities, &relations);
  const SplitRows test = read_split(split_path(dir, "test"), &entities, &relations);
  STRATA_CHECK(!train.rows.empty(), IoError, train.path, ": no triples");

  std::vector<uint8_t> entity_used(entities.labels().size(), 0), relation_used(relations.labels().size(), 0);
  for (const Triple& t : train.rows) entity_used[size_t(t[0])] = entity_used[size_t(t[2])] = 1;
  for (const Triple& t : train.rows) relation_used[size_t(t[1])] = 1;
  KnowledgeGraph kg;
  const std::vector<int64_t> entity_id =
      number_sorted(entities.labels(), entity_used, std::less<std::string>{}, &kg.entities);
  const std::vector<int64_t> relation_id =
      number_sorted(relations.labels(), relation_used, relation_before, &kg.relations);
  STRATA_CHECK(int64_t(kg.entities.size()) <= kMaxGraphNodes, IoError, train.path, ": ", kg.entities.size(),
               " entities, above 2^30");
  kg.train = map_rows(train, entity_id, relation_id, entities, relations, options, &kg);
  kg.valid = map_rows(valid, entity_id, relation_id, entities, relations, options, &kg);
  kg.test = map_rows(test, entity_id, relation_id, entities, relations, options, &kg);
  kg.name = fs::path(dir).lexically_normal().filename().string();
  if (kg.name.empty()) kg.name = fs::path(dir).lexically_normal().parent_path().filename().string();
  return kg;
}

DataIdentity data_identity(const KnowledgeGraph& kg) {
  DataDigest digest;
  digest.add(int64_t(kg.entities.size()));
  for (const std::string& e : kg.entities) digest.add(std::string_view(e));
  digest.add(int64_t(kg.relations.size()));
  for (const std::string& r : kg.relations) digest.add(std::string_view(r));
  digest.add(kg.train).add(kg.valid).add(kg.test);
  return {detail::concat(kg.name, ": ", kg.entities.size(), " entities, ", kg.relations.size(),
                         " relations, ", kg.train.defined() ? kg.train.size(0) : 0, " training triples"),
          digest.str()};
}

Graph KnowledgeGraph::training_graph(bool reverse_relations) const {
  STRATA_CHECK(train.defined() && train.dim() == 2 && train.size(1) == 3 && train.dtype() == DType::i64,
               ValueError, "KnowledgeGraph::training_graph: train must be i64 [n, 3]");
  const int64_t n = train.size(0), r = int64_t(relations.size());
  const Tensor rows = train.to(kCPU).contiguous();
  const int64_t* t = rows.data<int64_t>();
  const int64_t copies = reverse_relations ? 2 : 1;
  std::vector<int64_t> src(size_t(copies * n)), dst(size_t(copies * n)), rel(size_t(copies * n));
  for (int64_t i = 0; i < n; ++i) {
    src[size_t(i)] = t[3 * i], rel[size_t(i)] = t[3 * i + 1], dst[size_t(i)] = t[3 * i + 2];
    if (reverse_relations)
      src[size_t(n + i)] = t[3 * i + 2], rel[size_t(n + i)] = t[3 * i + 1] + r, dst[size_t(n + i)] = t[3 * i];
  }
  std::vector<Relation> rels;
  for (const std::string& name : relations) rels.push_back(Relation{0, name, 0});
  if (reverse_relations)
    for (const std::string& name : relations) rels.push_back(Relation{0, "rev_" + name, 0});
  return Graph::from_typed_edges({"entity"}, {int64_t(entities.size())}, std::move(rels), host_tensor(src),
                                 host_tensor(dst), host_tensor(rel));
}

}  // namespace strata::io
