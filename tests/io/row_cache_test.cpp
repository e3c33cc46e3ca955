// RowCache: rows come back as they went in, the cache holds no more rows than its budget, rows
// asked for again and again stay while rows asked for once pass through, and threads finding and
// offering rows at once always get the right bytes.
#include "io/features/row_cache.h"

#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

using strata::io::RowCache;

namespace {

constexpr int64_t kRowBytes = 40;

std::vector<char> row_of(int64_t id) {
  std::vector<char> r(kRowBytes);
  for (int64_t i = 0; i < kRowBytes; ++i) r[size_t(i)] = char((id * 31 + i * 7) & 0x7f);
  return r;
}

}  // namespace

TEST(RowCache, RowsComeBackAsTheyWentInWithinTheBudget) {
  RowCache cache(100 * (kRowBytes + 9), kRowBytes);
  EXPECT_EQ(cache.capacity_rows(), 100);
  std::vector<char> out(kRowBytes);
  EXPECT_FALSE(cache.find(5, out.data()));
  cache.offer(5, row_of(5).data());
  ASSERT_TRUE(cache.find(5, out.data()));
  EXPECT_EQ(out, row_of(5));
  int64_t held = 0;
  for (int64_t id = 0; id < 1000; ++id) cache.offer(id, row_of(id).data());
  for (int64_t id = 0; id < 1000; ++id)
    if (cache.find(id, out.data())) {
      ++held;
      EXPECT_EQ(out, row_of(id)) << id;
    }
  EXPECT_LE(held, cache.capacity_rows());
  EXPECT_GT(held, 0);

  RowCache none(3 * (kRowBytes + 9), kRowBytes);  // not even one set of four
  EXPECT_EQ(none.capacity_rows(), 0);
  none.offer(1, row_of(1).data());
  EXPECT_FALSE(none.find(1, out.data()));
}

TEST(RowCache, RowsAskedForOftenStayWhileRowsAskedForOncePassThrough) {
  RowCache cache(64 * (kRowBytes + 9), kRowBytes);
  std::vector<char> out(kRowBytes);
  auto ask = [&](int64_t id) {
    if (!cache.find(id, out.data())) cache.offer(id, row_of(id).data());
  };
  for (int round = 0; round < 5; ++round)
    for (int64_t hot = 0; hot < 16; ++hot) ask(hot);         // 16 hot rows, each used five times
  for (int64_t cold = 1000; cold < 3000; ++cold) ask(cold);  // a stream of rows used once
  int64_t hot_held = 0;
  for (int64_t hot = 0; hot < 16; ++hot) hot_held += cache.find(hot, out.data()) ? 1 : 0;
  EXPECT_GE(hot_held, 14);
}

TEST(RowCache, ThreadsFindingAndOfferingAtOnceGetTheRightBytes) {
  RowCache cache(256 * (kRowBytes + 9), kRowBytes);
  std::vector<std::thread> threads;
  std::vector<int> wrong(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      std::vector<char> out(kRowBytes);
      uint64_t x = uint64_t(t) + 1;
      for (int i = 0; i < 20000; ++i) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        const auto id = int64_t((x >> 33) % 2000);
        if (cache.find(id, out.data())) {
          wrong[size_t(t)] += out != row_of(id) ? 1 : 0;
        } else {
          cache.offer(id, row_of(id).data());
        }
      }
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong, std::vector<int>(4, 0));
  EXPECT_EQ(cache.hits() + cache.misses(), 80000);
  EXPECT_GT(cache.hits(), 0);
}
