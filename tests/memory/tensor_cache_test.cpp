// The tensor cache on the tiny GPT, beyond the parity suite (cache_parity_test.cpp): op-level
// recompute of GELU, LayerNorm and Linear outputs, poisoned dropped storages, a slow drive under
// the activation limit, forwarded stores, and the batch the host tier does not copy.
#include <gtest/gtest.h>

#include <utility>

#include "memory/cache_parity_models.h"
#include "strata/strata.h"
#include "support/token_batch.h"

using namespace strata;
using namespace strata::memory;
using namespace strata::test;

namespace {

// The tiny GPT of the parity suite (cache_parity_models.h).
const ParityModel& gpt() {
  static const ParityModel m = parity_model("gpt");
  return m;
}
models::GPTConfig config() { return parity_gpt_config(); }
TrainResult train(std::shared_ptr<autograd::SavePolicy> policy, int steps, TensorCache* cache,
                  CountingPolicy* counter = nullptr) {
  return gpt().train(std::move(policy), steps, cache, counter);
}
TensorCacheOptions options() { return gpt().options(); }
const TrainResult& reference() { return gpt().reference(); }

}  // namespace

// The batch's token ids and targets (embedding and loss save them) are still held by the training
// loop when backward needs them: used as they are, not read back as a second copy.
TEST(TensorCache, TheHostTierUsesTheBatchTheLoopStillHoldsInsteadOfASecondCopy) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  auto cache = TensorCache::create(options(), parse_cache_policy("rules:*=host", 0));
  TrainResult run = train(cache, 2, cache.get());
  for (const CacheStats& s : run.stats) {
    EXPECT_EQ(s.host.tensors_reused, 2u);
    EXPECT_EQ(s.host.bytes_reused, 2u * 2 * 32 * sizeof(int64_t));
  }
}

// Op-level recompute: GELU's output (what each block's c_proj saves) is dropped in forward and
// made again from GELU's saved input when c_proj's backward needs it.
TEST(TensorCache, OpLevelRecomputeOfGeluOutputsIsBitIdentical) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  TrainResult run = expect_op_level_recompute(gpt(), "rules:transformer.h.*.mlp.c_proj=recompute", 5,
                                              size_t(config().n_layer), "op-level recompute");
  EXPECT_LT(run.activation_peak, reference().activation_peak);
}

// Layer norm outputs (the inputs of c_attn and c_fc) dropped and made again from the saved
// layer-norm input in backward: the same kernel, the same bits.
TEST(TensorCache, OpLevelRecomputeOfLayerNormOutputsIsBitIdentical) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  TrainResult run = expect_op_level_recompute(
      gpt(), "rules:transformer.h.*.attn.c_attn=recompute;transformer.h.*.mlp.c_fc=recompute", 5,
      size_t(2 * config().n_layer), "layer-norm recompute");
  EXPECT_LT(run.activation_peak, reference().activation_peak);
}

// A GEMM's output (c_fc's, which GELU saves) dropped and made again from Linear's saved input
// and weight: the same operands and kernel, the same bits.
TEST(TensorCache, OpLevelRecomputeOfLinearOutputsIsBitIdentical) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  TrainResult run = expect_op_level_recompute(gpt(), "rules:transformer.h.*.mlp@GeluTanhBackward=recompute",
                                              5, size_t(config().n_layer), "linear recompute");
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
    const auto [x, y] = strata::testing::token_batch(2, 32);
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
