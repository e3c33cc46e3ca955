// NeighborSampler: blocks hold parent edges with their ids, min(fanout, degree) distinct in-edges
// per destination drawn uniformly, destinations first and chained to the seeds, the same bits for
// the same (seed, epoch, batch) on any thread; full_graph_blocks is the whole graph.
#include "strata/io/graphs/neighbor_sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <thread>

#include "strata/core/error.h"
#include "strata/core/factory.h"

using namespace strata;
using namespace strata::io;

namespace {

using Edges = std::vector<std::pair<int64_t, int64_t>>;  // (src, dst) in input order

Graph graph_of(int64_t n, const Edges& edges) {
  std::vector<int64_t> s, d;
  for (auto [u, v] : edges) s.push_back(u), d.push_back(v);
  const auto E = int64_t(edges.size());
  return Graph::from_edges(n, from_vector(s, {E}), from_vector(d, {E}));
}

// A skewed multigraph (parallel edges, self loops) from a fixed linear congruential sequence.
Edges skewed_edges(int64_t n, int64_t m) {
  Edges e;
  uint64_t x = 12345;
  auto draw = [&] {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return int64_t((x >> 33) % uint64_t(n));
  };
  for (int64_t i = 0; i < m; ++i) {
    const int64_t u = draw(), v = draw();
    e.emplace_back(u, std::min(v, draw()));  // low ids get more in-edges
  }
  return e;
}

std::vector<int64_t> ints(const Tensor& t) { return t.to_vector<int64_t>(); }

std::vector<int64_t> in_degrees(int64_t n, const Edges& edges) {
  std::vector<int64_t> deg(size_t(n), 0);
  for (auto [u, v] : edges) ++deg[size_t(v)];
  return deg;
}

// Checks every structural promise of `blocks` for `seeds` sampled from (n, edges) with `fanouts`.
void expect_valid_blocks(const std::vector<SampledBlock>& blocks, const std::vector<int64_t>& seeds,
                         int64_t n, const Edges& edges, const std::vector<int64_t>& fanouts) {
  ASSERT_EQ(blocks.size(), fanouts.size());
  const std::vector<int64_t> deg = in_degrees(n, edges);
  for (size_t l = 0; l < blocks.size(); ++l) {
    SCOPED_TRACE("block " + std::to_string(l));
    const SampledBlock& b = blocks[l];
    const std::vector<int64_t> nodes = ints(b.nodes);
    ASSERT_EQ(int64_t(nodes.size()), b.num_src());
    ASSERT_EQ(b.graph.num_nodes(), b.num_src());
    EXPECT_EQ(std::set<int64_t>(nodes.begin(), nodes.end()).size(), nodes.size()) << "a node twice";
    if (l + 1 < blocks.size()) {
      const std::vector<int64_t> next = ints(blocks[l + 1].nodes);
      ASSERT_EQ(b.num_dst, int64_t(next.size()));
      EXPECT_TRUE(std::equal(next.begin(), next.end(), nodes.begin())) << "blocks do not chain";
    } else {
      ASSERT_EQ(b.num_dst, int64_t(seeds.size()));
      EXPECT_TRUE(std::equal(seeds.begin(), seeds.end(), nodes.begin()))
          << "the last block does not end at the seeds";
    }
    const std::vector<int64_t> s = ints(b.graph.src()), d = ints(b.graph.dst()),
                               ids = ints(b.graph.edge_ids());
    const std::vector<int64_t> parent = ints(b.parent_edges);
    ASSERT_EQ(parent.size(), s.size());
    std::map<int64_t, std::set<int64_t>> taken;  // local destination -> parent edges
    for (size_t e = 0; e < s.size(); ++e) {
      EXPECT_EQ(ids[e], int64_t(e)) << "block input order is not its CSC order";
      ASSERT_LT(d[e], b.num_dst);
      const int64_t p = parent[e];
      ASSERT_GE(p, 0);
      ASSERT_LT(p, int64_t(edges.size()));
      EXPECT_EQ(edges[size_t(p)].first, nodes[size_t(s[e])]) << "edge " << e;
      EXPECT_EQ(edges[size_t(p)].second, nodes[size_t(d[e])]) << "edge " << e;
      EXPECT_TRUE(taken[d[e]].insert(p).second) << "parent edge " << p << " drawn twice";
    }
    const int64_t fanout = fanouts[l];
    for (int64_t v = 0; v < b.num_dst; ++v) {
      const int64_t dg = deg[size_t(nodes[size_t(v)])];
      EXPECT_EQ(int64_t(taken[v].size()), fanout < 0 ? dg : std::min(fanout, dg)) << "destination " << v;
    }
  }
}

}  // namespace

TEST(NeighborSampler, BlocksHoldParentEdgesWithTheirIdsAndChainToTheSeeds) {
  const Edges edges = skewed_edges(40, 400);
  const Graph g = graph_of(40, edges);
  const std::vector<int64_t> fanouts{3, -1, 4};
  NeighborSampler sampler(g, fanouts, 7);
  const std::vector<int64_t> seeds{5, 0, 17, 39};
  for (int64_t epoch = 0; epoch < 5; ++epoch) {
    SCOPED_TRACE("epoch " + std::to_string(epoch));
    expect_valid_blocks(sampler.sample(seeds, epoch, 2), seeds, 40, edges, fanouts);
  }
  // Fanouts above the scan limit take the marking path of Floyd's algorithm.
  const Edges dense = skewed_edges(30, 3000);
  NeighborSampler wide(graph_of(30, dense), {50, 60}, 1);
  expect_valid_blocks(wide.sample(std::vector<int64_t>{0, 1, 29}, 0, 0), {0, 1, 29}, 30, dense, {50, 60});
}

TEST(NeighborSampler, AllInNeighboursNumberedDestinationsFirstThenByFirstAppearance) {
  // In-edges (CSC order: by destination, then source): 0 <- {2, 4}, 1 <- {0, 3}, 3 <- {5}, 4 <- {6}.
  const Edges edges{{4, 0}, {3, 1}, {2, 0}, {0, 1}, {5, 3}, {6, 4}};
  NeighborSampler sampler(graph_of(7, edges), {-1, -1}, 0);
  const std::vector<SampledBlock> b = sampler.sample(std::vector<int64_t>{1, 0}, 0, 0);
  // Seeds 1, 0; then 1's sources 0 (a seed), 3; then 0's 2, 4.
  EXPECT_EQ(b[1].num_dst, 2);
  EXPECT_EQ(ints(b[1].nodes), (std::vector<int64_t>{1, 0, 3, 2, 4}));
  EXPECT_EQ(ints(b[1].graph.src()), (std::vector<int64_t>{1, 2, 3, 4}));  // local ids
  EXPECT_EQ(ints(b[1].graph.dst()), (std::vector<int64_t>{0, 0, 1, 1}));
  EXPECT_EQ(ints(b[1].parent_edges), (std::vector<int64_t>{3, 1, 2, 0}));
  // Block 0 extends them: 3 <- 5, 4 <- 6 (2 has no in-edges).
  EXPECT_EQ(b[0].num_dst, 5);
  EXPECT_EQ(ints(b[0].nodes), (std::vector<int64_t>{1, 0, 3, 2, 4, 5, 6}));
  EXPECT_EQ(ints(b[0].graph.dst()), (std::vector<int64_t>{0, 0, 1, 1, 2, 4}));
  EXPECT_EQ(ints(b[0].graph.src()), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(ints(b[0].parent_edges), (std::vector<int64_t>{3, 1, 2, 0, 4, 5}));
}

TEST(NeighborSampler, IsolatedSeedsGiveBlocksWithoutEdges) {
  NeighborSampler sampler(graph_of(4, {{0, 1}}), {2, 2}, 0);
  const std::vector<SampledBlock> b = sampler.sample(std::vector<int64_t>{3, 2}, 0, 0);
  for (const SampledBlock& block : b) {
    EXPECT_EQ(block.num_dst, 2);
    EXPECT_EQ(ints(block.nodes), (std::vector<int64_t>{3, 2}));
    EXPECT_EQ(block.graph.num_edges(), 0);
    EXPECT_EQ(block.parent_edges.numel(), 0);
  }
  const std::vector<SampledBlock> none = sampler.sample(std::vector<int64_t>{}, 0, 0);
  EXPECT_EQ(none.back().num_src(), 0);
}

// Over many epochs each in-edge of a node of in-degree D is drawn with frequency k / D. Under a
// uniform sampler Pearson's statistic sum (o - e)^2 / e has mean m = D (1 - k / D) and a standard
// deviation near sqrt(2 m); the bound is six of them out, and a sampler favouring an end of the
// edge list, drawing with replacement, or off by one in Floyd's range, is far past it. A tiny
// node's 6 possible pairs are each drawn a sixth of the time.
TEST(NeighborSampler, EachInEdgeIsDrawnWithFrequencyFanoutOverDegree) {
  for (auto [D, k] : {std::pair<int64_t, int64_t>{20, 5}, {100, 40}}) {
    Edges edges;
    for (int64_t u = 1; u <= D; ++u) edges.emplace_back(u, 0);
    NeighborSampler sampler(graph_of(D + 1, edges), {k}, 3);
    const int64_t T = 2000;
    std::vector<int64_t> count(size_t(D), 0);
    for (int64_t epoch = 0; epoch < T; ++epoch)
      for (int64_t p : ints(sampler.sample(std::vector<int64_t>{0}, epoch, 0)[0].parent_edges))
        ++count[size_t(p)];
    const double expected = double(T * k) / double(D);
    double chi2 = 0;
    for (int64_t c : count) chi2 += (double(c) - expected) * (double(c) - expected) / expected;
    const double mean = double(D) * (1 - double(k) / double(D));
    EXPECT_LT(chi2, mean + 6 * std::sqrt(2 * mean)) << "D " << D << " k " << k;
    EXPECT_GT(chi2, 0.0);
  }
  NeighborSampler pairs(graph_of(5, {{1, 0}, {2, 0}, {3, 0}, {4, 0}}), {2}, 3);
  std::map<std::vector<int64_t>, int64_t> count;
  const int64_t T = 3000;
  for (int64_t epoch = 0; epoch < T; ++epoch)
    ++count[ints(pairs.sample(std::vector<int64_t>{0}, epoch, 0)[0].parent_edges)];
  ASSERT_EQ(count.size(), 6u);
  double chi2 = 0;
  for (auto [pair, c] : count) chi2 += (double(c) - T / 6.0) * (double(c) - T / 6.0) / (T / 6.0);
  EXPECT_LT(chi2, 25.7);  // chi-square with 5 degrees of freedom: P(> 25.7) = 1e-4
}

TEST(NeighborSampler, SameSeedEpochAndBatchGiveTheSameBitsOnAnyThread) {
  const Edges edges = skewed_edges(200, 3000);
  NeighborSampler sampler(graph_of(200, edges), {4, 3}, 11);
  const std::vector<int64_t> seeds{0, 3, 9, 150, 77};
  auto key = [&](const NeighborSampler& s, int64_t epoch, int64_t batch) {
    std::vector<std::vector<int64_t>> out;
    for (const SampledBlock& b : s.sample(seeds, epoch, batch)) {
      out.push_back(ints(b.nodes));
      out.push_back(ints(b.parent_edges));
      out.push_back(ints(b.graph.src()));
      out.push_back(ints(b.graph.dst()));
    }
    return out;
  };
  const auto ref = key(sampler, 2, 5);
  EXPECT_EQ(key(sampler, 2, 5), ref);
  EXPECT_NE(key(sampler, 3, 5), ref);
  EXPECT_NE(key(sampler, 2, 6), ref);
  EXPECT_NE(key(NeighborSampler(sampler.graph(), {4, 3}, 12), 2, 5), ref);
  // Concurrent calls (each its own workspace) give the same bits as one after another.
  std::vector<std::vector<std::vector<int64_t>>> got(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 20; ++rep) got[size_t(t)] = key(sampler, 2, 5);
    });
  for (std::thread& t : threads) t.join();
  for (const auto& g : got) EXPECT_EQ(g, ref);
}

TEST(NeighborSampler, BadInputIsRefusedAndLeavesTheSamplerUsable) {
  const Graph g = graph_of(5, {{0, 1}, {2, 1}, {3, 4}});
  EXPECT_THROW(NeighborSampler(g, {}, 0), ValueError);
  EXPECT_THROW(NeighborSampler(g, {2, 0}, 0), ValueError);
  EXPECT_THROW(NeighborSampler(g, {-2}, 0), ValueError);
  NeighborSampler sampler(g, {1}, 0);
  EXPECT_THROW(sampler.sample(std::vector<int64_t>{1, 4, 1}, 0, 0), ValueError);
  EXPECT_THROW(sampler.sample(std::vector<int64_t>{1, 5}, 0, 0), IndexError);
  EXPECT_THROW(sampler.sample(from_vector(std::vector<float>{1.f}, {1}), 0, 0), TypeError);
  // The failed calls left no node marked: 1 and 4 are fresh seeds again.
  const std::vector<SampledBlock> b = sampler.sample(from_vector(std::vector<int64_t>{4, 1}, {2}), 0, 0);
  EXPECT_EQ(ints(b[0].nodes)[0], 4);
  EXPECT_EQ(b[0].num_src(), 4);  // 4 <- 3, 1 <- one of {0, 2}
  EXPECT_EQ(ints(b[0].nodes)[2], 3);

  const Graph typed = Graph::from_typed_edges(
      {"user", "item"}, {2, 2}, {Relation{0, "buys", 1}, Relation{1, "sold_to", 0}},
      from_vector(std::vector<int64_t>{0, 2}, {2}), from_vector(std::vector<int64_t>{2, 1}, {2}),
      from_vector(std::vector<int64_t>{0, 1}, {2}));
  try {
    NeighborSampler s(typed, {2}, 0);
    FAIL() << "a typed graph was sampled";
  } catch (const NotImplementedError& e) {
    EXPECT_NE(std::string(e.what()).find("2 relations"), std::string::npos) << e.what();
  }
  EXPECT_THROW(full_graph_blocks(typed, 2), NotImplementedError);
}

TEST(NeighborSampler, FullGraphBlocksAreTheWholeGraph) {
  const Edges edges = skewed_edges(12, 40);
  const Graph g = graph_of(12, edges);
  const std::vector<SampledBlock> blocks = full_graph_blocks(g, 3);
  ASSERT_EQ(blocks.size(), 3u);
  std::vector<int64_t> iota_n(12), iota_e(40);
  for (int64_t i = 0; i < 12; ++i) iota_n[size_t(i)] = i;
  for (int64_t i = 0; i < 40; ++i) iota_e[size_t(i)] = i;
  for (const SampledBlock& b : blocks) {
    EXPECT_EQ(b.num_dst, 12);
    EXPECT_EQ(ints(b.nodes), iota_n);
    EXPECT_EQ(ints(b.parent_edges), iota_e);
    EXPECT_EQ(ints(b.graph.src()), ints(g.src()));
    EXPECT_EQ(ints(b.graph.dst()), ints(g.dst()));
    EXPECT_EQ(ints(b.graph.edge_ids()), ints(g.edge_ids()));
  }
  EXPECT_THROW(full_graph_blocks(g, 0), ValueError);
  // Sampling every in-neighbour of every node over one layer gives the same edges.
  std::vector<int64_t> all(12);
  for (int64_t i = 0; i < 12; ++i) all[size_t(i)] = i;
  const SampledBlock s = NeighborSampler(g, {-1}, 0).sample(all, 0, 0)[0];
  EXPECT_EQ(ints(s.nodes), iota_n);
  std::vector<int64_t> sampled = ints(s.parent_edges);
  std::sort(sampled.begin(), sampled.end());
  EXPECT_EQ(sampled, iota_e);
}
