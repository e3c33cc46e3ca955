// Relational convolutions against PyTorch Geometric (tests/goldens/gnn/rgnn_layers.safetensors,
// tools/goldens/rgnn_goldens.py): the output, the loss and every gradient (parameters and x) in
// float64 on a 13-node graph with 4 relations (one with 2 edges), duplicate edges, a self loop and
// a node without in-edges, for each option and every materialization (edge-wise, compact,
// aggregate-first), which must all agree with PyG and so with each other.
#include <gtest/gtest.h>

#include "strata/models/layers/graph/hgt_conv.h"
#include "strata/models/layers/graph/rgat_conv.h"
#include "strata/models/layers/graph/rgcn_conv.h"
#include "strata/strata.h"
#include "support/device_present.h"
#include "support/fixture_file.h"
#include "support/pyg_layer_golden.h"
#include "support/tensor_compare.h"

using namespace strata;

namespace {

const strata::testing::FixtureFile& fixture() {
  return strata::testing::golden("gnn/rgnn_layers.safetensors");
}

// PyG's edge_index + edge_type as a typed graph of one node type and 4 relations.
Graph relational_graph() {
  const auto [src, dst] = strata::testing::edge_index_rows(fixture());
  std::vector<Relation> rels;
  for (int r = 0; r < 4; ++r) rels.push_back({0, "r" + std::to_string(r), 0});
  return Graph::from_typed_edges({"node"}, {13}, rels, src, dst, fixture().tensor("edge_type", DType::i64));
}

// One case against PyG's goldens on `dev` (support/pyg_layer_golden.h).
template <class Layer, class Forward>
void check_case(const std::string& name, Layer& layer, Forward forward, Device dev) {
  strata::testing::check_layer_golden(fixture(), name, layer, forward, dev);
}

const nn::Materialization kEvery[] = {nn::Materialization::kEdgeWise, nn::Materialization::kCompact,
                                      nn::Materialization::kAggregateFirst};

void check_rgcn(const std::string& name, nn::RGCNConvOptions options, Device dev = kCPU) {
  const Graph g = relational_graph().to(dev);
  for (nn::Materialization m : kEvery) {
    SCOPED_TRACE(nn::materialization_name(m));
    nn::RGCNConv conv(6, 4, 4, options);
    conv.set_materialization(m);
    EXPECT_EQ(conv.plan(g).strategy, m);
    check_case(
        name, conv, [&](const Tensor& x) { return conv.forward(g, x); }, dev);
  }
}

void check_rgat(const std::string& name, int64_t out, nn::RGATConvOptions options, Device dev = kCPU) {
  const Graph g = relational_graph().to(dev);
  for (nn::Materialization m : {nn::Materialization::kEdgeWise, nn::Materialization::kCompact})
    for (bool reorder : {false, true}) {
      SCOPED_TRACE(nn::materialization_name(m) + (reorder ? " reordered" : ""));
      nn::RGATConv conv(6, out, 4, options);
      conv.set_materialization(m);
      conv.set_reorder(reorder);
      EXPECT_EQ(conv.plan(g).reorder, reorder);
      check_case(
          name, conv, [&](const Tensor& x) { return conv.forward(g, x); }, dev);
    }
}

// The heterogeneous fixture: paper (7 nodes), author (5), field (3) in global ids, 4 relations.
Graph hetero_graph() {
  Tensor ei = fixture().tensor("hgt.edge_index", DType::i64);
  const std::vector<Relation> rels{{1, "writes", 0}, {0, "cites", 0}, {0, "has", 2}, {2, "rev_has", 0}};
  return Graph::from_typed_edges({"paper", "author", "field"}, {7, 5, 3}, rels,
                                 ops::select(ei, 0, 0).contiguous(), ops::select(ei, 0, 1).contiguous(),
                                 fixture().tensor("hgt.edge_type", DType::i64));
}

// PyG returns rows for paper and field only (author is no relation's destination); the loss is
// sum(out_paper * seed_paper) + sum(out_field * seed_field).
void check_hgt(const std::string& name, int64_t out_channels, int64_t heads, std::vector<std::string> unused,
               Device dev = kCPU) {
  const Graph g = hetero_graph().to(dev);
  for (nn::Materialization m : {nn::Materialization::kEdgeWise, nn::Materialization::kCompact})
    for (bool reorder : {false, true}) {
      SCOPED_TRACE(name + " " + nn::materialization_name(m) + (reorder ? " reordered" : "") + " on " +
                   dev.str());
      nn::HGTConv conv(6, out_channels, g.node_types(), g.relations(), {.heads = heads});
      conv.set_materialization(m);
      conv.set_reorder(reorder);
      conv.to(DType::f64);
      // PyG's values for every parameter the fixture holds; the rest are the ones PyG never reads.
      nn::StateDict params;
      std::vector<std::string> missing;
      for (const auto& [pname, p] : conv.state_dict()) {
        if (fixture().names(name + ".param." + pname).empty())
          missing.push_back(pname), params.insert(pname, p);
        else
          params.insert(pname, fixture().tensor(name + ".param." + pname));
      }
      EXPECT_EQ(missing, unused);
      conv.load_state_dict(params);
      conv.to(dev);
      Tensor x = fixture().tensor("hgt.x").to(dev).set_requires_grad(true);
      Tensor out = conv.forward(g, x);
      const Tensor paper = ops::narrow(out, 0, 0, 7), field = ops::narrow(out, 0, 12, 3);
      strata::testing::expect_close(paper, fixture().tensor(name + ".out.paper"), 1e-10, 1e-10,
                                    "paper output");
      strata::testing::expect_close(field, fixture().tensor(name + ".out.field"), 1e-10, 1e-10,
                                    "field output");
      const std::string seed = fixture().names(name + ".seed.paper").empty() ? "hgt.seed" : name + ".seed";
      Tensor loss = ops::add(ops::sum(ops::mul(paper, fixture().tensor(seed + ".paper").to(dev))),
                             ops::sum(ops::mul(field, fixture().tensor(seed + ".field").to(dev))));
      EXPECT_NEAR(loss.item(), fixture().tensor(name + ".loss").item(), 1e-9);
      loss.backward();
      strata::testing::expect_close(ops::narrow(x.grad(), 0, 0, 7), fixture().tensor(name + ".grad.x.paper"),
                                    1e-10, 1e-10, "grad of paper x");
      strata::testing::expect_close(ops::narrow(x.grad(), 0, 7, 5), fixture().tensor(name + ".grad.x.author"),
                                    1e-10, 1e-10, "grad of author x");
      strata::testing::expect_close(ops::narrow(x.grad(), 0, 12, 3), fixture().tensor(name + ".grad.x.field"),
                                    1e-10, 1e-10, "grad of field x");
      for (const auto& [pname, p] : conv.named_parameters())
        if (!fixture().names(name + ".grad." + pname).empty())
          strata::testing::expect_close(p.grad(), fixture().tensor(name + ".grad." + pname), 1e-10, 1e-10,
                                        "grad of " + pname);
    }
}

}  // namespace

void check_every_hgt(Device dev) {
  const std::vector<std::string> author{"out_lin.lins.author.weight", "out_lin.lins.author.bias"};
  std::vector<std::string> no_skip = author;
  no_skip.insert(no_skip.end(), {"skip.paper", "skip.author", "skip.field"});
  check_hgt("hgt_h2", 4, 2, no_skip, dev);
  check_hgt("hgt_h1", 4, 1, no_skip, dev);
  std::vector<std::string> with_skip = author;
  with_skip.push_back("skip.author");
  check_hgt("hgt_skip", 6, 2, with_skip, dev);
}

TEST(RgnnConv, HGTConvMatchesPyG) { check_every_hgt(kCPU); }

// The same checks with the layers, the graph and x on the simulated device and on a GPU.
TEST(RgnnConvDevices, EveryLayerMatchesPyGOnSim) {
  check_rgcn("rgcn_bases", {.num_bases = 2}, sim(0));
  check_rgat("rgat_heads", 4, {.heads = 3}, sim(0));
  check_every_hgt(sim(0));
}

TEST(RgnnConvDevices, EveryLayerMatchesPyGOnCuda) {
  SKIP_WITHOUT_CUDA_DEVICE();
  for (const auto& [name, o] : {std::pair<std::string, nn::RGCNConvOptions>{"rgcn", {}},
                                {"rgcn_bases", {.num_bases = 2}},
                                {"rgcn_blocks", {.num_blocks = 2}},
                                {"rgcn_add", {.aggr = "add"}}})
    check_rgcn(name, o, cuda(0));
  check_rgat("rgat", 4, {}, cuda(0));
  check_rgat("rgat_heads", 4, {.heads = 3}, cuda(0));
  check_rgat("rgat_mean", 4, {.heads = 2, .concat = false}, cuda(0));
  check_every_hgt(cuda(0));
}

TEST(RgnnConv, RGATConvMatchesPyG) {
  check_rgat("rgat", 4, {});
  check_rgat("rgat_heads", 4, {.heads = 3});
  check_rgat("rgat_mean", 4, {.heads = 2, .concat = false});
  EXPECT_THROW(nn::RGATConv(6, 4, 4).set_materialization(nn::Materialization::kAggregateFirst), ValueError);
}

TEST(RgnnConv, RGCNConvMatchesPyG) {
  check_rgcn("rgcn", {});
  check_rgcn("rgcn_no_root", {.root_weight = false});
  check_rgcn("rgcn_no_bias", {.bias = false});
  check_rgcn("rgcn_add", {.aggr = "add"});
}

TEST(RgnnConv, RGCNConvBasesAndBlocksMatchPyG) {
  check_rgcn("rgcn_bases", {.num_bases = 2});
  check_rgcn("rgcn_blocks", {.num_blocks = 2});
}

TEST(RgnnConv, RGCNConvPlanFollowsTheCosts) {
  const Graph g = relational_graph();
  nn::RGCNConv conv(6, 4, 4);
  const nn::MaterializationPlan p = conv.plan(g);
  EXPECT_EQ(p.edges, 51);
  EXPECT_LE(p.source_pairs, p.edges);
  EXPECT_GT(p.source_pairs, 0);
  // The cheapest estimate wins; the printout names the choice and the counts.
  const double best = std::min({p.cost_edge, p.cost_compact, p.cost_aggregate_first});
  const double chosen = p.strategy == nn::Materialization::kEdgeWise  ? p.cost_edge
                        : p.strategy == nn::Materialization::kCompact ? p.cost_compact
                                                                      : p.cost_aggregate_first;
  EXPECT_EQ(chosen, best);
  EXPECT_NE(p.str().find("51 edges"), std::string::npos) << p.str();
  EXPECT_NE(p.str().find(nn::materialization_name(p.strategy)), std::string::npos) << p.str();
  EXPECT_EQ(nn::materialization_from_name("compact"), nn::Materialization::kCompact);
  EXPECT_THROW(nn::materialization_from_name("fused"), ValueError);
  EXPECT_THROW(nn::RGCNConv(6, 4, 3).forward(g, ops::zeros({13, 6})),
               ShapeError);  // 3 relations, graph has 4
}

// A PyG RGATConv's state_dict holds w, l1, b1, l2 and b2, registered for attention modes the layer
// does not run: it loads strictly, in a model too, while a key neither layer has is still refused.
TEST(RGATConvState, LoadsAPyGStateDictWithTheParametersPyGRegistersButDoesNotUse) {
  struct Model : nn::Module {
    std::shared_ptr<nn::RGATConv> conv = register_module("conv", std::make_shared<nn::RGATConv>(6, 4, 3));
  } model;
  nn::StateDict pyg;
  for (const auto& [name, t] : model.state_dict()) pyg.insert(name, ops::randn(t.sizes()));
  for (const auto& [name, shape] : std::vector<std::pair<std::string, Shape>>{
           {"w", {4}}, {"l1", {1, 4}}, {"b1", {1, 4}}, {"l2", {4, 4}}, {"b2", {1, 4}}})
    pyg.insert("conv." + name, ops::randn(shape));
  EXPECT_NO_THROW(model.load_state_dict(pyg));
  strata::testing::expect_close(model.conv->q, *pyg.find("conv.q"), 0, 0, "q loaded");
  pyg.insert("conv.att", ops::randn({4}));
  try {
    model.load_state_dict(pyg);
    ADD_FAILURE() << "an unknown key loaded";
  } catch (const ValueError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("Unexpected key(s) in state_dict: \"conv.att\"."), std::string::npos) << m;
  }
}
