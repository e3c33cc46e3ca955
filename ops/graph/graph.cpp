#include "strata/ops/graph.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <numeric>
#include <optional>
#include <type_traits>
#include <utility>

#include "ops/common/index_rows.h"
#include "strata/core/error.h"
#include "strata/core/factory.h"

namespace strata {

struct Graph::Derived {
  std::mutex mu;
  std::optional<Graph> without_loops, with_loops;
  std::optional<Tensor> in_degrees, out_degrees, norm_f32, norm_f64;
  std::optional<int64_t> next_edge_id;
  std::optional<MergedEdges> merged_in, merged_out;
  std::optional<Tensor> merged_in_rank, edge_relations, node_type_ids, mean_norm_f32, mean_norm_f64;
  std::optional<NodeRelationPairs> source_pairs, destination_pairs;
  std::optional<Tensor> destination_merged_pair;
};

template <class T, class F>
T Graph::kept(std::optional<T> Derived::*slot, F compute) const {
  if (!derived_) return compute();  // a default-constructed graph
  std::lock_guard<std::mutex> lock(derived_->mu);
  auto& s = (*derived_).*slot;
  if (!s) s = compute();
  return *s;
}

namespace {

// The values of an integer CPU tensor [E] as i64.
std::vector<int64_t> ids_of(const Tensor& t, const char* what, int64_t expected_size) {
  STRATA_CHECK(t.defined() && t.dim() == 1, ShapeError, "Graph: ", what, " must be a 1-D tensor of ids, got ",
               t.defined() ? t.str() : std::string("undefined"));
  STRATA_CHECK(!is_floating(t.dtype()) && t.dtype() != DType::boolean, TypeError, "Graph: ", what,
               " must hold integers, got ", t.str());
  STRATA_CHECK(expected_size < 0 || t.numel() == expected_size, ShapeError, "Graph: ", what, " has ",
               t.numel(), " entries, the edge list ", expected_size);
  return t.to(kCPU).to_vector<int64_t>();
}

// A CPU tensor [n] of index dtype `dt` holding value(i) at i.
template <class F>
Tensor index_tensor_of(int64_t n, DType dt, F value) {
  Tensor t = Tensor::empty({n}, dt);
  auto fill = [&](auto* out) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<std::remove_pointer_t<decltype(out)>>(value(i));
  };
  if (dt == DType::i32)
    fill(t.data<int32_t>());
  else
    fill(t.data<int64_t>());
  return t;
}

// `v` as a CPU tensor of index dtype `dt` (no i64 copy on the way).
Tensor index_tensor(const std::vector<int64_t>& v, DType dt) {
  return index_tensor_of(int64_t(v.size()), dt, [&](int64_t i) { return v[size_t(i)]; });
}

// Offsets of a sorted index tensor over positions [begin, end): out[k] = first position whose
// key[position] - base >= k, for k in [0, n].
void offsets_into(common::IndexRows key, int64_t begin, int64_t end, int64_t base, int64_t n,
                  std::vector<int64_t>* out) {
  int64_t at = begin;
  for (int64_t k = 0; k <= n; ++k) {
    while (at < end && key[at] - base < k) ++at;
    out->push_back(at);
  }
}

// `order` stably sorted by key[e] in [0, K) (a counting sort).
std::vector<int64_t> stable_by(const std::vector<int64_t>& order, const std::vector<int64_t>& key,
                               int64_t K) {
  std::vector<int64_t> at(static_cast<size_t>(K) + 1, 0), out(order.size());
  for (int64_t e : order) ++at[size_t(key[size_t(e)]) + 1];
  for (int64_t k = 0; k < K; ++k) at[size_t(k) + 1] += at[size_t(k)];
  for (int64_t e : order) out[size_t(at[size_t(key[size_t(e)])]++)] = e;
  return out;
}

// `order` stably sorted by each (key, K) in turn, least significant first; one sorted copy alive
// beside `order` at a time.
std::vector<int64_t> sorted_by(std::vector<int64_t> order,
                               std::initializer_list<std::pair<const std::vector<int64_t>*, int64_t>> keys) {
  for (const auto& [key, K] : keys) order = stable_by(order, *key, K);
  return order;
}

}  // namespace

DType Graph::index_dtype_for(int64_t num_nodes, int64_t num_edges) {
  const int64_t limit = std::numeric_limits<int32_t>::max();
  return num_nodes <= limit && num_edges <= limit ? DType::i32 : DType::i64;
}

Graph Graph::from_edges(int64_t num_nodes, const Tensor& src, const Tensor& dst) {
  STRATA_CHECK(num_nodes >= 0, ValueError, "Graph: num_nodes ", num_nodes, " is negative");
  std::vector<int64_t> s = ids_of(src, "src", -1);
  std::vector<int64_t> d = ids_of(dst, "dst", int64_t(s.size()));
  for (size_t e = 0; e < s.size(); ++e)
    STRATA_CHECK(s[e] >= 0 && s[e] < num_nodes && d[e] >= 0 && d[e] < num_nodes, IndexError, "Graph: edge ",
                 e, " (", s[e], " -> ", d[e], ") names a node outside [0, ", num_nodes, ")");
  std::vector<int64_t> rel(s.size(), 0), ids(s.size());
  std::iota(ids.begin(), ids.end(), 0);
  return build({"node"}, {0, num_nodes}, {Relation{}}, s, d, rel, ids);
}

Graph Graph::from_typed_edges(std::vector<std::string> node_types, const std::vector<int64_t>& nodes_per_type,
                              std::vector<Relation> relations, const Tensor& src, const Tensor& dst,
                              const Tensor& rel) {
  const int64_t T = int64_t(node_types.size());
  STRATA_CHECK(T > 0 && int64_t(nodes_per_type.size()) == T, ValueError, "Graph: ", T, " node types but ",
               nodes_per_type.size(), " node counts");
  std::vector<int64_t> offsets{0};
  for (int64_t t = 0; t < T; ++t) {
    STRATA_CHECK(nodes_per_type[size_t(t)] >= 0, ValueError, "Graph: node type '", node_types[size_t(t)],
                 "' has ", nodes_per_type[size_t(t)], " nodes");
    offsets.push_back(offsets.back() + nodes_per_type[size_t(t)]);
  }
  STRATA_CHECK(!relations.empty(), ValueError, "Graph: no relation");
  for (const Relation& r : relations)
    STRATA_CHECK(r.src_type >= 0 && r.src_type < T && r.dst_type >= 0 && r.dst_type < T, IndexError,
                 "Graph: relation '", r.name, "' joins node types ", r.src_type, " and ", r.dst_type, " of ",
                 T);
  std::vector<int64_t> s = ids_of(src, "src", -1);
  std::vector<int64_t> d = ids_of(dst, "dst", int64_t(s.size()));
  std::vector<int64_t> r = ids_of(rel, "rel", int64_t(s.size()));
  auto type_range = [&](int64_t t) {
    return std::string("[") + std::to_string(offsets[size_t(t)]) + ", " +
           std::to_string(offsets[size_t(t) + 1]) + ")";
  };
  for (size_t e = 0; e < s.size(); ++e) {
    STRATA_CHECK(r[e] >= 0 && r[e] < int64_t(relations.size()), IndexError, "Graph: edge ", e,
                 " has relation ", r[e], " of ", relations.size());
    const Relation& R = relations[size_t(r[e])];
    STRATA_CHECK(s[e] >= offsets[size_t(R.src_type)] && s[e] < offsets[size_t(R.src_type) + 1], IndexError,
                 "Graph: edge ", e, " of relation '", R.name, "' starts at node ", s[e], ", not a '",
                 node_types[size_t(R.src_type)], "' node ", type_range(R.src_type));
    STRATA_CHECK(d[e] >= offsets[size_t(R.dst_type)] && d[e] < offsets[size_t(R.dst_type) + 1], IndexError,
                 "Graph: edge ", e, " of relation '", R.name, "' ends at node ", d[e], ", not a '",
                 node_types[size_t(R.dst_type)], "' node ", type_range(R.dst_type));
  }
  std::vector<int64_t> ids(s.size());
  std::iota(ids.begin(), ids.end(), 0);
  return build(std::move(node_types), std::move(offsets), std::move(relations), s, d, r, ids);
}

Graph Graph::build(std::vector<std::string> node_types, std::vector<int64_t> type_offsets,
                   std::vector<Relation> relations, const std::vector<int64_t>& src,
                   const std::vector<int64_t>& dst, const std::vector<int64_t>& rel,
                   const std::vector<int64_t>& edge_ids) {
  Graph g;
  g.node_types_ = std::move(node_types);
  g.type_offsets_ = std::move(type_offsets);
  g.relations_ = std::move(relations);
  const int64_t E = int64_t(src.size()), R = int64_t(g.relations_.size()), N = g.num_nodes();
  const DType dt = index_dtype_for(N, E);
  g.derived_ = std::make_shared<Derived>();
  // CSC order: (relation, destination, source, edge id); CSR order: (relation, source, destination,
  // edge id). Stable counting sorts from the least significant key (O(E + N) each): by edge id
  // first (the input is usually in id order already), then the others. The sorted index tensors
  // are written straight from the permutations, and each permutation is dropped once used, so the
  // build holds about 40 bytes per edge beside its inputs (i32 ids).
  std::vector<int64_t> by_id(static_cast<size_t>(E));
  std::iota(by_id.begin(), by_id.end(), 0);
  if (!std::is_sorted(edge_ids.begin(), edge_ids.end()))
    std::stable_sort(by_id.begin(), by_id.end(),
                     [&](int64_t a, int64_t b) { return edge_ids[size_t(a)] < edge_ids[size_t(b)]; });
  std::vector<int64_t> pos_in_csc(static_cast<size_t>(E));
  {
    const std::vector<int64_t> csc = sorted_by(by_id, {{&src, N}, {&dst, N}, {&rel, R}});
    auto at = [&](int64_t i) { return size_t(csc[size_t(i)]); };
    g.src_ = index_tensor_of(E, dt, [&](int64_t i) { return src[at(i)]; });
    g.dst_ = index_tensor_of(E, dt, [&](int64_t i) { return dst[at(i)]; });
    g.edge_ids_ = index_tensor_of(E, dt, [&](int64_t i) { return edge_ids[at(i)]; });
    for (int64_t i = 0; i < E; ++i) pos_in_csc[at(i)] = i;
  }
  g.relation_offsets_.assign(size_t(R) + 1, 0);
  for (int64_t r : rel) ++g.relation_offsets_[size_t(r) + 1];
  for (int64_t r = 0; r < R; ++r) g.relation_offsets_[size_t(r) + 1] += g.relation_offsets_[size_t(r)];
  by_id = sorted_by(std::move(by_id), {{&dst, N}, {&src, N}, {&rel, R}});  // now the CSR order
  const std::vector<int64_t>& csr = by_id;
  g.csr_src_ = index_tensor_of(E, dt, [&](int64_t i) { return src[size_t(csr[size_t(i)])]; });
  g.csr_dst_ = index_tensor_of(E, dt, [&](int64_t i) { return dst[size_t(csr[size_t(i)])]; });
  g.csr_edges_ = index_tensor_of(E, dt, [&](int64_t i) { return pos_in_csc[size_t(csr[size_t(i)])]; });
  std::vector<int64_t> in_off, out_off;
  for (int64_t r = 0; r < R; ++r) {
    const Relation& rr = g.relations_[size_t(r)];
    const int64_t b = g.relation_offsets_[size_t(r)], e = g.relation_offsets_[size_t(r) + 1];
    g.in_starts_.push_back(int64_t(in_off.size()));
    offsets_into(common::IndexRows(g.dst_), b, e, g.type_offsets_[size_t(rr.dst_type)],
                 g.nodes_of_type(rr.dst_type), &in_off);
    g.out_starts_.push_back(int64_t(out_off.size()));
    offsets_into(common::IndexRows(g.csr_src_), b, e, g.type_offsets_[size_t(rr.src_type)],
                 g.nodes_of_type(rr.src_type), &out_off);
  }
  g.in_offsets_ = index_tensor(in_off, DType::i64);
  g.out_offsets_ = index_tensor(out_off, DType::i64);
  return g;
}

void Graph::edges_by_id(std::vector<int64_t>* src, std::vector<int64_t>* dst, std::vector<int64_t>* rel,
                        std::vector<int64_t>* ids) const {
  const std::vector<int64_t> s = src_.to(kCPU).to_vector<int64_t>(), d = dst_.to(kCPU).to_vector<int64_t>();
  const std::vector<int64_t> eid = edge_ids_.to(kCPU).to_vector<int64_t>();
  const int64_t E = num_edges();
  std::vector<int64_t> r(static_cast<size_t>(E)), order(static_cast<size_t>(E));
  for (int64_t ri = 0; ri < num_relations(); ++ri)
    for (int64_t i = relation_offset(ri); i < relation_offset(ri + 1); ++i) r[size_t(i)] = ri;
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](int64_t a, int64_t b) { return eid[size_t(a)] < eid[size_t(b)]; });
  src->clear(), dst->clear(), rel->clear(), ids->clear();
  for (int64_t i : order)
    src->push_back(s[size_t(i)]), dst->push_back(d[size_t(i)]), rel->push_back(r[size_t(i)]),
        ids->push_back(eid[size_t(i)]);
}

Tensor Graph::in_degrees() const {
  if (device().is_meta()) return Tensor::empty({num_nodes()}, DType::i64, device());  // shapes only
  return kept(&Derived::in_degrees, [&] {
    std::vector<int64_t> deg(size_t(num_nodes()), 0);
    for (int64_t v : dst_.to(kCPU).to_vector<int64_t>()) ++deg[size_t(v)];
    return from_vector(deg, {num_nodes()}, TensorOptions(DType::i64)).to(device());
  });
}

Tensor Graph::out_degrees() const {
  if (device().is_meta()) return Tensor::empty({num_nodes()}, DType::i64, device());
  return kept(&Derived::out_degrees, [&] {
    std::vector<int64_t> deg(size_t(num_nodes()), 0);
    for (int64_t u : src_.to(kCPU).to_vector<int64_t>()) ++deg[size_t(u)];
    return from_vector(deg, {num_nodes()}, TensorOptions(DType::i64)).to(device());
  });
}

Graph Graph::add_self_loops() const {
  return kept(&Derived::with_loops, [&] { return with_loops_built(); });
}

Graph Graph::with_loops_built() const {
  std::vector<int64_t> s, d, r, ids;
  edges_by_id(&s, &d, &r, &ids);
  int64_t next = ids.empty() ? 0 : ids.back() + 1;
  for (int64_t ri = 0; ri < num_relations(); ++ri) {
    const Relation& rr = relations_[size_t(ri)];
    if (rr.src_type != rr.dst_type) continue;
    for (int64_t v = type_offset(rr.src_type); v < type_offset(rr.src_type + 1); ++v)
      s.push_back(v), d.push_back(v), r.push_back(ri), ids.push_back(next++);
  }
  return build(node_types_, type_offsets_, relations_, s, d, r, ids).to(device());
}

int64_t Graph::next_edge_id() const {
  return kept(&Derived::next_edge_id, [&] {
    int64_t next = 0;
    if (num_edges() > 0)
      for (int64_t id : edge_ids_.to(kCPU).to_vector<int64_t>()) next = std::max(next, id + 1);
    return next;
  });
}

Graph Graph::remove_self_loops() const {
  return kept(&Derived::without_loops, [&] { return without_loops_built(); });
}

Graph Graph::without_loops_built() const {
  std::vector<int64_t> s, d, r, ids;
  edges_by_id(&s, &d, &r, &ids);
  std::vector<int64_t> ks, kd, kr, kids;
  for (size_t e = 0; e < s.size(); ++e)
    if (s[e] != d[e]) ks.push_back(s[e]), kd.push_back(d[e]), kr.push_back(r[e]), kids.push_back(ids[e]);
  return build(node_types_, type_offsets_, relations_, ks, kd, kr, kids).to(device());
}

Graph Graph::with_reverse_relations() const {
  std::vector<int64_t> s, d, r, ids;
  edges_by_id(&s, &d, &r, &ids);
  std::vector<Relation> rels = relations_;
  const int64_t R = num_relations(), E = num_edges();
  for (int64_t ri = 0; ri < R; ++ri) {
    const Relation& rr = relations_[size_t(ri)];
    rels.push_back(Relation{rr.dst_type, "rev_" + rr.name, rr.src_type});
  }
  int64_t next = ids.empty() ? 0 : ids.back() + 1;
  for (int64_t e = 0; e < E; ++e)
    s.push_back(d[size_t(e)]), d.push_back(s[size_t(e)]), r.push_back(r[size_t(e)] + R),
        ids.push_back(next++);
  return build(node_types_, type_offsets_, rels, s, d, r, ids).to(device());
}

Tensor Graph::symmetric_norm(DType dtype) const {
  STRATA_CHECK(dtype == DType::f32 || dtype == DType::f64, TypeError, "symmetric_norm: f32 or f64, not ",
               dtype_name(dtype));
  return kept(dtype == DType::f64 ? &Derived::norm_f64 : &Derived::norm_f32,
              [&] { return norm_built(dtype); });
}

Tensor Graph::norm_built(DType dtype) const {
  std::vector<int64_t> deg(size_t(num_nodes()), 0);
  const std::vector<int64_t> s = src_.to(kCPU).to_vector<int64_t>(), d = dst_.to(kCPU).to_vector<int64_t>();
  for (int64_t v : d) ++deg[size_t(v)];
  auto inv_sqrt = [&](int64_t v) {
    return deg[size_t(v)] > 0 ? 1.0 / std::sqrt(double(deg[size_t(v)])) : 0.0;
  };
  std::vector<double> w(s.size());
  for (size_t e = 0; e < s.size();
       ++e)  // each factor rounded to dtype, their product too, as PyG computes it
    w[e] = dtype == DType::f64 ? inv_sqrt(s[e]) * inv_sqrt(d[e])
                               : double(float(inv_sqrt(s[e])) * float(inv_sqrt(d[e])));
  return from_vector(w, {int64_t(w.size())}, TensorOptions(dtype)).to(device());
}

MergedEdges Graph::in_edges_merged() const {
  if (num_relations() == 1 && num_node_types() == 1) return {in_offsets_, src_, Tensor()};
  return kept(&Derived::merged_in, [&] { return merged_built(false); });
}

MergedEdges Graph::out_edges_merged() const {
  if (num_relations() == 1 && num_node_types() == 1) return {out_offsets_, csr_dst_, csr_edges_};
  return kept(&Derived::merged_out, [&] { return merged_built(true); });
}

Tensor Graph::in_edges_merged_rank() const {
  const MergedEdges m = in_edges_merged();
  if (!m.positions.defined() || device().is_meta()) return m.positions.defined() ? m.positions : Tensor();
  return kept(&Derived::merged_in_rank, [&] {
    const std::vector<int64_t> pos = m.positions.to(kCPU).to_vector<int64_t>();
    std::vector<int64_t> rank(pos.size());
    for (size_t k = 0; k < pos.size(); ++k) rank[size_t(pos[k])] = int64_t(k);
    return index_tensor(rank, index_dtype()).to(device());
  });
}

Tensor Graph::relation_mean_norm(DType dtype) const {
  STRATA_CHECK(dtype == DType::f32 || dtype == DType::f64, TypeError, "relation_mean_norm: f32 or f64, not ",
               dtype_name(dtype));
  if (device().is_meta()) return Tensor::empty({num_edges()}, dtype, device());
  const NodeRelationPairs dp = destination_pairs();  // outside the lock kept() holds
  return kept(dtype == DType::f64 ? &Derived::mean_norm_f64 : &Derived::mean_norm_f32, [&] {
    const std::vector<int64_t> off = dp.edge_offsets.to(kCPU).to_vector<int64_t>();
    std::vector<double> w(static_cast<size_t>(num_edges()));
    for (size_t p = 0; p + 1 < off.size(); ++p)  // a pair's in-edges are one CSC run
      std::fill(w.begin() + off[p], w.begin() + off[p + 1], 1.0 / double(off[p + 1] - off[p]));
    return from_vector(w, {num_edges()}, TensorOptions(dtype)).to(device());
  });
}

Tensor Graph::edge_relations() const {
  if (device().is_meta()) return Tensor::empty({num_edges()}, DType::i64, device());
  return kept(&Derived::edge_relations, [&] {
    std::vector<int64_t> rel(static_cast<size_t>(num_edges()));
    for (int64_t r = 0; r < num_relations(); ++r)
      std::fill(rel.begin() + relation_offsets_[size_t(r)], rel.begin() + relation_offsets_[size_t(r + 1)],
                r);
    return from_vector(rel, {num_edges()}).to(device());
  });
}

Tensor Graph::node_type_ids() const {
  if (device().is_meta()) return Tensor::empty({num_nodes()}, DType::i64, device());
  return kept(&Derived::node_type_ids, [&] {
    std::vector<int64_t> type(static_cast<size_t>(num_nodes()));
    for (int64_t t = 0; t < num_node_types(); ++t)
      std::fill(type.begin() + type_offsets_[size_t(t)], type.begin() + type_offsets_[size_t(t + 1)], t);
    return from_vector(type, {num_nodes()}).to(device());
  });
}

// Orders the CSC edges by their aggregating end alone (stable: relation order within a node).
MergedEdges Graph::merged_built(bool by_source) const {
  const int64_t N = num_nodes(), E = num_edges();
  if (device().is_meta())
    return {Tensor::empty({N + 1}, DType::i64, device()), Tensor::empty({E}, index_dtype(), device()),
            Tensor::empty({E}, index_dtype(), device())};
  const std::vector<int64_t> ends = (by_source ? src_ : dst_).to(kCPU).to_vector<int64_t>();
  const std::vector<int64_t> others = (by_source ? dst_ : src_).to(kCPU).to_vector<int64_t>();
  std::vector<int64_t> off(static_cast<size_t>(N + 1), 0), idx(static_cast<size_t>(E)),
      pos(static_cast<size_t>(E));
  for (int64_t v : ends) ++off[size_t(v) + 1];
  for (int64_t v = 0; v < N; ++v) off[size_t(v) + 1] += off[size_t(v)];
  std::vector<int64_t> fill(off.begin(), off.end() - 1);
  for (int64_t e = 0; e < E; ++e) {
    const int64_t at = fill[size_t(ends[size_t(e)])]++;
    idx[size_t(at)] = others[size_t(e)], pos[size_t(at)] = e;
  }
  const DType it = index_dtype();
  return {from_vector(off, {N + 1}).to(device()), index_tensor(idx, it).to(device()),
          index_tensor(pos, it).to(device())};
}

NodeRelationPairs Graph::source_pairs() const {
  const MergedEdges in = in_edges_merged();  // outside the lock kept() holds
  return kept(&Derived::source_pairs, [&] { return pairs_built(true, in); });
}

NodeRelationPairs Graph::destination_pairs() const {
  return kept(&Derived::destination_pairs, [&] { return pairs_built(false, MergedEdges{}); });
}

Tensor Graph::destination_merged_pair() const {
  const MergedEdges out = out_edges_merged();  // outside the lock kept() holds
  const NodeRelationPairs dp = destination_pairs();
  if (device().is_meta()) return Tensor::empty({num_edges()}, index_dtype(), device());
  if (!out.positions.defined()) return dp.edge_pair;  // a homogeneous graph: the CSC order itself
  return kept(&Derived::destination_merged_pair, [&] {
    const std::vector<int64_t> pair = dp.edge_pair.to(kCPU).to_vector<int64_t>();
    const std::vector<int64_t> pos = out.positions.to(kCPU).to_vector<int64_t>();
    return index_tensor_of(num_edges(), index_dtype(),
                           [&](int64_t k) { return pair[size_t(pos[size_t(k)])]; })
        .to(device());
  });
}

// Pairs are runs of one node within a relation: of sources in the CSR (sorted by relation, source),
// of destinations in the CSC (relation, destination). Source pairs also get merged_pair, through
// `other_end` (in_edges_merged()).
NodeRelationPairs Graph::pairs_built(bool sources, const MergedEdges& other_end) const {
  const int64_t E = num_edges(), R = num_relations();
  const DType it = index_dtype();
  NodeRelationPairs p;
  if (device().is_meta()) {  // shapes only: as if every edge were its own pair
    p.offsets = relation_offsets_;
    for (Tensor* t : {&p.nodes, &p.edge_pair}) *t = Tensor::empty({E}, it, device());
    if (sources) p.merged_pair = Tensor::empty({E}, it, device());
    p.edge_offsets = Tensor::empty({E + 1}, DType::i64, device());
    p.relation = Tensor::empty({E}, it, device());
    return p;
  }
  const std::vector<int64_t> ends = (sources ? csr_src_ : dst_).to(kCPU).to_vector<int64_t>();
  const std::vector<int64_t> csc_of =
      sources ? csr_edges_.to(kCPU).to_vector<int64_t>() : std::vector<int64_t>();
  std::vector<int64_t> nodes, edge_off, edge_pair(static_cast<size_t>(E));
  p.offsets.assign(size_t(R + 1), 0);
  for (int64_t r = 0; r < R; ++r) {
    for (int64_t k = relation_offsets_[size_t(r)]; k < relation_offsets_[size_t(r + 1)]; ++k) {
      if (k == relation_offsets_[size_t(r)] || ends[size_t(k)] != ends[size_t(k - 1)])
        nodes.push_back(ends[size_t(k)]), edge_off.push_back(k);
      edge_pair[size_t(sources ? csc_of[size_t(k)] : k)] = int64_t(nodes.size()) - 1;
    }
    p.offsets[size_t(r + 1)] = int64_t(nodes.size());
  }
  edge_off.push_back(E);
  const int64_t P = int64_t(nodes.size());
  p.nodes = index_tensor(nodes, it).to(device());
  p.edge_offsets = from_vector(edge_off, {P + 1}).to(device());
  std::vector<int64_t> relation(static_cast<size_t>(P));
  for (int64_t r = 0; r < R; ++r)
    std::fill(relation.begin() + p.offsets[size_t(r)], relation.begin() + p.offsets[size_t(r + 1)], r);
  p.relation = index_tensor(relation, it).to(device());
  if (sources) {
    std::vector<int64_t> pos;
    if (other_end.positions.defined()) pos = other_end.positions.to(kCPU).to_vector<int64_t>();
    p.merged_pair = index_tensor_of(E, it, [&](int64_t k) {
                      return edge_pair[size_t(pos.empty() ? k : pos[size_t(k)])];
                    }).to(device());
  }
  p.edge_pair = index_tensor_of(E, it, [&](int64_t k) { return edge_pair[size_t(k)]; }).to(device());
  return p;
}

Graph Graph::to(Device device) const {
  if (device == this->device()) return *this;
  Graph g = *this;
  g.derived_ = std::make_shared<Derived>();
  for (Tensor* t : {&g.src_, &g.dst_, &g.edge_ids_, &g.in_offsets_, &g.csr_src_, &g.csr_dst_, &g.csr_edges_,
                    &g.out_offsets_})
    if (t->defined()) *t = t->to(device);
  // The pairs move along: computed here first for a shapes-only device, which cannot count them.
  if (derived_ && !this->device().is_meta()) {
    std::optional<NodeRelationPairs> sp, dp;
    if (device.is_meta()) sp = source_pairs(), dp = destination_pairs();
    {
      std::lock_guard<std::mutex> lock(derived_->mu);
      if (!sp) sp = derived_->source_pairs;
      if (!dp) dp = derived_->destination_pairs;
    }
    for (auto [from, slot] :
         {std::pair{&sp, &Derived::source_pairs}, std::pair{&dp, &Derived::destination_pairs}}) {
      if (!*from) continue;
      NodeRelationPairs p = **from;
      for (Tensor* t : {&p.nodes, &p.edge_pair, &p.merged_pair, &p.edge_offsets, &p.relation})
        if (t->defined()) *t = t->to(device);
      (*g.derived_).*slot = std::move(p);
    }
  }
  return g;
}

}  // namespace strata
