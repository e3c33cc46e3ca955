// The tensor cache on BERT with dropout on and padded batches: losses and gradients
// bit-identical under keep, recompute, host, NVMe and a mixed policy, with the per-tier
// counters showing the bytes made the round trip (tensor_cache_test.cpp does the same for GPT).
#include <gtest/gtest.h>

#include "memory/cache_parity.h"
#include "strata/io/text/mlm_batches.h"
#include "strata/models/bert.h"
#include "strata/strata.h"

using namespace strata;
using namespace strata::memory;
using namespace strata::test;

namespace {

models::BertConfig config() {
  models::BertConfig c = models::BertConfig::preset("tiny");
  c.hidden_dropout_prob = 0.1;
  return c;
}

// Padded MLM batches (short samples, two segments) from fixed windows.
io::MlmBatch batch(int step) {
  io::MlmOptions o;
  o.batch = 4, o.seq_len = 48, o.short_seq_prob = 0.5, o.seed = 11;
  std::vector<int64_t> w(size_t(o.batch * o.content_len()));
  for (size_t i = 0; i < w.size(); ++i) w[i] = int64_t((i * 29 + size_t(step) * 13) % 256);
  return io::make_mlm_batch(w, o, uint64_t(step));
}

TrainResult train(std::shared_ptr<autograd::SavePolicy> policy, int steps, TensorCache* cache,
                  CountingPolicy* counter = nullptr) {
  manual_seed(4321);
  models::BertForMaskedLM model(config());
  optim::AdamW opt(model.parameters(), optim::AdamWOptions(1e-2).weight_decay(0.01));
  return train_steps(policy, steps, cache, counter, model, opt, batch, [&](const io::MlmBatch& b) {
    return model.loss(b.input_ids, b.token_type_ids, b.attention_mask, b.labels);
  });
}

TensorCacheOptions options() { return parity_cache_options("bert_cache", 16 << 20, 32 << 20); }

const TrainResult& reference() {
  static TrainResult r = [] {
    auto counter = std::make_shared<CountingPolicy>();
    return train(counter, 3, nullptr, counter.get());
  }();
  return r;
}

struct Counts {
  size_t tensors_inside;
  uint64_t bytes_inside, bytes_outside;
};
Counts counts() {
  auto counter = std::make_shared<CountingPolicy>();
  train(counter, 1, nullptr, counter.get());
  return {counter->tensors_inside(), counter->bytes_inside, counter->bytes_outside};
}

}  // namespace

TEST(BertTensorCache, KeepAllThroughTheCacheIsBitIdentical) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  auto cache = TensorCache::create(options(), parse_cache_policy("keep"));
  TrainResult run = train(cache, 3, cache.get());
  expect_identical(reference(), run, "keep");
  expect_everything_kept(run);
}

TEST(BertTensorCache, RecomputeEveryLayerWithDropoutIsBitIdentical) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  auto cache = TensorCache::create(options(), parse_cache_policy("recompute"));
  TrainResult run = train(cache, 3, cache.get());
  expect_identical(reference(), run, "recompute");
  for (const CacheStats& s : run.stats) {
    EXPECT_EQ(s.segments, size_t(config().num_hidden_layers));
    EXPECT_EQ(s.segment_recomputes, size_t(config().num_hidden_layers));  // each layer re-ran once
    EXPECT_EQ(s.nvme.bytes_written + s.host.bytes_written, 0u);
  }
  EXPECT_LT(run.activation_peak, reference().activation_peak);
}

TEST(BertTensorCache, NvmeEveryLayerIsBitIdenticalAndEveryByteMakesTheRoundTrip) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  const Counts c = counts();
  auto cache = TensorCache::create(options(), parse_cache_policy("nvme", /*keep_last=*/0));
  TrainResult run = train(cache, 3, cache.get());
  expect_identical(reference(), run, "nvme");
  for (const CacheStats& s : run.stats) {
    EXPECT_EQ(s.nvme.tensors_written, c.tensors_inside);
    EXPECT_EQ(s.nvme.bytes_written, c.bytes_inside);
    EXPECT_EQ(s.nvme.bytes_read + s.nvme.bytes_reused, c.bytes_inside);
    EXPECT_EQ(s.host.bytes_written, 0u);
    EXPECT_EQ(s.fallbacks, 0u);
    EXPECT_EQ(s.forwarded, 0u);
    EXPECT_EQ(s.spill_arena_used, 0u);
  }
  EXPECT_EQ(cache->live_records(), 0u);
}

TEST(BertTensorCache, HostEverythingIsBitIdentical) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  const Counts c = counts();
  auto cache = TensorCache::create(options(), parse_cache_policy("rules:*=host", 0));
  TrainResult run = train(cache, 3, cache.get());
  expect_identical(reference(), run, "host");
  // Step 0's batch is the one counted (later batches label a different number of rows).
  EXPECT_EQ(run.stats.at(0).host.bytes_written, c.bytes_inside + c.bytes_outside);
  for (const CacheStats& s : run.stats) {
    EXPECT_GT(s.host.bytes_written, c.bytes_inside);
    EXPECT_EQ(s.host.bytes_read + s.host.bytes_reused, s.host.bytes_written);
    EXPECT_EQ(s.nvme.bytes_written, 0u);
    EXPECT_EQ(s.fallbacks, 0u);
    EXPECT_EQ(s.host_pool_used, 0u);
  }
}

// Layer 0 to NVMe, layer 1 recomputed as a segment, the rest (embeddings, MLM head) to the host
// pool, and GELU outputs of the head made again from their inputs.
TEST(BertTensorCache, AMixedPolicyIsBitIdentical) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  auto cache =
      TensorCache::create(options(), parse_cache_policy("rules:bert.encoder.layer.0*=nvme;bert.encoder.layer.1*=recompute;*=host", 0));
  TrainResult run = train(cache, 3, cache.get());
  expect_identical(reference(), run, "mixed");
  for (const CacheStats& s : run.stats) {
    EXPECT_GT(s.nvme.bytes_written, 0u);
    EXPECT_EQ(s.nvme.bytes_read + s.nvme.bytes_reused, s.nvme.bytes_written);
    EXPECT_GT(s.host.bytes_written, 0u);
    EXPECT_EQ(s.host.bytes_read + s.host.bytes_reused, s.host.bytes_written);
    EXPECT_EQ(s.segments, 1u);
    EXPECT_EQ(s.segment_recomputes, 1u);
    EXPECT_EQ(s.fallbacks, 0u);
  }
}

// Op-level recompute: each layer's GELU output (what output.dense saves) is dropped in forward
// and made again from GELU's input in backward.
TEST(BertTensorCache, OpLevelRecomputeOfGeluOutputsIsBitIdentical) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  auto cache = TensorCache::create(options(), parse_cache_policy("rules:bert.encoder.layer.?.output.dense=recompute", 0));
  TrainResult run = train(cache, 3, cache.get());
  expect_identical(reference(), run, "op-level recompute");
  for (const CacheStats& s : run.stats) {
    EXPECT_EQ(s.op_recompute_drops, size_t(config().num_hidden_layers));
    EXPECT_EQ(s.op_recomputes, size_t(config().num_hidden_layers));
    EXPECT_EQ(s.segments, 0u);
    EXPECT_TRUE(s.warnings.empty()) << s.warnings.front();
  }
}

// Post-LN: each layer after the first starts from the previous layer's output LayerNorm, whose
// output the query/key/value projection saves; the planner's selective options drop it and the
// cache makes it again from the norm's saved input (a tensor of the layer before).
TEST(BertTensorCache, OpLevelRecomputeOfTheLayerInputFromThePreviousLayersNormIsBitIdentical) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  Plan plan;
  for (int64_t i = 1; i < config().num_hidden_layers; ++i)
    plan.tensors["bert.encoder.layer." + std::to_string(i) + ".attention.self#0:LinearBackward"] = CacheAction::Recompute;
  auto cache = TensorCache::create(options(), make_plan_policy(plan));
  TrainResult run = train(cache, 3, cache.get());
  expect_identical(reference(), run, "layer inputs recomputed");
  for (const CacheStats& s : run.stats) {
    EXPECT_EQ(s.op_recompute_drops, size_t(config().num_hidden_layers - 1));
    EXPECT_EQ(s.op_recomputes, size_t(config().num_hidden_layers - 1));
    EXPECT_EQ(s.segments, 0u);
    EXPECT_TRUE(s.warnings.empty()) << s.warnings.front();
  }
}
