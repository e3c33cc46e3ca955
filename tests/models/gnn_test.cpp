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
    std::vector<Graph> graphs;
    std::vector<int64_t> num_dst;
    for (const io::SampledBlock& b : blocks) graphs.push_back(b.graph), num_dst.push_back(b.num_dst);
    Tensor sampled = model.forward(graphs, num_dst, ops::index_select(x, 0, blocks[0].nodes));
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
