// The typed R-MAT generator: one rectangular R-MAT per relation over its node types' positions
// (Chakrabarti, Zhan, Faloutsos, SDM 2004), planted classes in rotated blocks of positions, and
// homophily by moving an edge's destination within its block.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "io/graphs/class_features.h"
#include "io/graphs/graph_assembly.h"
#include "io/graphs/random_draws.h"
#include "io/graphs/rmat_quadrants.h"
#include "strata/core/error.h"
#include "strata/io/graphs/graph_generators.h"

namespace strata::io {
namespace {

constexpr int64_t kMaxEdges = int64_t(1) << 34;
constexpr int64_t kMaxTypes = int64_t(1) << 16;  // node types, and relations: stream indices

// Stream ids under the seed: a kind and the index of its type or relation.
enum StreamKind : uint64_t {
  kEdges = 1,
  kPermutation = 2,
  kRotation = 3,
  kFeatureMean = 4,
  kFeatureNoise = 5
};
uint64_t stream(StreamKind kind, int64_t index) { return uint64_t(kind) << 32 | uint64_t(index); }

int ceil_log2(int64_t n) {
  int k = 0;
  while ((int64_t(1) << k) < n) ++k;
  return k;
}

// Where an R-MAT cell of a `levels`-level side lands on `count` positions: the cell index `bits`
// plus the 32-bit fraction `frac` within it, scaled by count / 2^levels.
int64_t position(uint64_t bits, uint32_t frac, int levels, int64_t count) {
  const unsigned __int128 x = (unsigned __int128)(bits << 32 | frac) * uint64_t(count);
  return int64_t(x >> (levels + 32));
}

// The planted classes of one node type's positions: block j (positions [jK, jK + K)) gives
// position p the class (p mod K + rotation(j)) mod K, rotation(j) drawn from block j of the
// type's stream, so each full block holds every class once.
class ClassLayout {
 public:
  ClassLayout(uint64_t seed, int64_t type, int64_t classes)
      : rng_(seed, stream(kRotation, type)), k_(classes) {}
  int64_t class_of(int64_t p) const { return (p % k_ + rotation(p / k_)) % k_; }
  // The position of p's block with class c, or p when that position is past `count`.
  int64_t move_to_class(int64_t p, int64_t c, int64_t count) const {
    const int64_t block = p / k_;
    const int64_t q = block * k_ + (c - rotation(block) + k_) % k_;
    return q < count ? q : p;
  }

 private:
  int64_t rotation(int64_t block) const {
    const philox::U32x4 r = rng_.block(uint64_t(block));
    return int64_t(uniform_below(uint64_t(k_), bits64(r.x, r.y)));
  }
  PhiloxStream rng_;
  int64_t k_;
};

struct TypeSpec {
  std::string name;
  int64_t count = 0;
  int levels = 0;
};

struct RelationSpec {
  int64_t src = 0, dst = 0;
  std::string name;
  int64_t edges = 0;
  RmatQuadrants quadrants;
};

int64_t type_index(const std::vector<TypeSpec>& types, const std::string& name, const std::string& what) {
  for (size_t t = 0; t < types.size(); ++t)
    if (types[t].name == name) return int64_t(t);
  std::string known;
  for (const TypeSpec& t : types) known += (known.empty() ? "" : ", ") + t.name;
  throw ValueError(detail::concat("typed_rmat: ", what, " names node type '", name, "', not one of ", known));
}

// Counts scaled by total_edges / (their edge sum): edges by largest remainders so that they sum to
// total_edges, nodes rounded and at least 1.
void scale_counts(const TypedRmatOptions& o, std::vector<TypeSpec>* types, std::vector<RelationSpec>* rels) {
  int64_t sum = 0;
  for (const RelationSpec& r : *rels) sum += r.edges;
  if (o.total_edges == 0) return;
  STRATA_CHECK(sum > 0, ValueError, "typed_rmat: total_edges ", o.total_edges,
               " but the relations' edge counts sum to 0");
  const double scale = double(o.total_edges) / double(sum);
  for (TypeSpec& t : *types) t.count = std::max<int64_t>(1, std::llround(double(t.count) * scale));
  std::vector<double> remainder(rels->size());
  int64_t assigned = 0;
  for (size_t r = 0; r < rels->size(); ++r) {
    const double exact = double((*rels)[r].edges) * scale;
    (*rels)[r].edges = int64_t(std::floor(exact));
    remainder[r] = exact - std::floor(exact);
    assigned += (*rels)[r].edges;
  }
  std::vector<size_t> order(rels->size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t x, size_t y) { return remainder[x] > remainder[y]; });
  for (size_t k = 0; assigned < o.total_edges; k = (k + 1) % order.size(), ++assigned)
    ++(*rels)[order[k]].edges;
}

void resolve(const TypedRmatOptions& o, std::vector<TypeSpec>* types, std::vector<RelationSpec>* rels,
             int64_t* label_type) {
  STRATA_CHECK(!o.node_types.empty() && int64_t(o.node_types.size()) <= kMaxTypes, ValueError,
               "typed_rmat: ", o.node_types.size(), " node types (1 to 65536)");
  STRATA_CHECK(!o.relations.empty() && int64_t(o.relations.size()) <= kMaxTypes, ValueError,
               "typed_rmat: ", o.relations.size(), " relations (1 to 65536)");
  std::set<std::string> names;
  for (const auto& [name, count] : o.node_types) {
    STRATA_CHECK(names.insert(name).second, ValueError, "typed_rmat: node type '", name, "' given twice");
    STRATA_CHECK(count >= 1 && count <= kMaxGraphNodes, ValueError, "typed_rmat: node type '", name, "' has ",
                 count, " nodes (1 to 2^30)");
    types->push_back(TypeSpec{name, count, 0});
  }
  for (const TypedRmatRelation& r : o.relations) {
    STRATA_CHECK(r.num_edges >= 0 && r.num_edges <= kMaxEdges, ValueError, "typed_rmat: relation '", r.name,
                 "' has ", r.num_edges, " edges (0 to 2^34)");
    rels->push_back(RelationSpec{type_index(*types, r.src_type, "relation '" + r.name + "'"),
                                 type_index(*types, r.dst_type, "relation '" + r.name + "'"), r.name,
                                 r.num_edges,
                                 RmatQuadrants(r.a, r.b, r.c, r.d, "typed_rmat: relation '" + r.name + "'")});
  }
  STRATA_CHECK(o.total_edges >= 0 && o.total_edges <= kMaxEdges, ValueError, "typed_rmat: total_edges ",
               o.total_edges, " is not in [0, 2^34]");
  *label_type = type_index(*types, o.label_type, "label_type");
  STRATA_CHECK(o.num_classes >= 1 && o.num_classes <= (int64_t(1) << 20), ValueError,
               "typed_rmat: num_classes ", o.num_classes, " is not in [1, 2^20]");
  STRATA_CHECK(o.homophily >= 0 && o.homophily <= 1, ValueError, "typed_rmat: homophily ", o.homophily,
               " is not in [0, 1]");
  STRATA_CHECK(o.feature_dim >= 0 && o.feature_dim <= (int64_t(1) << 16), ValueError,
               "typed_rmat: feature_dim ", o.feature_dim, " is not in [0, 65536]");

  scale_counts(o, types, rels);
  int64_t nodes = 0, edges = 0;
  for (TypeSpec& t : *types) {
    nodes += t.count;
    t.levels = ceil_log2(t.count);
  }
  for (const RelationSpec& r : *rels) edges += r.edges;
  STRATA_CHECK(nodes <= kMaxGraphNodes, ValueError, "typed_rmat: ", nodes, " nodes, above 2^30");
  STRATA_CHECK(edges * (o.reverse_relations ? 2 : 1) <= kMaxEdges, ValueError, "typed_rmat: ", edges,
               " edges", o.reverse_relations ? " (twice that with the reverse relations)" : "",
               ", above 2^34");
}

// One side of a relation: its node type, classes, permutation and first global id.
struct EdgeEnd {
  const TypeSpec* type;
  const ClassLayout* layout;
  const int64_t* perm;
  int64_t offset;
};

// Relation r's edges as global ids into src[0, r.edges) and dst: edge e from Philox blocks
// [e * B, (e + 1) * B) of `rng`, whose words are one per R-MAT level, the source's and the
// destination's fraction within their cells, and the homophily draw.
void draw_relation(const RelationSpec& r, const EdgeEnd& from, const EdgeEnd& to, double homophily,
                   const PhiloxStream& rng, int64_t* src, int64_t* dst) {
  const int levels = std::max(from.type->levels, to.type->levels);
  const int64_t blocks_per_edge = (levels + 3 + 3) / 4;
  const uint64_t move = uint64_t(homophily * 4294967296.0);  // a draw below it moves the destination
#pragma omp parallel for schedule(static, 65536)
  for (int64_t e = 0; e < r.edges; ++e) {
    uint32_t words[36];
    for (int64_t b = 0; b < blocks_per_edge; ++b) {
      const philox::U32x4 block = rng.block(uint64_t(e * blocks_per_edge + b));
      const uint32_t four[4] = {block.x, block.y, block.z, block.w};
      std::copy(four, four + 4, words + 4 * b);
    }
    uint64_t u = 0, v = 0;
    for (int level = 0; level < levels; ++level) {
      if (level < from.type->levels) u = u << 1 | r.quadrants.row_bit(words[level]);
      if (level < to.type->levels) v = v << 1 | r.quadrants.col_bit(words[level]);
    }
    const int64_t x = position(u, words[levels], from.type->levels, from.type->count);
    int64_t y = position(v, words[levels + 1], to.type->levels, to.type->count);
    if (uint64_t(words[levels + 2]) < move)
      y = to.layout->move_to_class(y, from.layout->class_of(x), to.type->count);
    src[e] = from.offset + from.perm[x];
    dst[e] = to.offset + to.perm[y];
  }
}

}  // namespace

GraphDataset generate_typed_rmat(const TypedRmatOptions& o) {
  std::vector<TypeSpec> types;
  std::vector<RelationSpec> rels;
  int64_t label_type = 0;
  resolve(o, &types, &rels, &label_type);
  const int64_t T = int64_t(types.size()), R = int64_t(rels.size()), K = o.num_classes;

  std::vector<int64_t> offsets{0};
  std::vector<std::vector<int64_t>> perm(static_cast<size_t>(T));
  std::vector<ClassLayout> layouts;
  for (int64_t t = 0; t < T; ++t) {
    offsets.push_back(offsets.back() + types[size_t(t)].count);
    perm[size_t(t)].resize(size_t(types[size_t(t)].count));
    std::iota(perm[size_t(t)].begin(), perm[size_t(t)].end(), int64_t(0));
    if (o.permute_ids) shuffle(&perm[size_t(t)], o.seed, stream(kPermutation, t));
    layouts.emplace_back(o.seed, t, K);
  }
  const int64_t n = offsets.back();

  int64_t edges = 0;
  for (const RelationSpec& r : rels) edges += r.edges;
  const int64_t total = edges * (o.reverse_relations ? 2 : 1);
  Tensor src_t = Tensor::empty({total}, DType::i64), dst_t = Tensor::empty({total}, DType::i64),
         rel_t = Tensor::empty({total}, DType::i64);
  int64_t *src = src_t.data<int64_t>(), *dst = dst_t.data<int64_t>(), *rel = rel_t.data<int64_t>();
  auto end_of = [&](int64_t t) {
    return EdgeEnd{&types[size_t(t)], &layouts[size_t(t)], perm[size_t(t)].data(), offsets[size_t(t)]};
  };
  int64_t start = 0;
  for (int64_t ri = 0; ri < R; ++ri) {
    const RelationSpec& r = rels[size_t(ri)];
    draw_relation(r, end_of(r.src), end_of(r.dst), o.homophily, PhiloxStream(o.seed, stream(kEdges, ri)),
                  src + start, dst + start);
    std::fill(rel + start, rel + start + r.edges, ri);
    start += r.edges;
  }
  std::vector<Relation> relations;
  for (const RelationSpec& r : rels) relations.push_back(Relation{r.src, r.name, r.dst});
  if (o.reverse_relations) {
    for (const RelationSpec& r : rels) relations.push_back(Relation{r.dst, "rev_" + r.name, r.src});
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < edges; ++e)
      src[edges + e] = dst[e], dst[edges + e] = src[e], rel[edges + e] = rel[e] + R;
  }

  std::vector<int64_t> classes(static_cast<size_t>(n)), labels(static_cast<size_t>(n), -1);
  for (int64_t t = 0; t < T; ++t) {
    const int64_t* p_of = perm[size_t(t)].data();
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < types[size_t(t)].count; ++p)
      classes[size_t(offsets[size_t(t)] + p_of[p])] = layouts[size_t(t)].class_of(p);
  }
  std::copy(classes.begin() + offsets[size_t(label_type)], classes.begin() + offsets[size_t(label_type) + 1],
            labels.begin() + offsets[size_t(label_type)]);

  GraphDataset data;
  std::vector<std::string> type_names;
  std::vector<int64_t> counts;
  for (const TypeSpec& t : types) type_names.push_back(t.name), counts.push_back(t.count);
  data.graph = Graph::from_typed_edges(type_names, counts, std::move(relations), src_t, dst_t, rel_t);
  data.labels = host_tensor(labels);
  data.num_classes = K;
  if (o.feature_dim > 0)
    data.features = class_features(labels, K, o.feature_dim, o.feature_signal, o.seed,
                                   stream(kFeatureMean, 0), stream(kFeatureNoise, 0));
  data.node_properties["class"] = host_tensor(classes);
  data.name = detail::concat("typed_rmat(edges=", edges, ")");
  return data;
}

}  // namespace strata::io
