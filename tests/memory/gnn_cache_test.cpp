// The tensor cache on two-layer GAT and GraphSAGE node classifiers (each layer a planner block)
// with dropout and attention dropout on: losses and gradients bit-identical under keep,
// recompute, host and NVMe, with the per-tier counters showing where the bytes went
// (tensor_cache_test.cpp and bert_cache_test.cpp do the same for GPT and BERT).
#include <gtest/gtest.h>

#include "memory/cache_parity.h"
#include "strata/models/gnn.h"
#include "strata/strata.h"

using namespace strata;
using namespace strata::memory;
using namespace strata::test;

namespace {

constexpr int64_t kNodes = 97, kFeatures = 12, kClasses = 3;

struct GraphBatch {
  Graph graph;
  Tensor x, labels;
};

// A random graph with duplicates and loops, isolated nodes, and labels; the same for every step.
GraphBatch batch(int) {
  static const GraphBatch b = [] {
    std::vector<int64_t> s, d, y;
    uint64_t st = 99;
    auto next = [&st] { return (st = st * 6364136223846793005ull + 1442695040888963407ull) >> 33; };
    for (int e = 0; e < 500; ++e)
      s.push_back(int64_t(next() % (kNodes - 3))), d.push_back(int64_t(next() % (kNodes - 3)));
    for (int64_t v = 0; v < kNodes; ++v) y.push_back(int64_t(next() % kClasses));
    GraphBatch out;
    out.graph = Graph::from_edges(kNodes, ops::from_vector(s, {int64_t(s.size())}),
                                  ops::from_vector(d, {int64_t(d.size())}));
    manual_seed(7);
    out.x = ops::randn({kNodes, kFeatures});
    out.labels = ops::from_vector(y, {kNodes});
    return out;
  }();
  return b;
}

models::GNNConfig config(const std::string& conv) {
  models::GNNConfig c;
  c.conv = conv, c.in_channels = kFeatures, c.hidden_channels = 6, c.num_classes = kClasses, c.heads = 2;
  c.dropout = 0.2, c.attention_dropout = conv == "gat" ? 0.1 : 0.0, c.aggr = "max";
  return c;
}

TrainResult train(const std::string& conv, std::shared_ptr<autograd::SavePolicy> policy, int steps,
                  TensorCache* cache, CountingPolicy* counter = nullptr) {
  batch(0);  // made once, before the seed: its features draw from the global generator
  manual_seed(4321);
  models::GNN model(config(conv));
  optim::AdamW opt(model.parameters(), optim::AdamWOptions(1e-2));
  return train_steps(policy, steps, cache, counter, model, opt, batch, [&](const GraphBatch& b) {
    return ops::cross_entropy(model.forward(b.graph, b.x), b.labels);
  });
}

TensorCacheOptions options() { return parity_cache_options("gnn_cache", 16 << 20, 32 << 20); }

struct Counts {
  TrainResult reference;
  size_t tensors_inside;
  uint64_t bytes_inside, bytes_outside;
};
const Counts& counts(const std::string& conv) {
  static std::map<std::string, Counts> all;
  auto it = all.find(conv);
  if (it != all.end()) return it->second;
  auto counter = std::make_shared<CountingPolicy>();
  train(conv, counter, 1, nullptr, counter.get());
  Counts c{TrainResult(), counter->tensors_inside(), counter->bytes_inside, counter->bytes_outside};
  auto keeper = std::make_shared<CountingPolicy>();
  c.reference = train(conv, keeper, 3, nullptr, keeper.get());
  return all.emplace(conv, std::move(c)).first->second;
}

class GnnTensorCache : public ::testing::TestWithParam<std::string> {};

}  // namespace

TEST_P(GnnTensorCache, KeepAllThroughTheCacheIsBitIdentical) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  auto cache = TensorCache::create(options(), parse_cache_policy("keep"));
  TrainResult run = train(GetParam(), cache, 3, cache.get());
  expect_identical(counts(GetParam()).reference, run, "keep");
  expect_everything_kept(run);
}

TEST_P(GnnTensorCache, RecomputeEveryLayerIsBitIdentical) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  auto cache = TensorCache::create(options(), parse_cache_policy("recompute"));
  TrainResult run = train(GetParam(), cache, 3, cache.get());
  expect_identical(counts(GetParam()).reference, run, "recompute");
  for (const CacheStats& s : run.stats) {
    EXPECT_EQ(s.segments, 2u);
    EXPECT_EQ(s.segment_recomputes, 2u);  // each layer re-ran once
    EXPECT_EQ(s.nvme.bytes_written + s.host.bytes_written, 0u);
  }
  EXPECT_LT(run.activation_peak, counts(GetParam()).reference.activation_peak);
}

TEST_P(GnnTensorCache, NvmeEveryLayerIsBitIdenticalAndEveryByteMakesTheRoundTrip) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  const Counts& c = counts(GetParam());
  ASSERT_GT(c.tensors_inside, 0u);
  auto cache = TensorCache::create(options(), parse_cache_policy("nvme", /*keep_last=*/0));
  TrainResult run = train(GetParam(), cache, 3, cache.get());
  expect_identical(c.reference, run, "nvme");
  for (const CacheStats& s : run.stats) {
    EXPECT_EQ(s.nvme.tensors_written, c.tensors_inside);
    EXPECT_EQ(s.nvme.bytes_written, c.bytes_inside);
    EXPECT_EQ(s.nvme.bytes_read + s.nvme.bytes_reused, c.bytes_inside);
    EXPECT_EQ(s.host.bytes_written, 0u);
    EXPECT_EQ(s.fallbacks, 0u);
  }
  EXPECT_EQ(cache->live_records(), 0u);
}

TEST_P(GnnTensorCache, HostEverythingIsBitIdentical) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  const Counts& c = counts(GetParam());
  auto cache = TensorCache::create(options(), parse_cache_policy("rules:*=host", 0));
  TrainResult run = train(GetParam(), cache, 3, cache.get());
  expect_identical(c.reference, run, "host");
  for (const CacheStats& s : run.stats) {
    EXPECT_EQ(s.host.bytes_written, c.bytes_inside + c.bytes_outside);
    EXPECT_EQ(s.host.bytes_read + s.host.bytes_reused, s.host.bytes_written);
    EXPECT_EQ(s.nvme.bytes_written, 0u);
    EXPECT_EQ(s.fallbacks, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Layers, GnnTensorCache, ::testing::Values("gat", "sage"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });
