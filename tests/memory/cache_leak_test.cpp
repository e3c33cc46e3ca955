// 200 steps of NVMe offload with a different tensor size every step leave nothing behind: no
// extent, no record, no saved-activation byte, no file descriptor, no thread.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "strata/strata.h"
#include "support/block_chain.h"
#include "support/random_parameters.h"
#include "support/spill_room.h"

using namespace strata;
using namespace strata::memory;

namespace {

size_t count_entries(const char* dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

// Threads of this process, without the kernel's io_uring workers (iou-wrk-*), which come and
// go on their own.
size_t count_threads() {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(e.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (name.rfind("iou-", 0) != 0) ++n;
  }
  return n;
}

}  // namespace

TEST(CacheLeaks, TwoHundredStepsOfRandomSizesLeaveNothingBehind) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  auto dir = std::filesystem::temp_directory_path() / ("strata_leak_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  manual_seed(5);
  std::vector<Tensor> w = strata::testing::random_parameters(4, {48, 48}, 0.2);
  TensorCacheOptions o;
  o.min_bytes = 4096;
  o.spill_dir = dir.string();
  o.spill_arena_bytes = 16 << 20;
  o.host_pool_bytes = 4 << 20;
  o.io_chunk_bytes = 64 << 10;
  o.sync_stores_before_backward = true;  // every stored byte is read back: no forwarding
  auto cache = TensorCache::create(o, parse_cache_policy("rules:b3*=host;b*=nvme;*=keep", 0));
  ASSERT_TRUE(cache);
  // Counted after the first step: OpenMP starts its thread pool on first use.
  size_t fds = 0, threads = 0;
  int64_t saved_before = 0;
  uint64_t written = 0, read = 0;
  uint32_t lcg = 7;
  for (int step = 0; step < 200; ++step) {
    lcg = lcg * 1664525u + 1013904223u;
    const int64_t rows = 22 + int64_t(lcg >> 20) % 300;  // 4 KiB .. 62 KiB per activation
    Tensor x = ops::randn({rows, 48});
    autograd::SavePolicyGuard guard(cache);
    cache->begin_step();
    Tensor loss = strata::testing::block_chain(x, w);
    for (auto& p : w) p.set_grad(Tensor());
    loss.backward();
    CacheStats s = cache->end_step();
    ASSERT_TRUE(std::isfinite(loss.item<double>()));
    ASSERT_EQ(s.fallbacks, 0u) << "step " << step;
    ASSERT_EQ(s.spill_arena_used, 0u) << "step " << step;
    ASSERT_EQ(s.host_pool_used, 0u) << "step " << step;
    ASSERT_EQ(cache->live_records(), 0u) << "step " << step;
    written += s.nvme.bytes_written;
    read += s.nvme.bytes_read + s.nvme.bytes_reused;
    if (step == 0) {
      fds = count_entries("/proc/self/fd");
      threads = count_threads();
      saved_before = cpu_allocator().stats().snapshot().current_of(MemoryCategory::SavedActivation);
    }
  }
  EXPECT_GT(written, uint64_t(1) << 20);
  EXPECT_EQ(read, written);
  EXPECT_EQ(cpu_allocator().stats().snapshot().current_of(MemoryCategory::SavedActivation), saved_before);
  EXPECT_EQ(count_entries("/proc/self/fd"), fds);
  EXPECT_EQ(count_threads(), threads);
  cache.reset();
  EXPECT_TRUE(std::filesystem::is_empty(dir)) << "the spill file must leave no name behind";
  EXPECT_LT(count_threads(), threads) << "the cache's threads end with it";
}
