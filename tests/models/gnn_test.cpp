// models::GNN: sampled message-flow graphs that take every in-neighbour give the full-graph
// logits of their seeds (SAGE, GAT); the names are PyG's basic models'; bad configs are refused.
#include "strata/models/gnn.h"

#include <gtest/gtest.h>

#include "strata/io/graphs/neighbor_sampler.h"
#include "strata/strata.h"

using namespace strata;

namespace {

Graph random_graph(int64_t n, int64_t e, uint64_t seed) {
  std::vector<int64_t> s, d;
  for (int64_t i = 0; i < e; ++i) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    s.push_back(int64_t((seed >> 33) % uint64_t(n)));
    d.push_back(int64_t((seed >> 13) % uint64_t(n - 5)));  // the last 5 nodes get no in-edges
  }
  return Graph::from_edges(n, ops::from_vector(s, {e}), ops::from_vector(d, {e}));
}

}  // namespace

TEST(GNN, SampledBlocksWithEveryNeighbourGiveTheFullGraphLogits) {
  const Graph g = random_graph(120, 700, 3);
  for (const std::string conv : {"sage", "gat"}) {
    SCOPED_TRACE(conv);
    manual_seed(11);
    models::GNN model({.conv = conv, .in_channels = 6, .hidden_channels = 5, .num_classes = 3, .heads = 2});
    model.eval();
    NoGradGuard ng;
    Tensor x = ops::randn({120, 6});
    Tensor full = model.forward(g, x);
    io::NeighborSampler sampler(g, {-1, -1}, 5);
    const std::vector<int64_t> seeds{7, 119, 0, 64, 33};
    std::vector<io::SampledBlock> blocks = sampler.sample(ops::from_vector(seeds, {5}), 0, 0);
    std::vector<nn::GraphBlock> graphs;
    for (const io::SampledBlock& b : blocks) graphs.emplace_back(b.graph, b.num_dst);
    Tensor sampled = model.forward(graphs, ops::index_select(x, 0, blocks[0].nodes));
    ASSERT_EQ(sampled.shape(), (Shape{5, 3}));
    const std::vector<double> got = sampled.to_double_vector(), all = full.to_double_vector();
    for (size_t i = 0; i < seeds.size(); ++i)
      for (size_t k = 0; k < 3; ++k) EXPECT_NEAR(got[i * 3 + k], all[size_t(seeds[i]) * 3 + k], 1e-5);
  }
}

TEST(GNN, NamesItsLayersAsPyGsBasicModelsAndRefusesBadConfigs) {
  models::GNN gat({.conv = "gat", .in_channels = 4, .hidden_channels = 3, .num_classes = 2, .heads = 2});
  std::vector<std::string> names;
  for (const auto& [name, p] : gat.named_parameters()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"convs.0.att_src", "convs.0.att_dst", "convs.0.bias",
                                             "convs.0.lin.weight", "convs.1.att_src", "convs.1.att_dst",
                                             "convs.1.bias", "convs.1.lin.weight"}));
  EXPECT_EQ(gat.named_parameters().size(), 8u);
  EXPECT_THROW(models::GNN({.conv = "gin", .in_channels = 4, .num_classes = 2}), ValueError);
  EXPECT_THROW(models::GNN({.conv = "gcn", .in_channels = 4, .num_classes = 0}), ValueError);
  EXPECT_THROW(models::GNN({.conv = "sage", .in_channels = 4, .num_classes = 2, .dropout = 1.5}), ValueError);
}

TEST(GraphConv, EveryLayerRunsThroughTheOneInterfaceAndARelationalOneRefusesASampledBlock) {
  const Graph g = random_graph(40, 200, 9);
  manual_seed(5);
  Tensor x = ops::randn({40, 6});
  std::vector<std::shared_ptr<nn::GraphConv>> layers{std::make_shared<nn::GCNConv>(6, 4),
                                                     std::make_shared<nn::SAGEConv>(6, 4),
                                                     std::make_shared<nn::GATConv>(6, 4)};
  for (const auto& conv : layers) {
    NoGradGuard ng;
    EXPECT_EQ(conv->forward(g, x).shape(), (Shape{40, 4})) << conv->type_name();
    EXPECT_EQ(conv->forward({g, 7}, x).shape(), (Shape{7, 4}))
        << conv->type_name() << ": the block's destinations";
    const nn::MaterializationPlan p = conv->plan(g);
    EXPECT_EQ(p.layer, conv->type_name());
    EXPECT_EQ(p.edges, 200);
    EXPECT_LT(p.cost_edge, 0) << "a homogeneous layer offers no materialization strategy";
  }
  std::vector<Relation> rels{{0, "r0", 0}, {0, "r1", 0}};
  std::vector<int64_t> type(200);
  for (size_t i = 0; i < type.size(); ++i) type[i] = int64_t(i % 2);
  const Graph typed = Graph::from_typed_edges({"node"}, {40}, rels, g.src().to(DType::i64),
                                              g.dst().to(DType::i64), ops::from_vector(type, {200}));
  std::shared_ptr<nn::GraphConv> rgcn = std::make_shared<nn::RGCNConv>(6, 4, 2);
  NoGradGuard ng;
  EXPECT_EQ(rgcn->forward(typed, x).shape(), (Shape{40, 4}));
  EXPECT_GE(rgcn->plan(typed).cost_edge, 0) << "a relational layer estimates its strategies";
  try {
    rgcn->forward({typed, 7}, x);
    ADD_FAILURE() << "a relational layer ran on a sampled block";
  } catch (const NotImplementedError& e) {
    EXPECT_STREQ(
        e.what(),
        "RGCNConv on a sampled message-flow block (7 destinations of 40 nodes): the relational layers run "
        "on the whole graph");
  }
}
