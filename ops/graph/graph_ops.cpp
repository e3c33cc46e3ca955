#include "strata/ops/graph_ops.h"

#include "ops/dispatch.h"
#include "ops/op_node.h"
#include "strata/ops/elementwise.h"
#include "strata/ops/factory.h"
#include "strata/ops/reduction.h"
#include "strata/ops/shape_ops.h"

namespace strata::ops {

using detail::make_node;
using detail::OpNode;
using detail::set_outputs;

namespace {

// The whole graph as one compressed matrix over all relations: for a homogeneous graph its CSC
// (or CSR) as stored; a typed graph's per-relation, per-type offsets are merged per global node.
struct Compressed {
  Tensor offsets;       // i64 [N + 1]
  Tensor indices;       // [E]: the other end of each edge
  Tensor weight_index;  // [E]: the edge's CSC position (undefined: the identity)
};

Compressed compressed(const Graph& g, bool transposed) {
  if (g.num_relations() == 1 && g.num_node_types() == 1)
    return transposed ? Compressed{g.out_offsets(), g.csr_dst(), g.csr_edges()}
                      : Compressed{g.in_offsets(), g.src(), Tensor()};
  // Typed: order the edges by their aggregating end alone (stable: relation order within a node).
  const std::vector<int64_t> ends = (transposed ? g.src() : g.dst()).to(kCPU).to_vector<int64_t>();
  const std::vector<int64_t> others = (transposed ? g.dst() : g.src()).to(kCPU).to_vector<int64_t>();
  const int64_t N = g.num_nodes(), E = g.num_edges();
  std::vector<int64_t> off(static_cast<size_t>(N + 1), 0), idx(static_cast<size_t>(E)),
      pos(static_cast<size_t>(E));
  for (int64_t v : ends) ++off[size_t(v) + 1];
  for (int64_t v = 0; v < N; ++v) off[size_t(v) + 1] += off[size_t(v)];
  std::vector<int64_t> fill(off.begin(), off.end() - 1);
  for (int64_t e = 0; e < E; ++e) {
    const int64_t at = fill[size_t(ends[size_t(e)])]++;
    idx[size_t(at)] = others[size_t(e)], pos[size_t(at)] = e;
  }
  const Device d = g.device();
  return {from_vector(off, {N + 1}).to(d), from_vector(idx, {E}).to(d), from_vector(pos, {E}).to(d)};
}

Tensor spmm_op(const Graph& g, const Tensor& x, const Tensor& w, bool transposed);

// out[e] = <a[src e], b[dst e]> (transposed: <a[dst e], b[src e]>).
Tensor sddmm_op(const Graph& g, const Tensor& a, const Tensor& b, bool transposed) {
  const Device dev = detail::common_device("gsddmm_dot", {&a, &b});
  STRATA_CHECK(dev == g.device(), DeviceError, "gsddmm_dot: features on ", dev.str(), ", the graph on ",
               g.device().str());
  STRATA_CHECK(a.dim() == 2 && b.dim() == 2 && a.size(1) == b.size(1) && a.size(0) == g.num_nodes() &&
                   b.size(0) == g.num_nodes(),
               ShapeError, "gsddmm_dot: a ", shape_str(a.shape()), " and b ", shape_str(b.shape()),
               " must be [", g.num_nodes(), ", F]");
  STRATA_CHECK(is_floating(a.dtype()) && a.dtype() == b.dtype(), TypeError, "gsddmm_dot: a ", a.str(),
               " and b ", b.str(), " must share one floating dtype");
  Tensor ac = detail::raw_contiguous(a), bc = detail::raw_contiguous(b);
  Tensor out = detail::alloc({g.num_edges()}, a.dtype(), dev);
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

// out[v] = sum over in-edges (transposed: out-edges) e of w[e] x[other end].
Tensor spmm_op(const Graph& g, const Tensor& x, const Tensor& w, bool transposed) {
  const Device dev = detail::common_device("gspmm", {&x, &w});
  STRATA_CHECK(dev == g.device(), DeviceError, "gspmm: features on ", dev.str(), ", the graph on ",
               g.device().str());
  STRATA_CHECK(x.dim() == 2 && x.size(0) == g.num_nodes(), ShapeError, "gspmm: x ", shape_str(x.shape()),
               " must be [", g.num_nodes(), ", F] (a row per node)");
  STRATA_CHECK(is_floating(x.dtype()), TypeError, "gspmm: x must be floating, got ", x.str());
  STRATA_CHECK(!w.defined() || (w.dim() == 1 && w.numel() == g.num_edges()), ShapeError,
               "gspmm: edge_weight ", shape_str(w.shape()), " must be [", g.num_edges(),
               "] (one per edge, CSC order)");
  Tensor xc = detail::raw_contiguous(x);
  Tensor wc = w.defined() ? detail::raw_contiguous(detail::raw_cast(w, x.dtype())) : Tensor();
  const Compressed c = compressed(g, transposed);
  Tensor out = detail::alloc(x.shape(), x.dtype(), dev);
  detail::kernels(dev).spmm(out, c.offsets, c.indices, wc, c.weight_index, xc);
  detail::record("gspmm", dev, 2.0 * double(g.num_edges()) * double(x.size(1)),
                 double(g.num_edges()) * double(x.size(1)) * double(x.element_size()), double(out.nbytes()));
  if (auto node = make_node("GspmmBackward", {x, w})) {
    if (wc.defined()) node->save(wc);
    if (node->needs_grad(1)) node->save(xc);
    const bool has_w = wc.defined();
    node->backward = [g, transposed, has_w](OpNode& n, std::vector<Tensor>& grad) -> std::vector<Tensor> {
      Tensor wt = has_w ? n.saved(0) : Tensor();
      Tensor gx = n.needs_grad(0) ? spmm_op(g, grad[0], wt, !transposed) : Tensor();
      Tensor gw = n.needs_grad(1) ? sddmm_op(g, n.saved(has_w ? 1 : 0), grad[0], transposed) : Tensor();
      return {gx, gw};
    };
    set_outputs(node, {&out});
  }
  return out;
}

}  // namespace

Tensor gspmm(const Graph& g, const Tensor& x, const Tensor& edge_weight, const std::string& reduce) {
  STRATA_CHECK(reduce == "sum" || reduce == "mean", ValueError, "gspmm: reduce '", reduce,
               "' is not one of sum, mean");
  Tensor out = spmm_op(g, x, edge_weight, /*transposed=*/false);
  if (reduce == "sum") return out;
  Tensor deg = clamp(g.in_degrees().to(x.dtype()), 1.0, 1e300);
  return div(out, unsqueeze(deg, 1));
}

Tensor gsddmm_dot(const Graph& g, const Tensor& a, const Tensor& b) {
  return sddmm_op(g, a, b, /*transposed=*/false);
}

Tensor edge_softmax(const Graph& g, const Tensor& scores) {
  const Device dev = scores.device();
  STRATA_CHECK(dev == g.device(), DeviceError, "edge_softmax: scores on ", dev.str(), ", the graph on ",
               g.device().str());
  STRATA_CHECK((scores.dim() == 1 || scores.dim() == 2) && scores.size(0) == g.num_edges(), ShapeError,
               "edge_softmax: scores ", shape_str(scores.shape()), " must be [", g.num_edges(), "] or [",
               g.num_edges(), ", heads]");
  STRATA_CHECK(is_floating(scores.dtype()), TypeError, "edge_softmax: scores must be floating, got ",
               scores.str());
  Tensor sc = detail::raw_contiguous(scores);
  Tensor out = detail::alloc(scores.shape(), scores.dtype(), dev);
  detail::kernels(dev).segment_softmax(out, g.in_offsets(), sc);
  detail::record("edge_softmax", dev, 4.0 * double(scores.numel()), double(sc.nbytes()),
                 double(out.nbytes()));
  if (auto node = make_node("EdgeSoftmaxBackward", {scores})) {
    node->save(out, /*is_output=*/true);
    node->backward = [g](OpNode& n, std::vector<Tensor>& grad) -> std::vector<Tensor> {
      Tensor y = n.saved(0);
      Tensor gy = detail::raw_contiguous(detail::raw_cast(grad[0], y.dtype()));
      Tensor gs = detail::alloc(y.shape(), y.dtype(), y.device());
      detail::kernels(y.device()).segment_softmax_backward(gs, g.in_offsets(), gy, y);
      return {gs};
    };
    set_outputs(node, {&out});
  }
  return out;
}

}  // namespace strata::ops
