// The tensor cache on whole models (cache_parity_models.h: GPT, BERT and five GNN layers, with
// dropout): losses and step 0's gradients bit-identical to keeping everything under keep,
// recompute, host, NVMe and a mixed policy, with the per-tier counters showing the bytes made the
// round trip. Model-specific cases (op-level recompute, poisoning, slow drives) are in
// tensor_cache_test.cpp and bert_cache_test.cpp.
#include <gtest/gtest.h>

#include "memory/cache_parity_models.h"

using namespace strata;
using namespace strata::memory;
using namespace strata::test;

namespace {

class CacheParity : public ::testing::TestWithParam<std::string> {
 protected:
  ParityModel model = parity_model(GetParam());
  TrainResult run(const std::string& policy, size_t keep_last = 1) {
    cache_ = TensorCache::create(model.options(), parse_cache_policy(policy, keep_last));
    return model.train(cache_, model.steps, cache_.get(), nullptr);
  }
  std::shared_ptr<TensorCache> cache_;
};

using MixedCacheParity = CacheParity;

std::string name_of(const ::testing::TestParamInfo<std::string>& i) { return i.param; }

}  // namespace

TEST_P(CacheParity, KeepAllThroughTheCacheIsBitIdentical) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  const TrainResult r = run("keep");
  expect_identical(model.reference(), r, "keep");
  expect_everything_kept(r);
}

TEST_P(CacheParity, RecomputeEveryBlockIsBitIdenticalAndSavesLess) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  const TrainResult r = run("recompute");
  expect_identical(model.reference(), r, "recompute");
  for (const CacheStats& s : r.stats) {
    EXPECT_EQ(s.segments, model.blocks);
    EXPECT_EQ(s.segment_recomputes, model.blocks);  // each block re-ran once
    EXPECT_EQ(s.nvme.bytes_written + s.host.bytes_written, 0u);
  }
  EXPECT_LT(r.activation_peak, model.reference().activation_peak);
}

TEST_P(CacheParity, NvmeEveryBlockIsBitIdenticalAndEveryByteMakesTheRoundTrip) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  const SaveCounts c = model.counts();
  ASSERT_GT(c.tensors_inside, 0u);
  const TrainResult r = run("nvme", /*keep_last=*/0);
  expect_identical(model.reference(), r, "nvme");
  for (const CacheStats& s : r.stats) {
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
  EXPECT_EQ(cache_->live_records(), 0u);
}

TEST_P(CacheParity, HostEverythingIsBitIdentical) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  const SaveCounts c = model.counts();
  const TrainResult r = run("rules:*=host", 0);
  expect_identical(model.reference(), r, "host");
  EXPECT_EQ(r.stats.at(0).host.bytes_written, c.bytes_inside + c.bytes_outside);
  for (const CacheStats& s : r.stats) {
    if (model.same_saves_every_step) {
      EXPECT_EQ(s.host.bytes_written, c.bytes_inside + c.bytes_outside);
    }
    EXPECT_EQ(s.host.bytes_read + s.host.bytes_reused, s.host.bytes_written);
    EXPECT_EQ(s.nvme.bytes_written, 0u);
    EXPECT_EQ(s.fallbacks, 0u);
    EXPECT_EQ(s.forwarded, 0u);
    EXPECT_EQ(s.host_pool_used, 0u);
  }
}

// Block 0 to NVMe, block 1 recomputed as a segment, the rest to the host pool.
TEST_P(MixedCacheParity, AMixedPolicyIsBitIdentical) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  const TrainResult r = run(model.mixed_rules, 0);
  expect_identical(model.reference(), r, "mixed");
  for (const CacheStats& s : r.stats) {
    EXPECT_GT(s.nvme.bytes_written, 0u);
    EXPECT_EQ(s.nvme.bytes_read + s.nvme.bytes_reused, s.nvme.bytes_written);
    EXPECT_GT(s.host.bytes_written, 0u);
    EXPECT_EQ(s.host.bytes_read + s.host.bytes_reused, s.host.bytes_written);
    EXPECT_EQ(s.segments, 1u);
    EXPECT_EQ(s.segment_recomputes, 1u);
    EXPECT_EQ(s.fallbacks, 0u);
    EXPECT_EQ(s.forwarded, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, CacheParity,
                         ::testing::Values("gpt", "bert", "gat", "sage", "rgcn", "rgat", "hgt"), name_of);
INSTANTIATE_TEST_SUITE_P(Models, MixedCacheParity, ::testing::Values("gpt", "bert"), name_of);
