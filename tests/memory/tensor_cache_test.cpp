// The tensor cache on a real model: gradients and losses bit-identical under every policy,
// with the per-tier counters proving the bytes really went to the tier and came back.
#include <gtest/gtest.h>

#include <utility>

#include "memory/cache_parity.h"
#include "strata/models/gpt.h"
#include "strata/strata.h"

using namespace strata;
using namespace strata::memory;
using namespace strata::test;

namespace {

models::GPTConfig config() {
  models::GPTConfig c = models::GPTConfig::preset("tiny");
  c.dropout = 0.1;
  return c;
}

// `steps` AdamW steps of the tiny GPT with dropout, the same data and seed every time.
TrainResult train(std::shared_ptr<autograd::SavePolicy> policy, int steps, TensorCache* cache,
                  CountingPolicy* counter = nullptr) {
  manual_seed(1234);
  models::GPT model(config());
  optim::AdamW opt(model.parameters(), optim::AdamWOptions(1e-2).weight_decay(0.1));
  auto batch = [](int step) {
    Tensor x = Tensor::empty({2, 32}, DType::i64), y = Tensor::empty({2, 32}, DType::i64);
    for (int64_t i = 0; i < 64; ++i) {
      x.data<int64_t>()[i] = (i * 31 + step * 7) % 256;
      y.data<int64_t>()[i] = (i * 17 + step * 5 + 1) % 256;
    }
    return std::pair{x, y};
  };
  return train_steps(policy, steps, cache, counter, model, opt, batch,
                     [&](const std::pair<Tensor, Tensor>& b) { return model.loss(b.first, b.second); });
}

TensorCacheOptions options() { return parity_cache_options("cache", 8 << 20, 16 << 20); }

const TrainResult& reference() {
  static TrainResult r = [] {
    auto counter = std::make_shared<CountingPolicy>();
    return train(counter, 5, nullptr, counter.get());
  }();
  return r;
}

struct Counts {
  size_t tensors_inside, tensors_outside;
  uint64_t bytes_inside, bytes_outside;
};
Counts counts() {
  auto counter = std::make_shared<CountingPolicy>();
  train(counter, 1, nullptr, counter.get());
  return {counter->tensors_inside(), counter->tensors_outside(), counter->bytes_inside, counter->bytes_outside};
}

}  // namespace

TEST(TensorCache, KeepAllThroughTheCacheIsBitIdentical) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  auto cache = TensorCache::create(options(), parse_cache_policy("keep"));
  TrainResult run = train(cache, 5, cache.get());
  expect_identical(reference(), run, "keep");
  expect_everything_kept(run);
}

TEST(TensorCache, NvmeEveryBlockIsBitIdenticalAndEveryByteMakesTheRoundTrip) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  const Counts c = counts();
  auto cache = TensorCache::create(options(), parse_cache_policy("nvme", /*keep_last=*/0));
  TrainResult run = train(cache, 5, cache.get());
  expect_identical(reference(), run, "nvme");
  for (const CacheStats& s : run.stats) {
    EXPECT_EQ(s.nvme.tensors_written, c.tensors_inside);
    EXPECT_EQ(s.nvme.bytes_written, c.bytes_inside);
    EXPECT_EQ(s.nvme.bytes_read + s.nvme.bytes_reused, c.bytes_inside);
    EXPECT_EQ(s.nvme.tensors_read + s.nvme.tensors_reused, c.tensors_inside);
    EXPECT_EQ(s.host.bytes_written, 0u);
    EXPECT_EQ(s.fallbacks, 0u);
    EXPECT_EQ(s.forwarded, 0u);
    EXPECT_EQ(s.spill_arena_used, 0u) << "every extent is freed after its last use";
    EXPECT_TRUE(s.warnings.empty()) << s.warnings.front();
  }
  EXPECT_EQ(cache->live_records(), 0u);
}

TEST(TensorCache, HostEverythingIsBitIdentical) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  const Counts c = counts();
  auto cache = TensorCache::create(options(), parse_cache_policy("rules:*=host", 0));
  TrainResult run = train(cache, 5, cache.get());
  expect_identical(reference(), run, "host");
  for (const CacheStats& s : run.stats) {
    EXPECT_EQ(s.host.bytes_written, c.bytes_inside + c.bytes_outside);
    EXPECT_EQ(s.host.bytes_read + s.host.bytes_reused, s.host.bytes_written);
    // The batch's token ids and targets (embedding and loss save them) are still held by the
    // training loop when backward needs them: used as they are, not read back as a second copy.
    EXPECT_EQ(s.host.tensors_reused, 2u);
    EXPECT_EQ(s.host.bytes_reused, 2u * 2 * 32 * sizeof(int64_t));
    EXPECT_EQ(s.nvme.bytes_written, 0u);
    EXPECT_EQ(s.fallbacks, 0u);
    EXPECT_EQ(s.forwarded, 0u);
    EXPECT_EQ(s.host_pool_used, 0u);
  }
}

TEST(TensorCache, RecomputeEveryBlockIsBitIdenticalAndSavesLess) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  auto cache = TensorCache::create(options(), parse_cache_policy("recompute"));
  TrainResult run = train(cache, 5, cache.get());
  expect_identical(reference(), run, "recompute");
  for (const CacheStats& s : run.stats) {
    EXPECT_EQ(s.segments, size_t(config().n_layer));
    EXPECT_EQ(s.segment_recomputes, size_t(config().n_layer));  // each block re-ran once
    EXPECT_EQ(s.nvme.bytes_written + s.host.bytes_written, 0u);
  }
  EXPECT_LT(run.activation_peak, reference().activation_peak);
}

TEST(TensorCache, AMixedPolicyIsBitIdentical) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  auto cache = TensorCache::create(options(), parse_cache_policy("rules:transformer.h.0*=nvme;transformer.h.1*=recompute;*=host", 0));
  TrainResult run = train(cache, 5, cache.get());
  expect_identical(reference(), run, "mixed");
  for (const CacheStats& s : run.stats) {
    EXPECT_GT(s.nvme.bytes_written, 0u);
    EXPECT_EQ(s.nvme.bytes_read + s.nvme.bytes_reused, s.nvme.bytes_written);
    EXPECT_GT(s.host.bytes_written, 0u);
    EXPECT_EQ(s.host.bytes_read + s.host.bytes_reused, s.host.bytes_written);
    EXPECT_EQ(s.segments, 1u);
    EXPECT_EQ(s.fallbacks, 0u);
    EXPECT_EQ(s.forwarded, 0u);
  }
}

// Op-level recompute: GELU's output (what each block's c_proj saves) is dropped in forward and
// made again from GELU's saved input when c_proj's backward needs it.
TEST(TensorCache, OpLevelRecomputeOfGeluOutputsIsBitIdentical) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  auto cache = TensorCache::create(options(), parse_cache_policy("rules:transformer.h.*.mlp.c_proj=recompute", 0));
  TrainResult run = train(cache, 5, cache.get());
  expect_identical(reference(), run, "op-level recompute");
  for (const CacheStats& s : run.stats) {
    EXPECT_EQ(s.op_recompute_drops, size_t(config().n_layer));
    EXPECT_EQ(s.op_recomputes, size_t(config().n_layer));
    EXPECT_EQ(s.segments, 0u);
    EXPECT_TRUE(s.warnings.empty()) << s.warnings.front();
  }
  EXPECT_LT(run.activation_peak, reference().activation_peak);
}

// Layer norm outputs (the inputs of c_attn and c_fc) dropped and made again from the saved
// layer-norm input in backward: the same kernel, the same bits.
TEST(TensorCache, OpLevelRecomputeOfLayerNormOutputsIsBitIdentical) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  auto cache = TensorCache::create(options(), parse_cache_policy("rules:transformer.h.*.attn.c_attn=recompute;transformer.h.*.mlp.c_fc=recompute", 0));
  TrainResult run = train(cache, 5, cache.get());
  expect_identical(reference(), run, "layer-norm recompute");
  for (const CacheStats& s : run.stats) {
    EXPECT_EQ(s.op_recompute_drops, size_t(2 * config().n_layer));
    EXPECT_EQ(s.op_recomputes, size_t(2 * config().n_layer));
    EXPECT_EQ(s.segments, 0u);
    EXPECT_TRUE(s.warnings.empty()) << s.warnings.front();
  }
  EXPECT_LT(run.activation_peak, reference().activation_peak);
}

// A GEMM's output (c_fc's, which GELU saves) dropped and made again from Linear's saved input
// and weight: the same operands and kernel, the same bits.
TEST(TensorCache, OpLevelRecomputeOfLinearOutputsIsBitIdentical) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  auto cache = TensorCache::create(options(), parse_cache_policy("rules:transformer.h.*.mlp@GeluTanhBackward=recompute", 0));
  TrainResult run = train(cache, 5, cache.get());
  expect_identical(reference(), run, "linear recompute");
  for (const CacheStats& s : run.stats) {
    EXPECT_EQ(s.op_recompute_drops, size_t(config().n_layer));
    EXPECT_EQ(s.op_recomputes, size_t(config().n_layer));
    EXPECT_TRUE(s.warnings.empty()) << s.warnings.front();
  }
  EXPECT_LT(run.activation_peak, reference().activation_peak);
}

// Every stored storage still alive anywhere is overwritten with 0xFF when backward starts: if an
// op read a saved tensor other than through SavedTensor::unpack, its gradients would be NaN.
TEST(TensorCache, PoisonedDroppedStoragesChangeNothing) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  TensorCacheOptions o = options();
  o.poison_dropped = true;
  auto cache = TensorCache::create(o, parse_cache_policy("rules:transformer.h.*.mlp.c_proj=recompute;*=host", 0));
  TrainResult run = train(cache, 2, cache.get());
  TrainResult ref = reference();
  ref.losses.resize(2);
  expect_identical(ref, run, "poisoned");
}

// A drive slower than compute (every write stalls 50 ms): without a limit every store is still
// in flight when forward ends, so all the activations are in memory; with activation_limit_bytes
// forward waits for earlier stores instead, so forward ends near the limit (plus the tensor
// being saved), and the losses and gradients do not change.
TEST(TensorCache, ASlowDriveMakesForwardWaitInsteadOfExceedingTheActivationLimit) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  struct Run {
    std::vector<double> losses;
    std::vector<float> grads;
    int64_t forward_end_bytes = 0;  // saved-activation bytes when forward ends, step 0
    CacheStats stats;
  };
  auto run = [](size_t limit) {
    TensorCacheOptions o = options();
    o.faults.faults.push_back({IoFault::Kind::SlowWrite, 0, UINT64_MAX});
    o.activation_limit_bytes = limit;
    auto cache = TensorCache::create(o, parse_cache_policy("nvme", 0));
    manual_seed(1234);
    models::GPT model(config());
    optim::AdamW opt(model.parameters(), optim::AdamWOptions(1e-2).weight_decay(0.1));
    Tensor x = Tensor::empty({2, 32}, DType::i64), y = Tensor::empty({2, 32}, DType::i64);
    for (int64_t i = 0; i < 64; ++i) x.data<int64_t>()[i] = (i * 31) % 256, y.data<int64_t>()[i] = (i * 17 + 1) % 256;
    Run r;
    for (int step = 0; step < 2; ++step) {
      autograd::SavePolicyGuard guard(cache);
      cache->begin_step();
      Tensor loss = model.loss(x, y);
      if (step == 0)
        r.forward_end_bytes = cpu_allocator().stats().snapshot().current_of(MemoryCategory::SavedActivation);
      r.losses.push_back(loss.item<double>());
      opt.zero_grad();
      loss.backward();
      r.stats = cache->end_step();
      if (step == 0)
        for (const Tensor& p : model.parameters()) r.grads.insert(r.grads.end(), p.grad().data<float>(), p.grad().data<float>() + p.grad().numel());
      opt.step();
    }
    return r;
  };
  const Run piled = run(0);
  EXPECT_EQ(piled.stats.store_waits, 0u);
  const int64_t limit = piled.forward_end_bytes / 4;
  const Run held = run(size_t(limit));
  EXPECT_EQ(held.losses, piled.losses);
  EXPECT_EQ(held.grads, piled.grads);
  const int64_t largest = int64_t(config().n_embd) * 4 * 64 * 4;  // the MLP's hidden activation, f32
  EXPECT_LE(held.forward_end_bytes, limit + largest) << "without the limit: " << piled.forward_end_bytes;
  EXPECT_GT(held.stats.store_waits, 0u);
  EXPECT_GT(held.stats.store_wait_seconds, 0.0);
  EXPECT_EQ(held.stats.fallbacks, 0u);
}

// A slow disk: backward catches stores still in flight. Those unpacks are served from memory
// (forwarding), the stores are cancelled, and the results do not change.
TEST(TensorCache, ForwardingInFlightStoresGivesTheSameGradients) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  TensorCacheOptions o = options();
  o.sync_stores_before_backward = false;
  o.faults.faults.push_back({IoFault::Kind::SlowWrite, 0, UINT64_MAX});
  auto cache = TensorCache::create(o, parse_cache_policy("nvme", 0));
  TrainResult run = train(cache, 2, cache.get());
  TrainResult ref = reference();
  ref.losses.resize(2);
  expect_identical(ref, run, "forwarding");
  for (const CacheStats& s : run.stats) {
    EXPECT_GT(s.forwarded, 0u);
    EXPECT_GT(s.cancelled_stores, 0u);
    EXPECT_EQ(s.fallbacks, 0u);
    EXPECT_EQ(s.nvme.tensors_read + s.nvme.tensors_reused, s.nvme.tensors_written);
    EXPECT_EQ(s.spill_arena_used, 0u);
  }
}
