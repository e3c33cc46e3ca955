// gspmm_pairs and gspmm_edges: destinations summing messages kept as rows (one per source-relation
// pair, or one per edge), through the graph's merged in-edges; the gradients gather through each
// pair's (edge's) out-edges. gspmm_to_pairs: sums per destination-relation pair.
#include "ops/dispatch.h"
#include "ops/graph/row_kernels.h"
#include "ops/op_node.h"
#include "strata/ops/graph_ops.h"
#include "strata/ops/shape_ops.h"

namespace strata::ops {

using namespace detail;  // the op-node plumbing: make_node, OpNode, set_outputs, as_rows, iota

namespace {

Tensor aggregate_rows(const Graph& g, const Tensor& rows, const Tensor& w, bool pairs) {
  const char* name = pairs ? "gspmm_pairs" : "gspmm_edges";
  detail::check_defined(name, rows, "rows");
  const Device dev = detail::common_device(name, {&rows, &w});
  STRATA_CHECK(dev == g.device(), DeviceError, name, ": rows on ", dev.str(), ", the graph on ",
               g.device().str());
  const NodeRelationPairs sp = pairs ? g.source_pairs() : NodeRelationPairs{};
  const int64_t E = g.num_edges(), P = pairs ? sp.size() : E, N = g.num_nodes();
  STRATA_CHECK(rows.dim() >= 2 && rows.size(0) == P, ShapeError, name, ": rows ", shape_str(rows.shape()),
               " must be [", P, pairs ? ", ...] (one per source-relation pair)" : ", ...] (one per edge)");
  STRATA_CHECK(is_floating(rows.dtype()), TypeError, name, ": rows must be floating, got ", rows.str());
  const int64_t H = w.defined() && w.dim() == 2 ? w.size(1) : 1;
  Tensor rc = as_rows(rows);
  STRATA_CHECK(!w.defined() || ((w.dim() == 1 || w.dim() == 2) && w.size(0) == E && rc.size(1) % H == 0),
               ShapeError, name, ": edge_weight ", shape_str(w.shape()), " must be [", E, "] or [", E,
               ", H] with H dividing the ", rc.size(1), " features (CSC order)");
  Tensor wc = w.defined() ? detail::raw_contiguous(detail::raw_cast(w, rows.dtype())) : Tensor();
  const MergedEdges in = g.in_edges_merged();
  Tensor at = pairs ? sp.merged_pair : (in.positions.defined() ? in.positions : iota(E, dev));
  Shape oshape = rows.shape();
  oshape[0] = N;
  Tensor out = detail::raw_reshape(detail::row_sum(in.offsets, at, wc, in.positions, rc, N), oshape);
  detail::record(name, dev, 2.0 * double(E) * double(rc.size(1)),
                 double(E) * double(rc.size(1)) * double(rows.element_size()), double(out.nbytes()));
  if (auto node = make_node(pairs ? "GspmmPairsBackward" : "GspmmEdgesBackward", {rows, w})) {
    node->save(wc);
    node->save(node->needs_grad(1) ? rc : Tensor());
    const Shape rshape = rows.shape(), wshape = w.defined() ? w.shape() : Shape{};
    node->backward = [g, pairs, P, E, rshape, wshape](OpNode& n,
                                                      std::vector<Tensor>& grad) -> std::vector<Tensor> {
      const Tensor wt = n.saved(0), g2 = as_rows(grad[0]);
      const Device d = g2.device();
      const NodeRelationPairs s = pairs ? g.source_pairs() : NodeRelationPairs{};
      Tensor gr, gw;
      if (n.needs_grad(0)) {  // each row sums w[e] grad[dst e] over its edges
        gr = pairs ? detail::row_sum(s.edge_offsets, g.csr_dst(), wt, g.csr_edges(), g2, P)
                   : detail::row_sum(iota(E + 1, d), g.dst(), wt, Tensor(), g2, E);
        gr = detail::raw_reshape(gr, rshape);
      }
      if (n.needs_grad(1)) {  // <grad[dst e], rows[r(e)]> per head
        gw = detail::alloc(wshape, g2.dtype(), d);
        detail::kernels(d).sddmm_dot(gw, g.dst(), g2, pairs ? s.edge_pair : iota(E, d), n.saved(1));
      }
      return {gr, gw};
    };
    set_outputs(node, {&out});
  }
  return out;
}

// out[p] = sum over pair p's in-edges (a CSC run) of w[e] x[src e].
Tensor aggregate_to_pairs(const Graph& g, const Tensor& x, const Tensor& w) {
  const char* name = "gspmm_to_pairs";
  detail::check_defined(name, x, "x");
  const Device dev = detail::common_device(name, {&x, &w});
  STRATA_CHECK(dev == g.device(), DeviceError, name, ": x on ", dev.str(), ", the graph on ",
               g.device().str());
  const NodeRelationPairs dp = g.destination_pairs();
  const int64_t E = g.num_edges(), P = dp.size(), N = g.num_nodes();
  STRATA_CHECK(x.dim() >= 2 && x.size(0) == N, ShapeError, name, ": x ", shape_str(x.shape()), " must be [",
               N, ", ...] (a row per node)");
  STRATA_CHECK(is_floating(x.dtype()), TypeError, name, ": x must be floating, got ", x.str());
  const int64_t H = w.defined() && w.dim() == 2 ? w.size(1) : 1;
  Tensor xc = as_rows(x);
  STRATA_CHECK(!w.defined() || ((w.dim() == 1 || w.dim() == 2) && w.size(0) == E && xc.size(1) % H == 0),
               ShapeError, name, ": edge_weight ", shape_str(w.shape()), " must be [", E, "] or [", E,
               ", H] with H dividing the ", xc.size(1), " features (CSC order)");
  Tensor wc = w.defined() ? detail::raw_contiguous(detail::raw_cast(w, x.dtype())) : Tensor();
  Shape oshape = x.shape();
  oshape[0] = P;
  Tensor out = detail::raw_reshape(detail::row_sum(dp.edge_offsets, g.src(), wc, Tensor(), xc, P), oshape);
  detail::record(name, dev, 2.0 * double(E) * double(xc.size(1)),
                 double(E) * double(xc.size(1)) * double(x.element_size()), double(out.nbytes()));
  if (auto node = make_node("GspmmToPairsBackward", {x, w})) {
    node->save(wc);
    node->save(node->needs_grad(1) ? xc : Tensor());
    const Shape xshape = x.shape(), wshape = w.defined() ? w.shape() : Shape{};
    node->backward = [g, N, xshape, wshape](OpNode& n, std::vector<Tensor>& grad) -> std::vector<Tensor> {
      const Tensor wt = n.saved(0), g2 = as_rows(grad[0]);
      const NodeRelationPairs p = g.destination_pairs();
      Tensor gx, gw;
      if (n.needs_grad(0)) {  // each node sums w[e] grad[pair of e] over its out-edges
        const MergedEdges m = g.out_edges_merged();
        gx = detail::raw_reshape(
            detail::row_sum(m.offsets, g.destination_merged_pair(), wt, m.positions, g2, N), xshape);
      }
      if (n.needs_grad(1)) {
        gw = detail::alloc(wshape, g2.dtype(), g2.device());
        detail::kernels(g2.device()).sddmm_dot(gw, p.edge_pair, g2, g.src(), n.saved(1));
      }
      return {gx, gw};
    };
    set_outputs(node, {&out});
  }
  return out;
}

// out[e, h] = <a[pair e], b[dst e]> per head.
Tensor dot_pairs(const Graph& g, const Tensor& a, const Tensor& b, int64_t heads) {
  const char* name = "gsddmm_pairs";
  detail::check_defined(name, a, "pair_rows");
  detail::check_defined(name, b, "dst_rows");
  const Device dev = detail::common_device(name, {&a, &b});
  STRATA_CHECK(dev == g.device(), DeviceError, name, ": rows on ", dev.str(), ", the graph on ",
               g.device().str());
  const NodeRelationPairs sp = g.source_pairs();
  const int64_t E = g.num_edges(), P = sp.size(), N = g.num_nodes();
  STRATA_CHECK(a.dim() == 2 && b.dim() == 2 && a.size(0) == P && b.size(0) == N && a.size(1) == b.size(1) &&
                   heads >= 1 && a.size(1) % heads == 0,
               ShapeError, name, ": pair_rows ", shape_str(a.shape()), " and dst_rows ", shape_str(b.shape()),
               " must be [", P, ", F] and [", N, ", F] with ", heads, " heads dividing F");
  STRATA_CHECK(is_floating(a.dtype()) && a.dtype() == b.dtype(), TypeError, name, ": ", a.str(), " and ",
               b.str(), " must share one floating dtype");
  Tensor ac = detail::raw_contiguous(a), bc = detail::raw_contiguous(b);
  Tensor out = detail::alloc({E, heads}, a.dtype(), dev);
  detail::kernels(dev).sddmm_dot(out, sp.edge_pair, ac, g.dst(), bc);
  detail::record(name, dev, 2.0 * double(E) * double(a.size(1)),
                 double(E) * double(a.size(1) * 2) * double(a.element_size()), double(out.nbytes()));
  if (auto node = make_node("GsddmmPairsBackward", {a, b})) {
    node->save(node->needs_grad(1) ? ac : Tensor());
    node->save(node->needs_grad(0) ? bc : Tensor());
    node->backward = [g, P, N](OpNode& n, std::vector<Tensor>& grad) -> std::vector<Tensor> {
      const Tensor gw = detail::raw_contiguous(grad[0]);  // [E, H]
      const NodeRelationPairs s = g.source_pairs();
      Tensor ga, gb;
      if (n.needs_grad(0))  // pair p: sum over its edges of grad[e, h] dst_rows[dst e]
        ga = detail::row_sum(s.edge_offsets, g.csr_dst(), gw, g.csr_edges(), n.saved(1), P);
      if (n.needs_grad(1)) {  // node v: sum over its in-edges of grad[e, h] pair_rows[pair e]
        const MergedEdges in = g.in_edges_merged();
        gb = detail::row_sum(in.offsets, s.merged_pair, gw, in.positions, n.saved(0), N);
      }
      return {ga, gb};
    };
    set_outputs(node, {&out});
  }
  return out;
}

}  // namespace

Tensor gspmm_pairs(const Graph& g, const Tensor& rows, const Tensor& edge_weight) {
  return aggregate_rows(g, rows, edge_weight, true);
}

Tensor gspmm_edges(const Graph& g, const Tensor& rows, const Tensor& edge_weight) {
  return aggregate_rows(g, rows, edge_weight, false);
}

Tensor gsddmm_pairs(const Graph& g, const Tensor& pair_rows, const Tensor& dst_rows, int64_t heads) {
  return dot_pairs(g, pair_rows, dst_rows, heads);
}

Tensor gspmm_to_pairs(const Graph& g, const Tensor& x, const Tensor& edge_weight) {
  return aggregate_to_pairs(g, x, edge_weight);
}

}  // namespace strata::ops
