// The tensor cache on a real model: gradients and losses bit-identical under every policy,
// with the per-tier counters proving the bytes really went to the tier and came back.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <set>

#include "support/spill_room.h"
#include "strata/models/gpt.h"
#include "strata/strata.h"

using namespace strata;
using namespace strata::memory;

namespace {

std::string spill_dir() { return strata::test::spill_dir("cache"); }

models::GPTConfig config() {
  models::GPTConfig c = models::GPTConfig::preset("tiny");
  c.dropout = 0.1;
  return c;
}

// Counts the distinct non-parameter storages saved inside blocks (what "nvme" offloads), and
// keeps every tensor: the reference KeepAll run.
class CountingPolicy final : public autograd::SavePolicy {
 public:
  autograd::Packed pack(const Tensor& t, const autograd::SaveInfo& info) override {
    if (t.defined() && !info.is_parameter && !t.is_parameter()) {
      auto& set = info.block.empty() ? outside_ : inside_;
      if (set.insert(t.storage()->id()).second) (info.block.empty() ? bytes_outside : bytes_inside) += t.storage()->nbytes();
    }
    return {t, nullptr};
  }
  Tensor unpack(autograd::Packed& p, const autograd::SaveInfo&) override { return p.tensor; }
  // Like every cache policy but keep-all: counts what the lean LM head saves. The keep-all runs
  // (fast LM head, dx and dW saved) must still match it bit for bit.
  bool prefers_low_memory(const char*) override { return true; }
  void reset() {
    inside_.clear();
    outside_.clear();
    bytes_inside = bytes_outside = 0;
  }
  size_t tensors_inside() const { return inside_.size(); }
  size_t tensors_outside() const { return outside_.size(); }
  uint64_t bytes_inside = 0, bytes_outside = 0;

 private:
  std::set<uint64_t> inside_, outside_;
};

struct TrainResult {
  std::vector<double> losses;
  std::vector<std::vector<float>> grads;  // after step 0
  std::vector<CacheStats> stats;
  int64_t activation_peak = 0;  // SavedActivation peak of step 0
};

// `steps` AdamW steps of the tiny GPT with dropout, the same data and seed every time.
TrainResult train(std::shared_ptr<autograd::SavePolicy> policy, int steps, TensorCache* cache,
          CountingPolicy* counter = nullptr) {
  manual_seed(1234);
  models::GPT model(config());
  optim::AdamW opt(model.parameters(), optim::AdamWOptions(1e-2).weight_decay(0.1));
  TrainResult run;
  for (int step = 0; step < steps; ++step) {
    Tensor x = Tensor::empty({2, 32}, DType::i64), y = Tensor::empty({2, 32}, DType::i64);
    for (int64_t i = 0; i < 64; ++i) {
      x.data<int64_t>()[i] = (i * 31 + step * 7) % 256;
      y.data<int64_t>()[i] = (i * 17 + step * 5 + 1) % 256;
    }
    if (counter) counter->reset();
    cpu_allocator().stats().reset_peaks();
    {
      std::optional<autograd::SavePolicyGuard> guard;
      if (policy) guard.emplace(policy);
      if (cache) cache->begin_step();
      Tensor loss = model.loss(x, y);
      // Read before backward: the poisoning test overwrites every stored storage still alive
      // when backward starts, the loss (which its node saves) included.
      run.losses.push_back(loss.item<double>());
      opt.zero_grad();
      loss.backward();
      if (cache) run.stats.push_back(cache->end_step());
    }
    if (step == 0) {
      run.activation_peak = cpu_allocator().stats().snapshot().peak_of(MemoryCategory::SavedActivation);
      for (const Tensor& p : model.parameters()) {
        Tensor g = p.grad();
        run.grads.emplace_back(g.data<float>(), g.data<float>() + g.numel());
      }
    }
    opt.step();
  }
  return run;
}

void expect_identical(const TrainResult& a, const TrainResult& b, const std::string& what) {
  ASSERT_EQ(a.losses.size(), b.losses.size());
  for (size_t i = 0; i < a.losses.size(); ++i)
    EXPECT_EQ(std::memcmp(&a.losses[i], &b.losses[i], sizeof(double)), 0)
        << what << ": loss of step " << i << ": " << a.losses[i] << " vs " << b.losses[i];
  ASSERT_EQ(a.grads.size(), b.grads.size());
  for (size_t p = 0; p < a.grads.size(); ++p) {
    ASSERT_EQ(a.grads[p].size(), b.grads[p].size());
    EXPECT_EQ(std::memcmp(a.grads[p].data(), b.grads[p].data(), a.grads[p].size() * sizeof(float)), 0)
        << what << ": gradient of parameter " << p << " differs";
  }
}

TensorCacheOptions options() {
  TensorCacheOptions o;
  o.min_bytes = 0;  // every tensor goes through the policy
  o.host_pool_bytes = 8 << 20;
  o.spill_dir = spill_dir();
  o.nvme_arena_bytes = 16 << 20;
  o.io_chunk_bytes = 16384;
  o.sync_stores_before_backward = true;  // deterministic counters: no forwarding
  return o;
}

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
  for (const CacheStats& s : run.stats) {
    EXPECT_EQ(s.nvme.bytes_written + s.host.bytes_written, 0u);
    EXPECT_GT(s.kept, 0u);
    EXPECT_EQ(s.fallbacks, 0u);
  }
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
    EXPECT_EQ(s.nvme.bytes_read, c.bytes_inside);
    EXPECT_EQ(s.nvme.tensors_read, c.tensors_inside);
    EXPECT_EQ(s.host.bytes_written, 0u);
    EXPECT_EQ(s.fallbacks, 0u);
    EXPECT_EQ(s.forwarded, 0u);
    EXPECT_EQ(s.nvme_arena_used, 0u) << "every extent is freed after its last use";
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
    EXPECT_EQ(s.host.bytes_read, s.host.bytes_written);
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
  auto cache = TensorCache::create(options(), parse_cache_policy("rules:h.0*=nvme;h.1*=recompute;*=host", 0));
  TrainResult run = train(cache, 5, cache.get());
  expect_identical(reference(), run, "mixed");
  for (const CacheStats& s : run.stats) {
    EXPECT_GT(s.nvme.bytes_written, 0u);
    EXPECT_EQ(s.nvme.bytes_read, s.nvme.bytes_written);
    EXPECT_GT(s.host.bytes_written, 0u);
    EXPECT_EQ(s.host.bytes_read, s.host.bytes_written);
    EXPECT_EQ(s.segments, 1u);
    EXPECT_EQ(s.fallbacks, 0u);
    EXPECT_EQ(s.forwarded, 0u);
  }
}

// Op-level recompute: GELU's output (what each block's c_proj saves) is dropped in forward and
// made again from GELU's saved input when c_proj's backward needs it.
TEST(TensorCache, OpLevelRecomputeOfGeluOutputsIsBitIdentical) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  auto cache = TensorCache::create(options(), parse_cache_policy("rules:h.*.mlp.c_proj=recompute", 0));
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

// Every stored storage still alive anywhere is overwritten with 0xFF when backward starts: if an
// op read a saved tensor other than through SavedTensor::unpack, its gradients would be NaN.
TEST(TensorCache, PoisonedDroppedStoragesChangeNothing) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  TensorCacheOptions o = options();
  o.poison_dropped = true;
  auto cache = TensorCache::create(o, parse_cache_policy("rules:h.*.mlp.c_proj=recompute;*=host", 0));
  TrainResult run = train(cache, 2, cache.get());
  TrainResult ref = reference();
  ref.losses.resize(2);
  expect_identical(ref, run, "poisoned");
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
    EXPECT_EQ(s.nvme.tensors_read, s.nvme.tensors_written);
    EXPECT_EQ(s.nvme_arena_used, 0u);
  }
}
