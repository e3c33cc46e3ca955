// ProcessGroup collectives on the in-process backend: results, rank-order determinism,
// argument checks, timeouts that name the missing rank, and launcher environment parsing.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <string>

#include "strata/ops.h"
#include "support/error_of.h"
#include "tests/dist/dist_test_util.h"

using namespace strata;
using namespace strata::dist;
using strata::dist::testing::run_ranks;

namespace {

// The message of the strata::Error fn() throws (a test failure when it throws none).
std::string error_of(const std::function<void()>& fn) { return strata::testing::error_of<Error>(fn); }

}  // namespace

TEST(LocalProcessGroup, AllReduceSumsInRankOrderSoEveryRankGetsTheSameBits) {
  // (1e8 + 1) - 1e8 is 0 in f32 when summed in rank order; other orders give 1.
  const std::vector<float> values = {1e8f, 1.0f, -1e8f};
  run_ranks(3, [&](int r, std::shared_ptr<ProcessGroup> pg) {
    EXPECT_EQ(pg->size(), 3);
    EXPECT_EQ(pg->rank(), r);
    Tensor t = ops::from_vector(std::vector<float>{values[size_t(r)], float(r + 1)}, {2});
    pg->all_reduce(t, ReduceOp::Sum)->wait();
    EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{0.0f, 6.0f}));
    Tensor a = ops::from_vector(std::vector<double>{double(r), 3.0 * r}, {2}, DType::f64);
    pg->all_reduce(a, ReduceOp::Avg)->wait();
    EXPECT_EQ(a.to_vector<double>(), (std::vector<double>{1.0, 3.0}));
  });
}

TEST(LocalProcessGroup, BroadcastAllGatherReduceScatterAndBarrier) {
  run_ranks(4, [&](int r, std::shared_ptr<ProcessGroup> pg) {
    Tensor b = ops::full({3}, double(10 * r));
    pg->broadcast(b, 2)->wait();
    EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{20, 20, 20}));

    Tensor in = ops::from_vector(std::vector<float>{float(r), float(r) + 0.5f}, {2});
    Tensor out = ops::zeros({8});
    pg->all_gather(out, in)->wait();
    EXPECT_EQ(out.to_vector<float>(), (std::vector<float>{0, 0.5f, 1, 1.5f, 2, 2.5f, 3, 3.5f}));

    // Rank i contributes i+1 everywhere; chunk r of the sum is 1+2+3+4 = 10, the mean 2.5.
    Tensor big = ops::full({8}, double(r + 1));
    Tensor mine = ops::zeros({2});
    pg->reduce_scatter(mine, big, ReduceOp::Sum)->wait();
    EXPECT_EQ(mine.to_vector<float>(), (std::vector<float>{10, 10}));
    pg->reduce_scatter(mine, big, ReduceOp::Avg)->wait();
    EXPECT_EQ(mine.to_vector<float>(), (std::vector<float>{2.5f, 2.5f}));
    pg->barrier_sync();
    EXPECT_DOUBLE_EQ(pg->all_reduce_scalar(r, ReduceOp::Sum), 6.0);
  });
}

TEST(LocalProcessGroup, AsyncCollectivesCompleteInCallOrder) {
  run_ranks(2, [&](int r, std::shared_ptr<ProcessGroup> pg) {
    std::vector<Tensor> ts;
    std::vector<WorkPtr> works;
    for (int i = 0; i < 5; ++i) {
      ts.push_back(ops::full({16}, double(i + r)));
      works.push_back(pg->all_reduce(ts.back(), ReduceOp::Sum));
    }
    works.back()->wait();  // the last one done implies every earlier one is
    for (int i = 0; i < 5; ++i) {
      EXPECT_TRUE(works[size_t(i)]->is_completed());
      EXPECT_EQ(ts[size_t(i)].to_vector<float>()[0], float(2 * i + 1));
    }
    EXPECT_NE(works[0]->description().find("all_reduce #1 (f32[16], sum)"), std::string::npos);
  });
}

TEST(LocalProcessGroup, ArgumentErrorsNameTheCollectiveAndShapes) {
  auto pgs = make_local_group(2);
  EXPECT_NE(error_of([&] { pgs[0]->all_gather(ops::zeros({3}), ops::zeros({2})); }).find("all_gather: output f32[3]"),
            std::string::npos);
  EXPECT_NE(error_of([&] { pgs[0]->reduce_scatter(ops::zeros({2}), ops::zeros({3})); }).find("reduce_scatter: input"),
            std::string::npos);
  EXPECT_NE(error_of([&] { pgs[0]->broadcast(ops::zeros({2}), 5); }).find("root 5"), std::string::npos);
  EXPECT_NE(error_of([&] { pgs[0]->all_reduce(ops::zeros({4, 4}).t()); }).find("must be contiguous"), std::string::npos);
}

TEST(LocalProcessGroup, TimeoutNamesTheRankThatNeverArrivedAndBreaksTheGroup) {
  std::atomic<int> failures{0};
  run_ranks(
      3,
      [&](int r, std::shared_ptr<ProcessGroup> pg) {
        pg->barrier_sync();
        if (r == 2) return;  // rank 2 "dies" after the first collective
        Tensor t = ops::ones({4});
        const std::string msg = error_of([&] { pg->all_reduce(t)->wait(); });
        EXPECT_NE(msg.find("all_reduce #2"), std::string::npos) << msg;
        EXPECT_NE(msg.find("timed out after 300 ms"), std::string::npos) << msg;
        EXPECT_NE(msg.find("rank 2 did not reach it (its last collective: #1)"), std::string::npos) << msg;
        EXPECT_EQ(msg.find("rank 1 did not"), std::string::npos) << msg;
        // Later collectives fail at once instead of waiting again.
        const std::string later = error_of([&] { pg->barrier()->wait(); });
        EXPECT_NE(later.find("broken"), std::string::npos) << later;
        ++failures;
      },
      {.timeout = std::chrono::milliseconds(300)});
  EXPECT_EQ(failures.load(), 2);
}

TEST(LocalProcessGroup, MismatchedCollectivesAreAnErrorNotGarbage) {
  run_ranks(
      2,
      [&](int r, std::shared_ptr<ProcessGroup> pg) {
        Tensor t = ops::ones({4});
        const std::string msg = error_of([&] {
          if (r == 0)
            pg->all_reduce(t)->wait();
          else
            pg->broadcast(t, 0)->wait();
        });
        EXPECT_NE(msg.find("does not match rank"), std::string::npos) << msg;
      },
      {.timeout = std::chrono::milliseconds(2000)});
}

TEST(LaunchEnv, ReadsOpenMpiThenTorchrunVariables) {
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "PMI_RANK",
                        "PMI_SIZE", "RANK", "WORLD_SIZE", "LOCAL_RANK"})
    unsetenv(v);
  EXPECT_FALSE(launch_env().launched());
  setenv("RANK", "1", 1);
  setenv("WORLD_SIZE", "4", 1);
  EXPECT_EQ(launch_env().rank, 1);
  EXPECT_EQ(launch_env().world_size, 4);
  setenv("OMPI_COMM_WORLD_RANK", "2", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
  LaunchEnv e = launch_env();
  EXPECT_EQ(e.rank, 2);
  EXPECT_EQ(e.world_size, 3);
  EXPECT_TRUE(e.launched());
  setenv("OMPI_COMM_WORLD_RANK", "3", 1);
  EXPECT_NE(error_of([] { launch_env(); }).find("OMPI_COMM_WORLD_RANK=3 is not below OMPI_COMM_WORLD_SIZE=3"),
            std::string::npos);
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "RANK", "WORLD_SIZE"}) unsetenv(v);
}
