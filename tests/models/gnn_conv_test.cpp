// GCNConv, SAGEConv and GATConv against PyTorch Geometric (tests/goldens/gnn, tools/goldens/gnn_goldens.py):
// the output, the loss and every gradient (parameters and x) in float64 on an 11-node graph with
// an isolated node, self loops and duplicate edges, for each option; PyG's parameter names load
// as they are.
#include <gtest/gtest.h>

#include "strata/models/layers/graph/gat_conv.h"
#include "strata/models/layers/graph/gcn_conv.h"
#include "strata/models/layers/graph/sage_conv.h"
#include "strata/strata.h"
#include "support/fixture_file.h"
#include "support/pyg_layer_golden.h"
#include "support/tensor_compare.h"

using namespace strata;

namespace {

const strata::testing::FixtureFile& fixture() {
  return strata::testing::golden("gnn/gnn_layers.safetensors");
}

Graph fixture_graph() {
  const auto [src, dst] = strata::testing::edge_index_rows(fixture());
  return Graph::from_edges(11, src, dst);
}

// One case against PyG's goldens (support/pyg_layer_golden.h).
template <class Layer, class Forward>
void check_case(const std::string& name, Layer& layer, Forward forward) {
  strata::testing::check_layer_golden(fixture(), name, layer, forward);
}

}  // namespace

TEST(GnnConv, GCNConvMatchesPyG) {
  Graph g = fixture_graph();
  nn::GCNConv gcn(7, 5);
  check_case("gcn", gcn,
             [&](const Tensor& x) { return gcn.call(&nn::GraphConv::forward, nn::GraphBlock(g), x); });
  nn::GCNConv no_loops(7, 5, {.add_self_loops = false});
  check_case("gcn_no_loops", no_loops, [&](const Tensor& x) { return no_loops.forward(g, x); });
  nn::GCNConv plain(7, 5, {.normalize = false, .bias = false});
  check_case("gcn_plain", plain, [&](const Tensor& x) { return plain.forward(g, x); });
}

TEST(GnnConv, SAGEConvMatchesPyG) {
  Graph g = fixture_graph();
  nn::SAGEConv mean(7, 5);
  check_case("sage_mean", mean,
             [&](const Tensor& x) { return mean.call(&nn::GraphConv::forward, nn::GraphBlock(g), x); });
  nn::SAGEConv sum(7, 5, {.aggr = "sum"});
  check_case("sage_sum", sum, [&](const Tensor& x) { return sum.forward(g, x); });
  nn::SAGEConv no_root(7, 5, {.root_weight = false});
  check_case("sage_no_root", no_root, [&](const Tensor& x) { return no_root.forward(g, x); });
  nn::SAGEConv normalized(7, 5, {.normalize = true});
  check_case("sage_normalize", normalized, [&](const Tensor& x) { return normalized.forward(g, x); });
  nn::SAGEConv max(7, 5, {.aggr = "max"});
  check_case("sage_max", max, [&](const Tensor& x) { return max.forward(g, x); });
}

TEST(GnnConv, GATConvMatchesPyG) {
  Graph g = fixture_graph();
  Tensor ea = fixture().tensor("edge_attr");
  nn::GATConv one(7, 5);
  check_case("gat", one,
             [&](const Tensor& x) { return one.call(&nn::GraphConv::forward, nn::GraphBlock(g), x); });
  nn::GATConv heads(7, 4, {.heads = 3});
  check_case("gat_heads", heads, [&](const Tensor& x) { return heads.forward(g, x); });
  nn::GATConv mean(7, 4, {.heads = 3, .concat = false});
  check_case("gat_mean", mean, [&](const Tensor& x) { return mean.forward(g, x); });
  nn::GATConv slope(7, 5, {.heads = 2, .negative_slope = 0.1, .add_self_loops = false});
  check_case("gat_slope_no_loops", slope, [&](const Tensor& x) { return slope.forward(g, x); });
  nn::GATConv edge(7, 4, {.heads = 2, .edge_dim = 3});
  check_case("gat_edge", edge, [&](const Tensor& x) { return edge.forward(g, x, ea); });
  nn::GATConv edge_plain(7, 4, {.heads = 2, .add_self_loops = false, .edge_dim = 3});
  check_case("gat_edge_no_loops", edge_plain, [&](const Tensor& x) { return edge_plain.forward(g, x, ea); });
  nn::GATConv residual(7, 4, {.heads = 2, .bias = false, .residual = true});
  check_case("gat_residual", residual, [&](const Tensor& x) { return residual.forward(g, x); });
  EXPECT_THROW(one.forward(g, fixture().tensor("x"), ea), ValueError);  // edge features without edge_dim
  EXPECT_THROW(edge.forward(g, fixture().tensor("x")), ValueError);     // edge_dim without edge features
}

TEST(GnnConv, GATAttentionDropoutReplaysItsMaskInBackward) {
  Graph g = fixture_graph();
  manual_seed(5);
  nn::GATConv gat(7, 4, {.heads = 2, .dropout = 0.5});
  gat.to(DType::f64);
  Tensor x = fixture().tensor("x").set_requires_grad(true);
  Tensor seed = ops::randn({11, 8}, TensorOptions(DType::f64));
  auto loss_at = [&](uint64_t s) {
    manual_seed(s);
    return ops::sum(ops::mul(gat.forward(g, x), seed));
  };
  // The same generator state gives the same dropped coefficients: a finite difference through the
  // dropout agrees with the analytic gradient, which backward computes by regenerating the mask.
  Tensor loss = loss_at(11);
  Tensor gw = autograd::grad({loss}, {gat.att_src})[0];
  double* p = gat.att_src.data<double>();
  const double keep = p[1], h = 1e-6;
  double lp, lm;
  {
    NoGradGuard ng;
    p[1] = keep + h;
    lp = loss_at(11).item();
    p[1] = keep - h;
    lm = loss_at(11).item();
    p[1] = keep;
  }
  EXPECT_NEAR(gw.to_double_vector()[1], (lp - lm) / (2 * h), 1e-6);
  EXPECT_NE(loss_at(11).item(), loss_at(12).item());  // another mask
  gat.eval();
  EXPECT_EQ(loss_at(11).item(), loss_at(12).item());  // no dropout in eval
}

TEST(GnnConv, CachedGCNReusesTheFirstGraphsNormalisation) {
  Graph g = fixture_graph();
  manual_seed(3);
  nn::GCNConv cached(7, 5, {.cached = true});
  Tensor x = ops::randn({11, 7});
  Tensor first = cached.forward(g, x);
  Graph other = Graph::from_edges(11, ops::from_vector(std::vector<int64_t>{0}, {1}),
                                  ops::from_vector(std::vector<int64_t>{1}, {1}));
  EXPECT_EQ(cached.forward(other, x).to_double_vector(), first.to_double_vector()) << "PyG's cached=True";
  EXPECT_THROW(nn::SAGEConv(7, 5, {.aggr = "lstm"}), ValueError);
}
