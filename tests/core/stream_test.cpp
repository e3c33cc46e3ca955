#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "strata/core/backend.h"
#include "strata/ops.h"

using namespace strata;

namespace {
Backend& cpu() {
  ops::zeros({1});  // makes sure the built-in backends are registered
  return backend_for(kCPU);
}
}  // namespace

TEST(CpuStream, RunsTasksInOrderAndSynchronizeWaits) {
  auto s = cpu().create_stream(0);
  std::vector<int> order;
  for (int i = 0; i < 100; ++i) s->enqueue([&order, i] { order.push_back(i); });
  s->synchronize();
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[size_t(i)], i);
}

TEST(CpuStream, EventCompletesAfterTheWorkBeforeIt) {
  auto s = cpu().create_stream(0);
  auto e = cpu().create_event();
  std::atomic<bool> release{false}, ran{false};
  s->enqueue([&] {
    while (!release.load()) std::this_thread::sleep_for(std::chrono::microseconds(50));
    ran = true;
  });
  e->record(*s);
  EXPECT_FALSE(e->query());
  release = true;
  e->synchronize();
  EXPECT_TRUE(ran.load());
  EXPECT_TRUE(e->query());
}

TEST(CpuStream, OneStreamWaitsForAnothersEvent) {
  auto a = cpu().create_stream(0);
  auto b = cpu().create_stream(0);
  auto e = cpu().create_event();
  std::atomic<int> step{0};
  std::atomic<bool> go{false};
  a->enqueue([&] {
    while (!go.load()) std::this_thread::sleep_for(std::chrono::microseconds(50));
    step = 1;
  });
  e->record(*a);
  b->wait(*e);
  int seen = -1;
  b->enqueue([&] { seen = step.load(); });
  go = true;
  b->synchronize();
  EXPECT_EQ(seen, 1);
}

TEST(CpuStream, TaskExceptionsSurfaceAtSynchronize) {
  auto s = cpu().create_stream(0);
  s->enqueue([] { throw IoError("nvme write failed at offset 4096"); });
  EXPECT_THROW(s->synchronize(), IoError);
  s->enqueue([] {});
  EXPECT_NO_THROW(s->synchronize());
}
