// GraphBatchLoader: every seed once per epoch in batches whose features and labels are the rows of
// their nodes, the same bits for any number of worker threads, resumable, sharded across ranks,
// bounded prefetch, errors handed to the caller, and a full-graph mode.
#include "strata/io/graphs/graph_loader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <numeric>
#include <thread>

#include "strata/core/error.h"
#include "strata/core/factory.h"

using namespace strata;
using namespace strata::io;

namespace {

constexpr int64_t kNodes = 60, kFeatures = 3;

std::vector<int64_t> ints(const Tensor& t) { return t.to_vector<int64_t>(); }

// 60 nodes, ~8 in-edges each from a fixed sequence; feature (v, c) = 10 v + c; label v % 7.
std::shared_ptr<GraphDataset> dataset() {
  std::vector<int64_t> s, d;
  uint64_t x = 99;
  for (int64_t e = 0; e < 8 * kNodes; ++e) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    s.push_back(int64_t((x >> 33) % kNodes));
    d.push_back(e % kNodes);
  }
  auto data = std::make_shared<GraphDataset>();
  data->name = "test graph";
  const auto E = int64_t(s.size());
  data->graph = Graph::from_edges(kNodes, from_vector(s, {E}), from_vector(d, {E}));
  std::vector<float> f;
  std::vector<int64_t> labels;
  for (int64_t v = 0; v < kNodes; ++v) {
    for (int64_t c = 0; c < kFeatures; ++c) f.push_back(float(10 * v + c));
    labels.push_back(v % 7);
  }
  data->features = from_vector(f, {kNodes, kFeatures});
  data->labels = from_vector(labels, {kNodes});
  data->num_classes = 7;
  return data;
}

// Nodes 0, 2, 4, ... 58: 30 seeds.
Tensor even_nodes() { return arange(0, kNodes, 2); }

// Everything a batch holds, flattened, to compare batches bit for bit.
std::vector<std::vector<double>> contents(const GraphMiniBatch& b) {
  std::vector<std::vector<double>> out{b.seeds.to_double_vector(),
                                       b.features.to_double_vector(),
                                       b.labels.to_double_vector(),
                                       {double(b.epoch), double(b.index)}};
  for (const SampledBlock& k : b.blocks) {
    out.push_back(k.nodes.to_double_vector());
    out.push_back(k.parent_edges.to_double_vector());
    out.push_back(k.graph.src().to_double_vector());
    out.push_back(k.graph.dst().to_double_vector());
    out.push_back({double(k.num_dst)});
  }
  return out;
}

}  // namespace

TEST(GraphBatchLoader, EverySeedOncePerEpochWithItsRowsInANewOrderEachEpoch) {
  const auto data = dataset();
  GraphBatchLoader loader(data, even_nodes(), {.batch = 8, .fanouts = {3, 2}, .seed = 4, .num_workers = 2});
  ASSERT_EQ(loader.batches_per_epoch(), 4);
  std::vector<std::vector<int64_t>> orders;
  for (int epoch = 0; epoch < 3; ++epoch) {
    std::vector<int64_t> seen;
    for (int i = 0; i < 4; ++i) {
      const GraphMiniBatch b = loader.next();
      EXPECT_EQ(b.epoch, epoch);
      EXPECT_EQ(b.index, i);
      const std::vector<int64_t> seeds = ints(b.seeds);
      ASSERT_EQ(int64_t(seeds.size()), i < 3 ? 8 : 6);
      ASSERT_EQ(b.blocks.size(), 2u);
      const std::vector<int64_t> last = ints(b.blocks[1].nodes);
      EXPECT_EQ(b.blocks[1].num_dst, int64_t(seeds.size()));
      EXPECT_TRUE(std::equal(seeds.begin(), seeds.end(), last.begin()));
      const std::vector<int64_t> input = ints(b.blocks[0].nodes);
      ASSERT_EQ(b.features.shape(), (Shape{int64_t(input.size()), kFeatures}));
      const std::vector<float> f = b.features.to_vector<float>();
      for (size_t r = 0; r < input.size(); ++r)
        for (int64_t c = 0; c < kFeatures; ++c)
          ASSERT_EQ(f[r * kFeatures + size_t(c)], float(10 * input[r] + c)) << "row " << r;
      const std::vector<int64_t> labels = ints(b.labels);
      ASSERT_EQ(labels.size(), seeds.size());
      for (size_t j = 0; j < seeds.size(); ++j) EXPECT_EQ(labels[j], seeds[j] % 7);
      seen.insert(seen.end(), seeds.begin(), seeds.end());
    }
    orders.push_back(seen);
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen, ints(even_nodes())) << "epoch " << epoch;
  }
  EXPECT_NE(orders[0], orders[1]);
  EXPECT_NE(orders[1], orders[2]);
}

TEST(GraphBatchLoader, UnshuffledIsInTheGivenOrderAndDropLastSkipsTheRemainder) {
  const auto data = dataset();
  GraphBatchLoader loader(
      data, from_vector(std::vector<int64_t>{9, 3, 41, 7, 0}, {5}),
      {.batch = 2, .fanouts = {2}, .shuffle = false, .drop_last = true, .num_workers = 1});
  ASSERT_EQ(loader.batches_per_epoch(), 2);
  EXPECT_EQ(ints(loader.next().seeds), (std::vector<int64_t>{9, 3}));
  EXPECT_EQ(ints(loader.next().seeds), (std::vector<int64_t>{41, 7}));
  const GraphMiniBatch b = loader.next();
  EXPECT_EQ(b.epoch, 1);
  EXPECT_EQ(ints(b.seeds), (std::vector<int64_t>{9, 3}));
  EXPECT_THROW(GraphBatchLoader(data, even_nodes(), {.batch = 31, .drop_last = true}), ValueError);
}

TEST(GraphBatchLoader, SameBatchesWithZeroOneAndThreeWorkers) {
  const auto data = dataset();
  GraphLoaderOptions o{.batch = 7, .fanouts = {4, 3}, .seed = 21};
  std::vector<std::vector<std::vector<double>>> reference;
  for (int workers : {0, 1, 3}) {
    o.num_workers = workers;
    GraphBatchLoader loader(data, even_nodes(), o);
    for (int i = 0; i < 12; ++i) {  // 2+ epochs of 5 batches
      const GraphMiniBatch b = loader.next();
      if (workers == 0)
        reference.push_back(contents(b));
      else
        EXPECT_EQ(contents(b), reference[size_t(i)]) << workers << " workers, batch " << i;
    }
  }
  o.seed = 22;
  GraphBatchLoader other(data, even_nodes(), o);
  EXPECT_NE(contents(other.next()), reference[0]);
}

TEST(GraphBatchLoader, CursorResumesTheSameBatches) {
  const auto data = dataset();
  GraphLoaderOptions o{.batch = 4, .fanouts = {3, 3}, .seed = 9, .num_workers = 2};
  GraphBatchLoader a(data, even_nodes(), o);
  for (int i = 0; i < 10; ++i) a.next();  // into epoch 1 (8 batches per epoch)
  const DataCursor c = a.cursor();
  EXPECT_EQ(c.epoch, 1);
  EXPECT_EQ(c.sample, 2);
  std::vector<std::vector<std::vector<double>>> expected;
  for (int i = 0; i < 9; ++i) expected.push_back(contents(a.next()));
  o.num_workers = 0;
  GraphBatchLoader b(data, even_nodes(), o);
  b.set_cursor(c);
  for (int i = 0; i < 9; ++i) EXPECT_EQ(contents(b.next()), expected[size_t(i)]) << "batch " << i;
  EXPECT_THROW(b.set_cursor({.epoch = 0, .sample = 8}), ValueError);
}

TEST(GraphBatchLoader, TwoRanksCoverEverySeedOncePerEpoch) {
  const auto data = dataset();
  GraphLoaderOptions o{.batch = 4, .fanouts = {2}, .seed = 5, .num_workers = 1};  // 8 batches, the last of 2
  GraphBatchLoader single(data, even_nodes(), o);
  o.world_size = 2;
  o.rank = 0;
  GraphBatchLoader r0(data, even_nodes(), o);
  o.rank = 1;
  GraphBatchLoader r1(data, even_nodes(), o);
  std::vector<int64_t> epoch0;
  for (int step = 0; step < 6; ++step) {  // crosses into epoch 1
    const GraphMiniBatch a = r0.next(), b = r1.next();
    EXPECT_EQ(contents(a), contents(single.next()));
    EXPECT_EQ(contents(b), contents(single.next()));
    EXPECT_EQ(a.index % 2, 0);
    EXPECT_EQ(b.index % 2, 1);
    for (const GraphMiniBatch* m : {&a, &b})
      if (m->epoch == 0)
        for (int64_t s : ints(m->seeds)) epoch0.push_back(s);
  }
  std::sort(epoch0.begin(), epoch0.end());
  EXPECT_EQ(epoch0, ints(even_nodes()));
  EXPECT_EQ(r1.cursor().epoch * 8 + r1.cursor().sample, 12);
}

TEST(GraphBatchLoader, PrefetchStaysWithinItsBound) {
  const auto data = dataset();
  std::atomic<int64_t> made{0};
  GraphLoaderOptions o{.batch = 2, .fanouts = {2}, .num_workers = 3, .prefetch = 2};
  o.transform = [&](GraphMiniBatch&) { ++made; };
  // Waits until `n` batches are made (a shared machine may be slow), then a while longer.
  auto settle = [&](int64_t n) {
    for (int i = 0; i < 500 && made.load() < n; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  };
  GraphBatchLoader loader(data, even_nodes(), o);
  settle(2);
  EXPECT_EQ(made.load(), 2);
  loader.next();
  settle(3);
  EXPECT_EQ(made.load(), 3);
}

// A huge `prefetch` (train_gnn --prefetch 1000000000 ran the loader threads to 3 GB) stops at the
// byte bound: with room for about two batches, no more than two plus the workers' in flight are
// held, and the batches are the same as an unbounded loader's.
TEST(GraphBatchLoader, PrefetchStaysWithinItsByteBound) {
  const auto data = dataset();
  std::atomic<int64_t> made{0};
  GraphLoaderOptions o{
      .batch = 2, .fanouts = {2}, .shuffle = false, .num_workers = 3, .prefetch = 1000000000};
  GraphBatchLoader probe(data, even_nodes(),
                         {.batch = 2, .fanouts = {2}, .shuffle = false, .num_workers = 0});
  const GraphMiniBatch first = probe.next();
  int64_t one = first.features.nbytes() + first.labels.nbytes() + first.seeds.nbytes();
  for (const SampledBlock& b : first.blocks) one += b.nodes.nbytes() + b.parent_edges.nbytes();
  o.prefetch_bytes = 2 * one;
  o.transform = [&](GraphMiniBatch&) { ++made; };
  GraphBatchLoader loader(data, even_nodes(), o);
  for (int i = 0; i < 500 && made.load() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_LE(made.load(), 2 + o.num_workers) << "batches made past the byte bound";
  EXPECT_LE(loader.held_batches(), 2 + o.num_workers);
  EXPECT_GT(loader.held_bytes(), 0);
  for (int k = 0; k < 6; ++k) {
    const GraphMiniBatch b = loader.next(), ref = k == 0 ? first : probe.next();
    EXPECT_EQ(ints(b.seeds), ints(ref.seeds)) << "batch " << k;
  }
  GraphLoaderOptions bad = o;
  bad.prefetch_bytes = 0;
  EXPECT_THROW(GraphBatchLoader(data, even_nodes(), bad), ValueError);
}

TEST(GraphBatchLoader, WorkerErrorsReachTheCallerAndLoadingGoesOn) {
  const auto data = dataset();
  GraphLoaderOptions o{.batch = 10, .fanouts = {2}, .shuffle = false, .num_workers = 2};
  o.transform = [](GraphMiniBatch& b) {
    if (b.index == 1) throw IoError("batch " + std::to_string(b.index) + " is broken");
    b.labels = Tensor();  // what the transform does is what next() returns
  };
  GraphBatchLoader loader(data, even_nodes(), o);
  GraphMiniBatch first = loader.next();
  EXPECT_EQ(ints(first.seeds)[0], 0);
  EXPECT_FALSE(first.labels.defined());
  try {
    loader.next();
    FAIL() << "the throwing transform did not fail its batch";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("batch 1 is broken"), std::string::npos);
  }
  EXPECT_EQ(ints(loader.next().seeds)[0], 40);
}

TEST(GraphBatchLoader, FullGraphModeGivesTheWholeGraphOncePerEpoch) {
  const auto data = dataset();
  const Tensor seeds = from_vector(std::vector<int64_t>{8, 2, 5}, {3});
  GraphBatchLoader loader(data, seeds, {.fanouts = {5, 5}, .full_graph = true, .num_workers = 1});
  ASSERT_EQ(loader.batches_per_epoch(), 1);
  for (int epoch = 0; epoch < 2; ++epoch) {
    const GraphMiniBatch b = loader.next();
    EXPECT_EQ(b.epoch, epoch);
    EXPECT_EQ(ints(b.seeds), (std::vector<int64_t>{8, 2, 5}));
    EXPECT_EQ(ints(b.labels), (std::vector<int64_t>{1, 2, 5}));
    EXPECT_EQ(b.features.to_vector<float>(), data->features.to_vector<float>());
    ASSERT_EQ(b.blocks.size(), 2u);
    std::vector<int64_t> iota(kNodes);
    std::iota(iota.begin(), iota.end(), 0);
    for (const SampledBlock& k : b.blocks) {
      EXPECT_EQ(k.num_dst, kNodes);
      EXPECT_EQ(ints(k.nodes), iota);
      EXPECT_EQ(ints(k.graph.src()), ints(data->graph.src()));
      EXPECT_EQ(ints(k.graph.dst()), ints(data->graph.dst()));
      EXPECT_EQ(k.parent_edges.numel(), data->graph.num_edges());
    }
  }
  EXPECT_THROW(GraphBatchLoader(data, seeds, {.full_graph = true, .world_size = 2}), ValueError);
}

// Without fanouts a full-graph batch has no blocks, so a typed graph (which has none) is one
// batch too: the seeds in the order given, their labels, one batch per epoch.
TEST(GraphBatchLoader, FullGraphModeWithoutFanoutsTakesATypedGraph) {
  auto typed = std::make_shared<GraphDataset>();
  typed->name = "typed";
  typed->graph = Graph::from_typed_edges(
      {"a", "b"}, {3, 2}, {{0, "ab", 1}, {1, "ba", 0}}, from_vector(std::vector<int64_t>{0, 3, 2}, {3}),
      from_vector(std::vector<int64_t>{4, 1, 3}, {3}), from_vector(std::vector<int64_t>{0, 1, 0}, {3}));
  typed->labels = from_vector(std::vector<int64_t>{5, 6, 7, 8, 9}, {5});
  EXPECT_THROW(GraphBatchLoader(typed, from_vector(std::vector<int64_t>{2, 0}, {2}), {.full_graph = true}),
               Error)
      << "whole-graph blocks need a homogeneous graph";
  GraphBatchLoader loader(typed, from_vector(std::vector<int64_t>{2, 0}, {2}),
                          {.fanouts = {}, .full_graph = true, .num_workers = 0});
  ASSERT_EQ(loader.batches_per_epoch(), 1);
  for (int epoch = 0; epoch < 2; ++epoch) {
    const GraphMiniBatch b = loader.next();
    EXPECT_EQ(b.epoch, epoch);
    EXPECT_TRUE(b.blocks.empty());
    EXPECT_EQ(ints(b.seeds), (std::vector<int64_t>{2, 0}));
    EXPECT_EQ(ints(b.labels), (std::vector<int64_t>{7, 5}));
  }
  EXPECT_EQ(loader.cursor().epoch, 2);
}

TEST(GraphBatchLoader, BadDatasetsAndSeedsAreRefusedAtConstruction) {
  const auto data = dataset();
  EXPECT_THROW(GraphBatchLoader(data, from_vector(std::vector<int64_t>{1, 2, 1}, {3}), {}), ValueError);
  EXPECT_THROW(GraphBatchLoader(data, from_vector(std::vector<int64_t>{60}, {1}), {}), IndexError);
  EXPECT_THROW(GraphBatchLoader(data, from_vector(std::vector<int64_t>{}, {0}), {}), ValueError);
  EXPECT_THROW(GraphBatchLoader(data, even_nodes(), {.fanouts = {}}), ValueError);
  auto wrong = std::make_shared<GraphDataset>(*data);
  wrong->features = zeros({kNodes - 1, kFeatures});
  EXPECT_THROW(GraphBatchLoader(wrong, even_nodes(), {}), ShapeError);
  auto bare = std::make_shared<GraphDataset>(*data);
  bare->features = Tensor();
  bare->labels = Tensor();
  GraphBatchLoader loader(bare, even_nodes(), {.batch = 5, .num_workers = 0});
  const GraphMiniBatch b = loader.next();
  EXPECT_FALSE(b.features.defined());
  EXPECT_FALSE(b.labels.defined());
  EXPECT_EQ(b.seeds.numel(), 5);
}
