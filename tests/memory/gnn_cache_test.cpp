// The tensor cache on two-layer GAT and GraphSAGE node classifiers and, on a typed graph, RGCN
// (bases), RGAT and HGT ones (compact materialization), each layer a planner block, with dropout
// and attention dropout on: losses and gradients bit-identical under keep, recompute, host and
// NVMe, with the per-tier counters showing where the bytes went (tensor_cache_test.cpp and
// bert_cache_test.cpp do the same for GPT and BERT).
#include <gtest/gtest.h>

#include "memory/cache_parity.h"
#include "strata/models/gnn.h"
#include "strata/strata.h"

using namespace strata;
using namespace strata::memory;
using namespace strata::test;

namespace {

constexpr int64_t kNodes = 97, kFeatures = 12, kClasses = 3;
// The typed graph's types a (nodes 0-59) and b (60-96); relations a->a, a->b, b->a.
const std::vector<std::string> kTypes{"a", "b"};
const std::vector<Relation> kRelations{{0, "aa", 0}, {0, "ab", 1}, {1, "ba", 0}};

struct GraphBatch {
  Graph graph;
  Tensor x, labels;
};

// A random graph with duplicates and loops, isolated nodes, and labels; the same for every step.
GraphBatch plain_batch() {
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

// A random typed graph with duplicate edges and nodes without in-edges, and labels; the same for
// every step.
GraphBatch typed_batch() {
  static const GraphBatch b = [] {
    std::vector<int64_t> s, d, r, y;
    uint64_t st = 99;
    auto next = [&st] { return (st = st * 6364136223846793005ull + 1442695040888963407ull) >> 33; };
    for (int e = 0; e < 600; ++e) {
      const int64_t rel = int64_t(next() % 3);
      auto pick = [&](int64_t type) { return type == 0 ? int64_t(next() % 55) : 60 + int64_t(next() % 37); };
      s.push_back(pick(kRelations[size_t(rel)].src_type));
      d.push_back(pick(kRelations[size_t(rel)].dst_type));
      r.push_back(rel);
    }
    for (int64_t v = 0; v < kNodes; ++v) y.push_back(int64_t(next() % kClasses));
    GraphBatch out;
    const int64_t E = int64_t(s.size());
    out.graph = Graph::from_typed_edges(kTypes, {60, 37}, kRelations, ops::from_vector(s, {E}),
                                        ops::from_vector(d, {E}), ops::from_vector(r, {E}));
    manual_seed(7);
    out.x = ops::randn({kNodes, kFeatures});
    out.labels = ops::from_vector(y, {kNodes});
    return out;
  }();
  return b;
}

bool relational(const std::string& conv) { return conv == "rgcn" || conv == "rgat" || conv == "hgt"; }

models::GNNConfig config(const std::string& conv) {
  models::GNNConfig c;
  c.conv = conv, c.in_channels = kFeatures, c.hidden_channels = 6, c.num_classes = kClasses, c.heads = 2;
  c.dropout = 0.2, c.attention_dropout = conv == "gat" ? 0.1 : 0.0, c.aggr = "max";
  if (relational(conv))
    c.node_types = kTypes, c.relations = kRelations, c.num_bases = conv == "rgcn" ? 2 : 0,
    c.materialization = "compact";
  return c;
}

TrainResult train(const std::string& conv, std::shared_ptr<autograd::SavePolicy> policy, int steps,
                  TensorCache* cache, CountingPolicy* counter = nullptr) {
  auto batch = [&conv](int) { return relational(conv) ? typed_batch() : plain_batch(); };
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

INSTANTIATE_TEST_SUITE_P(Layers, GnnTensorCache, ::testing::Values("gat", "sage", "rgcn", "rgat", "hgt"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });
