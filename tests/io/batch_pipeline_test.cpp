// BatchPipeline and EpochOrders: batches in order whatever the threads, ranks' shares of the stream,
// errors in order, the bytes bound, cursors, and keyed epoch orders.
#include "strata/io/batch_pipeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>
#include <vector>

#include "strata/core/error.h"
#include "support/error_of.h"

namespace strata::io {
namespace {

using Made = std::pair<int64_t, int64_t>;  // (epoch, index)

BatchPipeline::Make record() {
  return [](int64_t epoch, int64_t index) { return std::any(Made{epoch, index}); };
}

std::vector<Made> take(BatchPipeline& p, int n) {
  std::vector<Made> out;
  for (int i = 0; i < n; ++i) out.push_back(p.next<Made>());
  return out;
}

TEST(BatchPipeline, RanksTakeEveryWorldSizethBatchInOrderWhateverTheThreads) {
  for (int workers : {0, 1, 3}) {
    BatchPipeline rank1("TestLoader", {.num_workers = workers, .prefetch = 2, .rank = 1, .world_size = 3}, 4,
                        record());
    EXPECT_EQ(take(rank1, 4), (std::vector<Made>{{0, 1}, {1, 0}, {1, 3}, {2, 2}})) << workers << " workers";
    EXPECT_EQ(rank1.cursor().epoch, 3) << "the next step starts at global batch 12";
    EXPECT_EQ(rank1.cursor().sample, 0);
  }
}

TEST(BatchPipeline, ACursorResumesTheStreamAtItsBatch) {
  BatchPipeline p("TestLoader", {.num_workers = 2}, 5, record());
  take(p, 3);
  const DataCursor c = p.cursor();
  EXPECT_EQ(c.epoch, 0);
  EXPECT_EQ(c.sample, 3);
  const std::vector<Made> rest = take(p, 4);
  BatchPipeline q("TestLoader", {.num_workers = 0}, 5, record());
  q.set_cursor(c);
  EXPECT_EQ(take(q, 4), rest);
  EXPECT_EQ(testing::error_of<ValueError>([&] { q.set_cursor({.epoch = 0, .sample = 5}); }),
            "TestLoader::set_cursor: epoch 0 batch 5 is outside the 5 batches of an epoch");
}

TEST(BatchPipeline, AnErrorReachesNextInItsTurnAndTheStreamGoesOn) {
  BatchPipeline p("TestLoader", {.num_workers = 3, .prefetch = 4}, 10, [](int64_t epoch, int64_t index) {
    STRATA_CHECK(index != 2, IoError, "batch ", index, " is corrupt");
    return std::any(Made{epoch, index});
  });
  EXPECT_EQ(p.next<Made>(), Made(0, 0));
  EXPECT_EQ(p.next<Made>(), Made(0, 1));
  EXPECT_EQ(testing::error_of<IoError>([&] { p.next<Made>(); }), "batch 2 is corrupt");
  EXPECT_EQ(p.next<Made>(), Made(0, 3));
}

TEST(BatchPipeline, WorkersHoldNoMoreThanTheBytesBoundBeyondTheBatchNextWaitsFor) {
  // Four workers that start together must not each see room for one more batch: a batch in the
  // making counts as large as the largest made so far. Batches take a millisecond to make, so
  // that workers overlap; the held bytes are watched from the start.
  auto slow = [](int64_t epoch, int64_t index) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return std::any(Made{epoch, index});
  };
  BatchPipeline p("TestLoader", {.num_workers = 4, .prefetch = 8, .prefetch_bytes = 250}, 100, slow,
                  [](const std::any&) { return int64_t(100); });
  int64_t most = 0;
  for (int i = 0; i < 60; ++i) {
    most = std::max(most, p.held_bytes());
    if (i % 10 == 9) p.next<Made>();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_LE(most, 300) << "a worker starts a batch only while the held bytes stay under 250";
  EXPECT_GE(most, 200) << "the workers prefetch up to the bound";
  EXPECT_EQ(p.held_bytes(), 100 * p.held_batches());
}

TEST(BatchPipeline, OptionsOutOfRangeAreRefusedNamingTheLoader) {
  using testing::error_of;
  EXPECT_EQ(error_of<ValueError>([] { BatchPipeline::check("L", {.num_workers = 257}); }),
            "L: num_workers 257 is not in [0, 256]");
  EXPECT_EQ(error_of<ValueError>([] { BatchPipeline::check("L", {.prefetch = 0}); }),
            "L: prefetch 0 must be at least 1");
  EXPECT_EQ(error_of<ValueError>([] { BatchPipeline::check("L", {.rank = 2, .world_size = 2}); }),
            "L: rank 2 of world size 2");
}

TEST(EpochOrders, AShuffledEpochOrderDependsOnlyOnSeedAndEpoch) {
  std::vector<int64_t> items{10, 11, 12, 13, 14, 15, 16, 17};
  EpochOrders a(items, true, 7), b(items, true, 7), c(items, true, 8), plain(items, false, 7);
  EXPECT_EQ(*a.of(3), *b.of(3));
  EXPECT_NE(*a.of(3), *a.of(4));
  EXPECT_NE(*a.of(3), *c.of(3));
  EXPECT_EQ(*plain.of(5), items);
  std::vector<int64_t> sorted = *a.of(3);
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, items) << "a permutation of the items";
  b.of(9);
  EXPECT_EQ(*b.of(3), *a.of(3)) << "an epoch asked again after it was dropped is drawn again, the same";
}

}  // namespace
}  // namespace strata::io
