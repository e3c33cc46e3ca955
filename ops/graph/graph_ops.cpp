#include "strata/ops/graph_ops.h"

#include <algorithm>
#include <vector>

#include "ops/dispatch.h"
#include "ops/graph/row_kernels.h"
#include "ops/op_node.h"
#include "strata/ops/elementwise.h"
#include "strata/ops/factory.h"
#include "strata/ops/reduction.h"
#include "strata/ops/segment_ops.h"
#include "strata/ops/shape_ops.h"

namespace strata::ops {

using detail::make_node;
using detail::OpNode;
using detail::set_outputs;

namespace {

using detail::as_rows;
using detail::iota;

// The whole graph as one compressed matrix over all relations: for a homogeneous graph its CSC
// (or CSR) as stored; a typed graph's edges merged per global node (Graph::in_edges_merged).
struct Compressed {
  Tensor offsets;    // i64 [N + 1]
  Tensor indices;    // [E]: the other end of each edge
  Tensor positions;  // [E]: the edge's CSC position (undefined: the identity)
};

Compressed compressed(const Graph& g, bool transposed) {
  const MergedEdges m = transposed ? g.out_edges_merged() : g.in_edges_merged();  // kept by the graph
  return {m.offsets, m.others, m.positions};
}

// Each edge's CSC position in the compressed order (the identity where positions is undefined).
Tensor positions_of(const Compressed& c, const Graph& g) {
  return c.positions.defined() ? c.positions : iota(g.num_edges(), g.device());
}

void check_on_graph(const char* op, const Graph& g, Device dev) {
  STRATA_CHECK(dev == g.device(), DeviceError, op, ": features on ", dev.str(), ", the graph on ",
               g.device().str());
}

// Heads of per-edge data [E] (1) or [E, H] (H).
int64_t edge_heads(const Tensor& w) { return w.defined() && w.dim() == 2 ? w.size(1) : 1; }

Tensor spmm_op(const Graph& g, const Tensor& x, const Tensor& w, bool transposed);

// out[e, h] = <a[src e], b[dst e]> over head h's columns (transposed: <a[dst e], b[src e]>); out [E]
// for heads == 0, else [E, heads].
Tensor sddmm_op(const Graph& g, const Tensor& a, const Tensor& b, bool transposed, int64_t heads) {
  const Device dev = detail::common_device("gsddmm_dot", {&a, &b});
  check_on_graph("gsddmm_dot", g, dev);
  STRATA_CHECK(a.dim() == 2 && b.dim() == 2 && a.size(1) == b.size(1) && a.size(0) == g.num_nodes() &&
                   b.size(0) == g.num_nodes() && (heads == 0 || a.size(1) % heads == 0),
               ShapeError, "gsddmm_dot: a ", shape_str(a.shape()), " and b ", shape_str(b.shape()),
               " must be [", g.num_nodes(), ", F]", heads > 1 ? " with F a multiple of the heads" : "");
  STRATA_CHECK(is_floating(a.dtype()) && a.dtype() == b.dtype(), TypeError, "gsddmm_dot: a ", a.str(),
               " and b ", b.str(), " must share one floating dtype");
  Tensor ac = detail::raw_contiguous(a), bc = detail::raw_contiguous(b);
  Tensor out = heads == 0 ? detail::alloc({g.num_edges()}, a.dtype(), dev)
                          : detail::alloc({g.num_edges(), heads}, a.dtype(), dev);
  detail::kernels(dev).sddmm_dot(out, transposed ? g.dst() : g.src(), ac, transposed ? g.src() : g.dst(), bc);
  detail::record("gsddmm_dot", dev, 2.0 * double(g.num_edges()) * double(a.size(1)),
                 double(g.num_edges()) * double(a.size(1) * 2) * double(a.element_size()),
                 double(out.nbytes()));
  if (auto node = make_node("GsddmmDotBackward", {a, b})) {
    node->save(ac);
    node->save(bc);
    node->backward = [g, transposed](OpNode& n, std::vector<Tensor>& grad) -> std::vector<Tensor> {
      // d/da[u] = sum over edges leaving u (as a's end) of grad[e] b[other end], and likewise for b.
      Tensor ga = n.needs_grad(0) ? spmm_op(g, n.saved(1), grad[0], !transposed) : Tensor();
      Tensor gb = n.needs_grad(1) ? spmm_op(g, n.saved(0), grad[0], transposed) : Tensor();
      return {ga, gb};
    };
    set_outputs(node, {&out});
  }
  return out;
}

// out[v] = sum over in-edges (transposed: out-edges) e of w[e] x[other end]; w [E] or [E, H] (head h
// weighs x's columns [h F/H, (h + 1) F/H)); x [N, ...] (trailing dims flattened to F).
Tensor spmm_op(const Graph& g, const Tensor& x, const Tensor& w, bool transposed) {
  const Device dev = detail::common_device("gspmm", {&x, &w});
  check_on_graph("gspmm", g, dev);
  STRATA_CHECK(x.dim() >= 2 && x.size(0) == g.num_nodes(), ShapeError, "gspmm: x ", shape_str(x.shape()),
               " must be [", g.num_nodes(), ", ...] (a row per node)");
  STRATA_CHECK(is_floating(x.dtype()), TypeError, "gspmm: x must be floating, got ", x.str());
  const int64_t H = edge_heads(w);
  Tensor xc = as_rows(x);
  STRATA_CHECK(!w.defined() || ((w.dim() == 1 || w.dim() == 2) && w.size(0) == g.num_edges() && H >= 1 &&
                                xc.size(1) % H == 0),
               ShapeError, "gspmm: edge_weight ", shape_str(w.shape()), " must be [", g.num_edges(), "] or [",
               g.num_edges(), ", H] with H dividing the ", xc.size(1), " features (CSC order)");
  Tensor wc = w.defined() ? detail::raw_contiguous(detail::raw_cast(w, x.dtype())) : Tensor();
  const Compressed c = compressed(g, transposed);
  Tensor out = detail::raw_reshape(detail::row_sum(c.offsets, c.indices, wc, c.positions, xc, g.num_nodes()),
                                   x.shape());
  detail::record("gspmm", dev, 2.0 * double(g.num_edges()) * double(xc.size(1)),
                 double(g.num_edges()) * double(xc.size(1)) * double(x.element_size()), double(out.nbytes()));
  if (auto node = make_node("GspmmBackward", {x, w})) {
    if (wc.defined()) node->save(wc);
    if (node->needs_grad(1)) node->save(xc);
    const bool has_w = wc.defined();
    const Shape xshape = x.shape(), wshape = w.defined() ? w.shape() : Shape{};
    node->backward = [g, transposed, has_w, H, xshape, wshape](
                         OpNode& n, std::vector<Tensor>& grad) -> std::vector<Tensor> {
      Tensor wt = has_w ? n.saved(0) : Tensor();
      Tensor g2 = as_rows(grad[0]);
      Tensor gx = n.needs_grad(0) ? reshape(spmm_op(g, g2, wt, !transposed), xshape) : Tensor();
      Tensor gw;
      if (n.needs_grad(1))
        gw = reshape(sddmm_op(g, n.saved(has_w ? 1 : 0), g2, transposed, wshape.size() == 2 ? H : 0), wshape);
      return {gx, gw};
    };
    set_outputs(node, {&out});
  }
  return out;
}

// max or min over each node's in-edges of x[source]; the gradient goes to the edge that won.
Tensor spmm_extreme_op(const Graph& g, const Tensor& x, bool minimum) {
  const Device dev = x.device();
  check_on_graph("gspmm", g, dev);
  STRATA_CHECK(x.dim() >= 2 && x.size(0) == g.num_nodes(), ShapeError, "gspmm: x ", shape_str(x.shape()),
               " must be [", g.num_nodes(), ", ...] (a row per node)");
  STRATA_CHECK(is_floating(x.dtype()), TypeError, "gspmm: x must be floating, got ", x.str());
  Tensor xc = as_rows(x), arg;
  const Compressed c = compressed(g, false);
  Tensor out = detail::raw_reshape(
      detail::row_extreme(c.offsets, c.indices, c.positions, xc, g.num_nodes(), minimum, &arg), x.shape());
  detail::record("gspmm", dev, double(g.num_edges()) * double(xc.size(1)),
                 double(g.num_edges()) * double(xc.size(1)) * double(x.element_size()),
                 double(out.nbytes() + arg.nbytes()));
  if (auto node = make_node("GspmmExtremeBackward", {x})) {
    node->save(arg);
    const Shape xshape = x.shape();
    node->backward = [g, xshape](OpNode& n, std::vector<Tensor>& grad) -> std::vector<Tensor> {
      const Compressed t = compressed(g, true);  // each source's out-edges: CSC position, destination
      Tensor gx = detail::row_extreme_backward(t.offsets, positions_of(t, g), t.indices, n.saved(0),
                                               as_rows(grad[0]), g.num_nodes());
      return {detail::raw_reshape(gx, xshape)};
    };
    set_outputs(node, {&out});
  }
  return out;
}

// Rows of x [N, ...] per edge in CSC order: x[src e] (source) or x[dst e]; [E, ...].
Tensor gather_endpoint(const Graph& g, const Tensor& x, bool source) {
  const char* name = source ? "gather_src" : "gather_dst";
  STRATA_CHECK(x.defined() && x.dim() >= 1 && x.size(0) == g.num_nodes(), ShapeError, name, ": x ",
               x.defined() ? shape_str(x.shape()) : std::string("undefined"), " must be [", g.num_nodes(),
               ", ...] (a row per node)");
  STRATA_CHECK(is_floating(x.dtype()), TypeError, name, ": x must be floating, got ", x.str());
  check_on_graph(name, g, x.device());
  const int64_t E = g.num_edges();
  Tensor xc = as_rows(x);
  Shape oshape = x.shape();
  oshape[0] = E;
  Tensor out = detail::raw_reshape(
      detail::row_sum(iota(E + 1, x.device()), source ? g.src() : g.dst(), Tensor(), Tensor(), xc, E),
      oshape);
  detail::record(name, x.device(), 0.0, double(out.nbytes()), double(out.nbytes()));
  if (auto node = make_node(source ? "GatherSrcBackward" : "GatherDstBackward", {x})) {
    const Shape xshape = x.shape();
    node->backward = [g, source, xshape](OpNode& n, std::vector<Tensor>& grad) -> std::vector<Tensor> {
      // Each node sums the rows of its out-edges (source) or in-edges, in CSR / CSC order.
      const Compressed c = compressed(g, source);
      Tensor gx =
          detail::row_sum(c.offsets, positions_of(c, g), Tensor(), Tensor(), as_rows(grad[0]), g.num_nodes());
      return {detail::raw_reshape(gx, xshape)};
    };
    set_outputs(node, {&out});
  }
  return out;
}

}  // namespace

Tensor gspmm(const Graph& g, const Tensor& x, const Tensor& edge_weight, const std::string& reduce) {
  STRATA_CHECK(reduce == "sum" || reduce == "mean" || reduce == "max" || reduce == "min", ValueError,
               "gspmm: reduce '", reduce, "' is not one of sum, mean, max, min");
  if (reduce == "max" || reduce == "min") {
    STRATA_CHECK(!edge_weight.defined(), ValueError, "gspmm: reduce ", reduce,
                 " takes no edge_weight (weigh the features first)");
    return spmm_extreme_op(g, x, reduce == "min");
  }
  Tensor out = spmm_op(g, x, edge_weight, /*transposed=*/false);
  if (reduce == "sum") return out;
  Shape s(size_t(x.dim()), 1);
  s[0] = g.num_nodes();
  Tensor deg = clamp(g.in_degrees().to(x.dtype()), 1.0, 1e300);
  return div(out, reshape(deg, s));
}

Tensor gsddmm_dot(const Graph& g, const Tensor& a, const Tensor& b) {
  return sddmm_op(g, a, b, /*transposed=*/false, 0);
}

Tensor gather_src(const Graph& g, const Tensor& x) { return gather_endpoint(g, x, true); }
Tensor gather_dst(const Graph& g, const Tensor& x) { return gather_endpoint(g, x, false); }

Tensor gsddmm(const Graph& g, const std::string& op, const Tensor& lhs, const Tensor& rhs,
              const std::string& lhs_target, const std::string& rhs_target) {
  STRATA_CHECK(op == "add" || op == "sub" || op == "mul" || op == "div" || op == "dot", ValueError,
               "gsddmm: op '", op, "' is not one of add, sub, mul, div, dot");
  auto operand = [&](const Tensor& t, const std::string& target, const char* side) {
    STRATA_CHECK(target == "u" || target == "v" || target == "e", ValueError, "gsddmm: ", side, "_target '",
                 target, "' is not one of u (source), v (destination), e (edge)");
    if (target == "e") {
      STRATA_CHECK(t.defined() && t.dim() >= 1 && t.size(0) == g.num_edges(), ShapeError,
                   "gsddmm: edge data ", t.defined() ? shape_str(t.shape()) : std::string("undefined"),
                   " must be [", g.num_edges(), ", ...] (CSC order)");
      return t;
    }
    return gather_endpoint(g, t, target == "u");
  };
  // <u, v> over the last dimension straight from the node rows, without [E, F] gathers.
  if (op == "dot" && lhs_target != "e" && rhs_target != "e" && lhs_target != rhs_target && lhs.defined() &&
      rhs.defined() && lhs.dim() >= 2 && lhs.shape() == rhs.shape()) {
    const Tensor& a = lhs_target == "u" ? lhs : rhs;
    const Tensor& b = lhs_target == "u" ? rhs : lhs;
    const int64_t C = a.size(a.dim() - 1), N = a.size(0);
    const int64_t heads = C == 0 ? 0 : a.numel() / std::max<int64_t>(N * C, 1);
    Shape oshape(a.shape().begin(), a.shape().end() - 1);
    oshape[0] = g.num_edges();
    if (C > 0 && N > 0)
      return reshape(sddmm_op(g, reshape(a, {N, heads * C}), reshape(b, {N, heads * C}), false, heads),
                     oshape);
  }
  Tensor l = operand(lhs, lhs_target, "lhs"), r = operand(rhs, rhs_target, "rhs");
  if (op == "add") return add(l, r);
  if (op == "sub") return sub(l, r);
  if (op == "mul") return mul(l, r);
  if (op == "div") return div(l, r);
  return sum(mul(l, r), {-1});
}

namespace {

// Softmax of scores [E] or [E, H] over each segment [offsets[s], offsets[s + 1]) of rows.
Tensor segment_softmax_op(const Tensor& scores, const Tensor& offsets) {
  const Device dev = scores.device();
  Tensor sc = detail::raw_contiguous(scores);
  Tensor out = detail::alloc(scores.shape(), scores.dtype(), dev);
  detail::kernels(dev).segment_softmax(out, offsets, sc);
  detail::record("edge_softmax", dev, 4.0 * double(scores.numel()), double(sc.nbytes()),
                 double(out.nbytes()));
  if (auto node = make_node("EdgeSoftmaxBackward", {scores})) {
    node->save(out, /*is_output=*/true);
    node->backward = [offsets](OpNode& n, std::vector<Tensor>& grad) -> std::vector<Tensor> {
      Tensor y = n.saved(0);
      Tensor gy = detail::raw_contiguous(detail::raw_cast(grad[0], y.dtype()));
      Tensor gs = detail::alloc(y.shape(), y.dtype(), y.device());
      detail::kernels(y.device()).segment_softmax_backward(gs, offsets, gy, y);
      return {gs};
    };
    set_outputs(node, {&out});
  }
  return out;
}

}  // namespace

Tensor edge_softmax(const Graph& g, const Tensor& scores, bool across_relations) {
  const Device dev = scores.device();
  STRATA_CHECK(dev == g.device(), DeviceError, "edge_softmax: scores on ", dev.str(), ", the graph on ",
               g.device().str());
  STRATA_CHECK((scores.dim() == 1 || scores.dim() == 2) && scores.size(0) == g.num_edges(), ShapeError,
               "edge_softmax: scores ", shape_str(scores.shape()), " must be [", g.num_edges(), "] or [",
               g.num_edges(), ", heads]");
  STRATA_CHECK(is_floating(scores.dtype()), TypeError, "edge_softmax: scores must be floating, got ",
               scores.str());
  const MergedEdges m = g.in_edges_merged();
  if (!across_relations || !m.positions.defined()) return segment_softmax_op(scores, g.in_offsets());
  // Every relation's in-edges of a node together: into the merged order and back.
  Tensor y = segment_softmax_op(gather_rows(scores, m.positions), m.offsets);
  return gather_rows(y, g.in_edges_merged_rank());
}

}  // namespace strata::ops
