#include "strata/models/layers/graph/hgt_conv.h"

#include <cmath>
#include <functional>
#include <vector>

#include "models/layers/graph/graph_layer_utils.h"
#include "strata/autograd/grad_mode.h"
#include "strata/ops/elementwise.h"
#include "strata/ops/factory.h"
#include "strata/ops/graph_ops.h"
#include "strata/ops/linalg.h"
#include "strata/ops/relational_ops.h"
#include "strata/ops/segment_ops.h"
#include "strata/ops/shape_ops.h"

namespace strata::nn {

namespace {

// A named level of the parameter tree (PyG's ModuleDicts: "kqv_lin.lins.<type>"); never called.
class ParameterGroup final : public Module {};

std::vector<int64_t> offsets_of(int64_t count, const std::function<int64_t(int64_t)>& at) {
  std::vector<int64_t> off;
  for (int64_t i = 0; i <= count; ++i) off.push_back(at(i));
  return off;
}

// Each row's segment (relation) for segment offsets, i64 [rows] on `device`.
Tensor segment_of_rows(const std::vector<int64_t>& off, Device device) {
  std::vector<int64_t> seg(static_cast<size_t>(off.back()));
  for (size_t s = 0; s + 1 < off.size(); ++s)
    std::fill(seg.begin() + off[s], seg.begin() + off[s + 1], int64_t(s));
  return ops::from_vector(seg, {off.back()}).to(device);
}

}  // namespace

HGTConv::HGTConv(int64_t in_channels, int64_t out_channels, std::vector<std::string> node_types,
                 std::vector<Relation> relations, HGTConvOptions options)
    : in_(in_channels),
      out_(out_channels),
      heads_(options.heads),
      node_types_(std::move(node_types)),
      relations_(std::move(relations)) {
  const int64_t T = int64_t(node_types_.size()), R = int64_t(relations_.size()), H = heads_;
  STRATA_CHECK(in_channels >= 1 && out_channels >= 1 && H >= 1 && out_channels % H == 0 && T >= 1 && R >= 1,
               ValueError, "HGTConv(", in_channels, ", ", out_channels, ", heads ", H, ", ", T,
               " node types, ", R, " relations): sizes must be positive and the heads divide out_channels");
  for (const Relation& r : relations_)
    STRATA_CHECK(r.src_type >= 0 && r.src_type < T && r.dst_type >= 0 && r.dst_type < T, ValueError,
                 "HGTConv: relation ", r.name, " joins types ", r.src_type, " -> ", r.dst_type,
                 ", not among the ", T, " node types");
  const int64_t D = out_channels / H;
  auto kqv_group = register_module("kqv_lin", std::make_shared<ParameterGroup>());
  auto kqv_lins = kqv_group->register_module("lins", std::make_shared<ParameterGroup>());
  auto out_group = register_module("out_lin", std::make_shared<ParameterGroup>());
  auto out_lins = out_group->register_module("lins", std::make_shared<ParameterGroup>());
  for (const std::string& t : node_types_) {
    kqv_lin.push_back(
        kqv_lins->register_module(t, std::make_shared<Linear>(LinearOptions(in_channels, 3 * out_channels))));
    out_lin.push_back(
        out_lins->register_module(t, std::make_shared<Linear>(LinearOptions(out_channels, out_channels))));
  }
  k_rel = register_module("k_rel", std::make_shared<ParameterGroup>())
              ->register_parameter("weight", Tensor::empty({H * R, D, D}));
  v_rel = register_module("v_rel", std::make_shared<ParameterGroup>())
              ->register_parameter("weight", Tensor::empty({H * R, D, D}));
  auto skip_group = register_module("skip", std::make_shared<ParameterGroup>());
  for (const std::string& t : node_types_)
    skip.push_back(skip_group->register_parameter(t, Tensor::empty({1})));
  auto p_group = register_module("p_rel", std::make_shared<ParameterGroup>());
  for (const Relation& r : relations_)
    p_rel.push_back(p_group->register_parameter(
        node_types_[size_t(r.src_type)] + "__" + r.name + "__" + node_types_[size_t(r.dst_type)],
        Tensor::empty({1, H})));
  reset_parameters();
}

void HGTConv::reset_parameters() {
  NoGradGuard no_grad;
  for (auto& l : kqv_lin) l->reset_parameters();
  for (auto& l : out_lin) l->reset_parameters();
  detail::glorot(k_rel);
  detail::glorot(v_rel);
  for (Tensor& s : skip) s.fill_(1.0);
  for (Tensor& p : p_rel) p.fill_(1.0);
}

void HGTConv::set_materialization(Materialization m) {
  STRATA_CHECK(m != Materialization::kAggregateFirst, ValueError,
               "HGTConv: aggregate_first does not apply to attention (the messages are weighted per edge)");
  materialization_ = m;
}

MaterializationPlan HGTConv::plan(const Graph& g) const {
  MaterializationPlan p = plan_counts("HGTConv", g);
  const double E = double(p.edges), P = double(p.source_pairs), N = double(g.num_nodes());
  const double F = double(in_), C = double(out_);
  // Keys and values per row: from k, v (C x C each, after N F 2C for k and v) or, reordered, from x
  // through F x C matrices folded once per relation (2 R F C C).
  const double R = double(relations_.size()), fold = 2 * R * F * C * C;
  auto kv = [&](double rows, bool folded) {
    return folded ? fold + 2 * rows * F * C : 2 * N * F * C + 2 * rows * C * C;
  };
  const bool reorder = reorder_.value_or(kv(P, true) <= kv(P, false));
  auto cost = [&](double rows) { return N * F * C + kv(rows, reorder) + 2 * E * C + N * C * C; };
  p.reorder = reorder;
  p.cost_edge = cost(E), p.rows_edge = 2 * E * C;
  p.cost_compact = cost(P), p.rows_compact = 2 * P * C;
  p.strategy = cheapest(p, materialization_);
  return p;
}

Tensor HGTConv::forward(const Graph& g, const Tensor& x) {
  ModuleScope scope(*this);
  STRATA_CHECK(g.node_types() == node_types_ && g.relations() == relations_, ValueError,
               "HGTConv: the graph's node types and relations are not the layer's (", g.num_node_types(),
               " types, ", g.num_relations(), " relations against ", node_types_.size(), " and ",
               relations_.size(), ")");
  STRATA_CHECK(x.dim() == 2 && x.size(0) == g.num_nodes() && x.size(1) == in_, ShapeError, "HGTConv: x ",
               shape_str(x.shape()), " must be [", g.num_nodes(), ", ", in_, "]");
  const MaterializationPlan p = plan(g);
  const bool compact = p.strategy == Materialization::kCompact;
  const int64_t T = int64_t(node_types_.size()), R = int64_t(relations_.size()), H = heads_, C = out_;
  const int64_t D = C / H, N = g.num_nodes(), E = g.num_edges();
  const std::vector<int64_t> type_off = offsets_of(T, [&](int64_t t) { return g.type_offset(t); });
  const Tensor node_type = g.node_type_ids();

  // Per-type projections stacked [T, in, 3C] (PyG's Linear weights are [3C, in]) and biases [T, 3C].
  std::vector<Tensor> w_kqv, b_kqv, w_out, b_out, skips;
  for (int64_t t = 0; t < T; ++t) {
    w_kqv.push_back(ops::transpose(kqv_lin[size_t(t)]->weight, 0, 1));
    b_kqv.push_back(kqv_lin[size_t(t)]->bias);
    w_out.push_back(ops::transpose(out_lin[size_t(t)]->weight, 0, 1));
    b_out.push_back(out_lin[size_t(t)]->bias);
  }
  const Tensor Wkqv = ops::stack(w_kqv), Bkqv = ops::stack(b_kqv);
  auto part = [&](const Tensor& t, int64_t i) { return ops::narrow(t, t.dim() - 1, i * C, C); };
  auto typed = [&](const Tensor& in, const Tensor& w, const Tensor& b) {  // in_n @ w[type n] + b[type n]
    return ops::add(ops::segment_matmul(in, type_off, w), ops::gather_rows(b, node_type));
  };
  const Tensor q = typed(x, part(Wkqv, 1), part(Bkqv, 1));  // [N, C]

  // k_rel and v_rel as block-diagonal [R, C, C] matrices (head h's D x D block at h D).
  auto per_relation = [&](const Tensor& rel) {
    return detail::block_diagonal(ops::permute(ops::reshape(rel, {H, R, D, D}), {1, 0, 2, 3}));
  };
  const Tensor prel = ops::cat(p_rel, 0);  // [R, H]
  Tensor Krel = per_relation(k_rel);
  const Tensor Vrel = per_relation(v_rel);
  // Reordered, the score's per-relation, per-head factor p_rel / sqrt(D) is folded into k_rel's
  // head columns (R C^2 multiplications) instead of scaling every edge's score.
  if (p.reorder)
    Krel = ops::mul(
        Krel, ops::reshape(ops::expand(ops::reshape(ops::mul(prel, 1.0 / std::sqrt(double(D))), {R, 1, H, 1}),
                                       {R, 1, H, D}),
                           {R, 1, C}));
  const NodeRelationPairs sp = compact ? g.source_pairs() : NodeRelationPairs{};
  const std::vector<int64_t> row_off =
      compact ? sp.offsets : offsets_of(R, [&](int64_t r) { return g.relation_offset(r); });
  const Tensor row_src = compact ? sp.nodes : g.src();
  Tensor Kp, Vp;    // keys and values per row (pair or edge), [rows, C]
  if (p.reorder) {  // x (W_k[src type] k_rel) + b_k[src type] k_rel: the type projection folded in
    std::vector<int64_t> src_types;
    for (const Relation& r : relations_) src_types.push_back(r.src_type);
    const Tensor st = ops::from_vector(src_types, {R}).to(x.device());
    const Tensor rel_of_row = compact ? sp.relation : segment_of_rows(row_off, x.device());
    auto folded = [&](int64_t i, const Tensor& rel) {
      const Tensor w = ops::matmul(ops::gather_rows(part(Wkqv, i), st), rel);  // [R, in, C]
      const Tensor b =
          ops::reshape(ops::matmul(ops::unsqueeze(ops::gather_rows(part(Bkqv, i), st), 1), rel), {R, C});
      return ops::add(ops::segment_matmul(x, row_off, w, {.gather = row_src}),
                      ops::gather_rows(b, rel_of_row));
    };
    Kp = folded(0, Krel), Vp = folded(2, Vrel);
  } else {
    const Tensor k = typed(x, part(Wkqv, 0), part(Bkqv, 0)), v = typed(x, part(Wkqv, 2), part(Bkqv, 2));
    Kp = ops::segment_matmul(k, row_off, Krel, {.gather = row_src});
    Vp = ops::segment_matmul(v, row_off, Vrel, {.gather = row_src});
  }
  Tensor s = compact
                 ? ops::gsddmm_pairs(g, Kp, q, H)
                 : ops::gsddmm(g, "dot", ops::reshape(Kp, {E, H, D}), ops::reshape(q, {N, H, D}), "e", "v");
  s = ops::reshape(s, {E, H});
  if (!p.reorder)
    s = ops::mul(ops::mul(s, ops::gather_rows(prel, g.edge_relations())), 1.0 / std::sqrt(double(D)));
  const Tensor alpha = ops::edge_softmax(g, s, /*across_relations=*/true);
  const Tensor m = compact ? ops::gspmm_pairs(g, Vp, alpha) : ops::gspmm_edges(g, Vp, alpha);  // [N, C]
  Tensor y = typed(ops::gelu(m), ops::stack(w_out), ops::stack(b_out));
  if (C == in_) {  // beta = sigmoid(skip[type])
    const Tensor beta = ops::sigmoid(ops::gather_rows(ops::stack(skip), node_type));  // [N, 1]
    y = ops::add(x, ops::mul(beta, ops::sub(y, x)));                                  // beta a + (1 - beta) x
  }
  return y;
}

}  // namespace strata::nn
