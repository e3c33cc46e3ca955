// GCNConv and SAGEConv against PyTorch Geometric (tests/goldens/gnn, tools/goldens/gnn_goldens.py):
// the output, the loss and every gradient (parameters and x) in float64 on an 11-node graph with
// an isolated node, self loops and duplicate edges, for each option; PyG's parameter names load
// as they are.
#include "strata/models/layers/gnn_conv.h"

#include <gtest/gtest.h>

#include "strata/strata.h"
#include "support/fixture_file.h"

using namespace strata;

namespace {

const strata::testing::FixtureFile& fixture() {
  static const strata::testing::FixtureFile f(std::string(STRATA_TEST_DATA_DIR) +
                                              "/goldens/gnn/gnn_layers.safetensors");
  return f;
}

Graph fixture_graph() {
  Tensor ei = fixture().tensor("edge_index", DType::i64);
  return Graph::from_edges(11, ops::select(ei, 0, 0).contiguous(), ops::select(ei, 0, 1).contiguous());
}

void expect_close(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const std::vector<double> g = got.to_double_vector(), w = want.to_double_vector();
  for (size_t i = 0; i < g.size(); ++i)
    ASSERT_NEAR(g[i], w[i], 1e-10 * (1 + std::fabs(w[i]))) << what << " at " << i;
}

// Loads the case's parameters into `layer` (f64), runs forward(x), and checks the output, the loss
// and every gradient against PyG's.
template <class Layer, class Forward>
void check_case(const std::string& name, Layer& layer, Forward forward) {
  SCOPED_TRACE(name);
  layer.to(DType::f64);
  nn::StateDict params;
  for (const std::string& p : fixture().names(name + ".param."))
    params.insert(p, fixture().tensor(name + ".param." + p));
  layer.load_state_dict(params);  // strict: the names are PyG's
  Tensor x = fixture().tensor("x").set_requires_grad(true);
  Tensor out = forward(x);
  expect_close(out, fixture().tensor(name + ".out"), "output");
  Tensor loss = ops::sum(ops::mul(out, fixture().tensor("seed")));
  EXPECT_NEAR(loss.item(), fixture().tensor(name + ".loss").item(), 1e-9);
  loss.backward();
  expect_close(x.grad(), fixture().tensor(name + ".grad.x"), "grad of x");
  for (const auto& [pname, p] : layer.named_parameters())
    expect_close(p.grad(), fixture().tensor(name + ".grad." + pname), "grad of " + pname);
}

}  // namespace

TEST(GnnConv, GCNConvMatchesPyG) {
  Graph g = fixture_graph();
  nn::GCNConv gcn(7, 5);
  check_case("gcn", gcn, [&](const Tensor& x) { return gcn.call(&nn::GCNConv::forward, g, x, Tensor()); });
  nn::GCNConv no_loops(7, 5, {.add_self_loops = false});
  check_case("gcn_no_loops", no_loops, [&](const Tensor& x) { return no_loops.forward(g, x); });
  nn::GCNConv plain(7, 5, {.normalize = false, .bias = false});
  check_case("gcn_plain", plain, [&](const Tensor& x) { return plain.forward(g, x); });
}

TEST(GnnConv, SAGEConvMatchesPyG) {
  Graph g = fixture_graph();
  nn::SAGEConv mean(7, 5);
  check_case("sage_mean", mean, [&](const Tensor& x) { return mean.call(&nn::SAGEConv::forward, g, x); });
  nn::SAGEConv sum(7, 5, {.aggr = "sum"});
  check_case("sage_sum", sum, [&](const Tensor& x) { return sum.forward(g, x); });
  nn::SAGEConv no_root(7, 5, {.root_weight = false});
  check_case("sage_no_root", no_root, [&](const Tensor& x) { return no_root.forward(g, x); });
  nn::SAGEConv normalized(7, 5, {.normalize = true});
  check_case("sage_normalize", normalized, [&](const Tensor& x) { return normalized.forward(g, x); });
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
  EXPECT_THROW(nn::SAGEConv(7, 5, {.aggr = "lstm"}), NotImplementedError);
}
