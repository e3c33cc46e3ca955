// The tensor cache's parity harness for a whole model (the models: cache_parity_models.h): a few
// optimizer steps run once with every tensor kept and counted (the reference), then under each
// cache policy; losses and step 0's gradients must match bit for bit, and the per-step cache
// counters show where the bytes went.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "strata/strata.h"
#include "support/spill_room.h"

namespace strata::test {

// Keeps every tensor and counts the distinct non-parameter storages saved inside and outside
// blocks (what the "nvme" and "host" policies should move).
class CountingPolicy final : public autograd::SavePolicy {
 public:
  autograd::Packed pack(const Tensor& t, const autograd::SaveInfo& info) override {
    if (t.defined() && !info.is_parameter && !t.is_parameter()) {
      auto& set = info.block.empty() ? outside_ : inside_;
      if (set.insert(t.storage()->id()).second)
        (info.block.empty() ? bytes_outside : bytes_inside) += t.storage()->nbytes();
    }
    return {t, nullptr};
  }
  Tensor unpack(autograd::Packed& p, const autograd::SaveInfo&) override { return p.tensor; }
  // Like every cache policy but keep-all: counts what the lean paths save (e.g. GPT's LM head).
  // The keep-all runs (fast paths, more saved) must still match it bit for bit.
  bool prefers_lean(const char*) override { return true; }
  void reset() {
    inside_.clear(), outside_.clear();
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
  std::vector<memory::CacheStats> stats;
  int64_t activation_peak = 0;  // SavedActivation peak of step 0
};

// `steps` steps of `model` with `opt`: batch = make_batch(step) outside the policy, then under
// `policy` (none: no guard) loss(batch), backward, and, with `cache`, its begin/end_step counters.
template <class MakeBatch, class Loss>
TrainResult train_steps(const std::shared_ptr<autograd::SavePolicy>& policy, int steps, memory::TensorCache* cache,
                        CountingPolicy* counter, nn::Module& model, optim::Optimizer& opt, MakeBatch make_batch,
                        Loss loss_of) {
  TrainResult run;
  for (int step = 0; step < steps; ++step) {
    auto batch = make_batch(step);
    if (counter) counter->reset();
    cpu_allocator().stats().reset_peaks();
    {
      std::optional<autograd::SavePolicyGuard> guard;
      if (policy) guard.emplace(policy);
      if (cache) cache->begin_step();
      Tensor loss = loss_of(batch);
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
        if (!g.defined()) {  // a parameter the forward never read (e.g. HGT's skip gate when in != out)
          run.grads.emplace_back();
          continue;
        }
        run.grads.emplace_back(g.data<float>(), g.data<float>() + g.numel());
      }
    }
    opt.step();
  }
  return run;
}

inline void expect_identical(const TrainResult& a, const TrainResult& b, const std::string& what) {
  ASSERT_EQ(a.losses.size(), b.losses.size());
  for (size_t i = 0; i < a.losses.size(); ++i)
    EXPECT_EQ(std::memcmp(&a.losses[i], &b.losses[i], sizeof(double)), 0)
        << what << ": loss of step " << i << ": " << a.losses[i] << " vs " << b.losses[i];
  ASSERT_EQ(a.grads.size(), b.grads.size());
  for (size_t p = 0; p < a.grads.size(); ++p) {
    ASSERT_EQ(a.grads[p].size(), b.grads[p].size());
    if (a.grads[p].empty()) continue;  // a parameter the forward never read: no gradient on either side
    EXPECT_EQ(std::memcmp(a.grads[p].data(), b.grads[p].data(), a.grads[p].size() * sizeof(float)), 0)
        << what << ": gradient of parameter " << p << " differs";
  }
}

// Every tensor through the policy, both tiers sized for a tiny model, and stores finished
// before backward (deterministic counters: no forwarding).
inline memory::TensorCacheOptions parity_cache_options(const std::string& spill_tag, uint64_t host_pool_bytes,
                                                       uint64_t spill_arena_bytes) {
  memory::TensorCacheOptions o;
  o.min_bytes = 0;
  o.host_pool_bytes = host_pool_bytes;
  o.spill_dir = spill_dir(spill_tag);
  o.spill_arena_bytes = spill_arena_bytes;
  o.io_chunk_bytes = 16384;
  o.sync_stores_before_backward = true;
  return o;
}

// The keep-all policy through the cache: nothing leaves memory, something is kept, no fallback.
inline void expect_everything_kept(const TrainResult& run) {
  for (const memory::CacheStats& s : run.stats) {
    EXPECT_EQ(s.nvme.bytes_written + s.host.bytes_written, 0u);
    EXPECT_GT(s.kept, 0u);
    EXPECT_EQ(s.fallbacks, 0u);
  }
}

}  // namespace strata::test
