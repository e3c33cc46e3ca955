// Faults injected under the real tensor cache (tiers, staging, checksums, workers): a failed or
// short write keeps the tensor in memory, a failed read is retried, and a tensor truly lost
// fails backward with an error naming it, the file and the offset. Never wrong gradients.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "strata/models/gpt.h"
#include "strata/strata.h"
#include "support/spill_room.h"
#include "support/token_batch.h"

using namespace strata;
using namespace strata::memory;

namespace {

std::string spill_dir() { return strata::test::spill_dir("faults"); }

struct Outcome {
  double loss = 0;
  std::vector<std::vector<float>> grads;
  CacheStats stats;
};

// One step of the tiny GPT with dropout; throws what backward throws.
Outcome step(const std::shared_ptr<TensorCache>& cache) {
  manual_seed(99);
  models::GPTConfig c = models::GPTConfig::preset("tiny");
  c.dropout = 0.1;
  models::GPT model(c);
  const auto [x, y] = strata::testing::token_batch(2, 24, {.x_mul = 13, .y_mul = 29, .y_add = 3});
  Outcome o;
  std::optional<autograd::SavePolicyGuard> guard;
  if (cache) {
    guard.emplace(cache);
    cache->begin_step();
  }
  Tensor loss = model.loss(x, y);
  o.loss = loss.item<double>();
  loss.backward();
  if (cache) o.stats = cache->end_step();
  for (const Tensor& p : model.parameters())
    o.grads.emplace_back(p.grad().data<float>(), p.grad().data<float>() + p.grad().numel());
  return o;
}

const Outcome& reference() {
  static Outcome r = step(nullptr);
  return r;
}

void expect_reference_gradients(const Outcome& o) {
  EXPECT_EQ(o.loss, reference().loss);
  ASSERT_EQ(o.grads.size(), reference().grads.size());
  for (size_t p = 0; p < o.grads.size(); ++p)
    EXPECT_EQ(std::memcmp(o.grads[p].data(), reference().grads[p].data(), o.grads[p].size() * 4), 0)
        << "parameter " << p;
}

TensorCacheOptions spill_options(std::vector<IoFault> faults = {}, std::string dir = spill_dir(),
                                 size_t arena = 8 << 20) {
  TensorCacheOptions o;
  o.min_bytes = 0;
  o.spill_dir = std::move(dir);
  o.spill_arena_bytes = arena;
  o.io_chunk_bytes = 8192;
  o.sync_stores_before_backward = true;
  o.faults.faults = std::move(faults);
  return o;
}

std::shared_ptr<TensorCache> cache_with(std::vector<IoFault> faults, std::string dir = spill_dir(),
                                        size_t arena = 8 << 20) {
  return TensorCache::create(spill_options(std::move(faults), std::move(dir), arena), parse_cache_policy("nvme", 0));
}

bool has_warning(const CacheStats& s, const std::string& needle) {
  for (const auto& w : s.warnings)
    if (w.find(needle) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST(CacheFaults, NoSpaceOnWriteKeepsTheTensorInMemory) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  Outcome o = step(cache_with({{IoFault::Kind::NoSpace, 3, 2}}));
  expect_reference_gradients(o);
  EXPECT_GE(o.stats.fallbacks, 1u);
  EXPECT_TRUE(has_warning(o.stats, "ENOSPC"));
  EXPECT_GT(o.stats.nvme.tensors_written, 0u);
  EXPECT_EQ(o.stats.nvme.tensors_read + o.stats.nvme.tensors_reused, o.stats.nvme.tensors_written);
  EXPECT_EQ(o.stats.spill_arena_used, 0u);
}

TEST(CacheFaults, EioAndShortWritesKeepTheTensorInMemory) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  for (auto kind : {IoFault::Kind::WriteError, IoFault::Kind::ShortWrite}) {
    Outcome o = step(cache_with({{kind, 0, 1}}));
    expect_reference_gradients(o);
    EXPECT_EQ(o.stats.fallbacks, 1u);
    EXPECT_TRUE(has_warning(o.stats, kind == IoFault::Kind::WriteError ? "EIO" : "short transfer"));
  }
}

TEST(CacheFaults, AFailedOrCorruptReadIsRetriedOnce) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  for (auto kind : {IoFault::Kind::ReadError, IoFault::Kind::ShortRead, IoFault::Kind::Corrupt}) {
    Outcome o = step(cache_with({{kind, 2, 1}}));
    expect_reference_gradients(o);
    EXPECT_TRUE(has_warning(o.stats, "retrying once"));
    EXPECT_EQ(o.stats.nvme.tensors_read + o.stats.nvme.tensors_reused, o.stats.nvme.tensors_written);
  }
}

// Every read of the file comes back corrupted: the memory copy is gone and there is no recipe,
// so backward fails, naming the tensor, the file and the offset.
TEST(CacheFaults, ATensorTrulyLostFailsTheStepNamingTensorFileAndOffset) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  for (auto kind : {IoFault::Kind::Corrupt, IoFault::Kind::ReadError}) {
    auto cache = cache_with({{kind, 0, UINT64_MAX}});
    try {
      step(cache);
      FAIL() << "backward did not fail";
    } catch (const IoError& e) {
      std::string m = e.what();
      EXPECT_NE(m.find("saved tensor 'transformer.h."), std::string::npos) << m;
      EXPECT_NE(m.find(spill_dir()), std::string::npos) << m;
      EXPECT_NE(m.find("at offset"), std::string::npos) << m;
      EXPECT_NE(m.find(kind == IoFault::Kind::Corrupt ? "checksum mismatch" : "EIO"), std::string::npos) << m;
    }
  }
}

// The same unreadable file, but the offloaded tensors (GELU outputs) have a recompute recipe:
// each lost read is made again by its producer instead.
TEST(CacheFaults, ALostTensorWithARecipeIsRecomputed) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  auto cache = TensorCache::create(spill_options({{IoFault::Kind::Corrupt, 0, UINT64_MAX}}),
                                   parse_cache_policy("rules:transformer.h.*.mlp.c_proj=nvme", 0));
  Outcome out = step(cache);
  expect_reference_gradients(out);
  EXPECT_EQ(out.stats.nvme.tensors_written, 2u);
  EXPECT_EQ(out.stats.recomputed_reads, 2u);
  EXPECT_TRUE(has_warning(out.stats, "checksum mismatch"));
}

TEST(CacheFaults, AMissingSpillDirectoryTurnsTheTierOffWithAWarning) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  auto cache = cache_with({}, "/nonexistent/strata-spill");
  Outcome o = step(cache);
  expect_reference_gradients(o);
  EXPECT_GT(o.stats.fallbacks, 0u);
  EXPECT_TRUE(has_warning(o.stats, "/nonexistent/strata-spill"));
  EXPECT_EQ(o.stats.nvme.bytes_written, 0u);
}

TEST(CacheFaults, AFullArenaKeepsWhatDoesNotFit) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  Outcome o = step(cache_with({}, spill_dir(), 64 << 10));  // 64 KiB: a few tensors fit
  expect_reference_gradients(o);
  EXPECT_GT(o.stats.fallbacks, 0u);
  EXPECT_GT(o.stats.nvme.tensors_written, 0u);
  EXPECT_TRUE(has_warning(o.stats, "spill arena full"));
  EXPECT_LE(o.stats.spill_arena_peak, uint64_t(64) << 10);
}

TEST(CacheFaults, ARefusedIoUringFallsBackToThreads) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  TensorCacheOptions o = spill_options();
  o.faults.refuse_uring = true;
  auto cache = TensorCache::create(o, parse_cache_policy("nvme", 0));
  Outcome out = step(cache);
  expect_reference_gradients(out);
  EXPECT_EQ(out.stats.io_engine, "threads");
  EXPECT_GT(out.stats.nvme.tensors_read, 0u);
  EXPECT_EQ(out.stats.fallbacks, 0u);
}
