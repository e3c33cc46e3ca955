// DistributedDataParallel on the in-process backend: bucket assignment, averaged gradients
// equal to the single-process average bit for bit, all-reduces launched during backward
// (overlap), gradient accumulation without communication, parameter broadcast, unused
// parameters.
#include "strata/dist/ddp.h"

#include <gtest/gtest.h>

#include <optional>

#include "strata/autograd/saved_tensor.h"
#include "strata/nn.h"
#include "strata/ops.h"
#include "tests/dist/dist_test_util.h"
#include "tests/dist/mlp_fixture.h"

using namespace strata;
using namespace strata::dist;
using namespace strata::dist::testing;

namespace {

std::vector<std::vector<float>> grads_of(nn::Module& m) {
  std::vector<std::vector<float>> g;
  for (const Tensor& p : m.parameters()) g.push_back(p.grad().defined() ? p.grad().to_vector<float>() : std::vector<float>());
  return g;
}

}  // namespace

TEST(DdpBuckets, ReverseOrderWithTheFirstBucketCappedSeparately) {
  // Parameters of 1000 f32 (4000 bytes) each; first bucket cap 4000 B, then 8000 B.
  std::vector<Tensor> ps;
  for (int i = 0; i < 5; ++i) ps.push_back(ops::zeros({1000}));
  ps.push_back(ops::zeros({3000}));  // 12000 B: larger than the cap, a bucket of its own
  ps.push_back(ops::zeros({10}, DType::f64));
  auto b = assign_buckets(ps, 8000, 4000);
  std::vector<std::vector<int64_t>> expected = {{6}, {5}, {4, 3}, {2, 1}, {0}};
  EXPECT_EQ(b, expected);
  // Without the dtype change: parameter 6 (f32 here) shares the first bucket with nothing
  // else because 5 does not fit.
  ps[6] = ops::zeros({10});
  b = assign_buckets(ps, 8000, 4000);
  expected = {{6}, {5}, {4, 3}, {2, 1}, {0}};
  EXPECT_EQ(b, expected);
  b = assign_buckets(ps, 1 << 20, 1 << 20);
  expected = {{6, 5, 4, 3, 2, 1, 0}};
  EXPECT_EQ(b, expected);
}

TEST(DistributedDataParallel, AveragedGradientsEqualTheSingleProcessAverageBitForBit) {
  const Data d = make_data(2);
  // Reference: the gradients of each batch on one process, averaged in rank order.
  auto ref = make_mlp();
  ref->loss(d.x[0], d.y[0]).backward();
  auto g0 = grads_of(*ref);
  ref->zero_grad();
  ref->loss(d.x[1], d.y[1]).backward();
  auto g1 = grads_of(*ref);
  std::vector<std::vector<float>> expected = g0;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (g0[i].empty()) expected[i].assign(5, 0.0f);  // the unused parameter: reduced as zeros
    for (size_t j = 0; j < expected[i].size() && !g0[i].empty(); ++j) expected[i][j] = (g0[i][j] + g1[i][j]) / 2.0f;
  }

  run_ranks(2, [&](int r, std::shared_ptr<ProcessGroup> pg) {
    auto model = make_mlp();
    DistributedDataParallel ddp(model, pg, {.bucket_cap_mb = 0.001, .first_bucket_cap_mb = 0.0005});
    EXPECT_GT(ddp.bucket_assignment().size(), 2u);
    model->loss(d.x[size_t(r)], d.y[size_t(r)]).backward();
    ddp.finish_gradient_sync();
    EXPECT_EQ(grads_of(*model), expected);
    // A second step reuses the buckets.
    model->zero_grad();
    model->loss(d.x[size_t(r)], d.y[size_t(r)]).backward();
    ddp.finish_gradient_sync();
    EXPECT_EQ(grads_of(*model), expected);
  });
}

TEST(DistributedDataParallel, BucketsAreLaunchedDuringBackwardInIndexOrder) {
  const Data d = make_data(2);
  run_ranks(2, [&](int r, std::shared_ptr<ProcessGroup> pg) {
    auto model = make_mlp();
    // About one parameter per bucket.
    DistributedDataParallel ddp(model, pg, {.bucket_cap_mb = 0.0001, .first_bucket_cap_mb = 0.0001});
    const int64_t nb = int64_t(ddp.bucket_assignment().size());
    ASSERT_GE(nb, 6);
    model->loss(d.x[size_t(r)], d.y[size_t(r)]).backward();
    // Backward is over and finish_gradient_sync() has not run: the buckets whose gradients
    // all arrived are already launched, the first one before the last gradient arrived.
    std::vector<GradSyncEvent> ev = ddp.last_sync_events();
    int64_t first_launch = -1, last_ready = -1, launched = 0;
    for (size_t i = 0; i < ev.size(); ++i) {
      if (ev[i].kind == GradSyncEvent::BucketLaunched) {
        if (first_launch < 0) first_launch = int64_t(i);
        EXPECT_EQ(ev[i].index, launched) << "buckets launch in index order";
        ++launched;
      }
      if (ev[i].kind == GradSyncEvent::GradReady) last_ready = int64_t(i);
    }
    ASSERT_GE(first_launch, 0);
    EXPECT_LT(first_launch, last_ready);
    // The bucket holding the unused parameter (registered first, so in the last bucket)
    // never becomes ready in backward: it is launched by finish_gradient_sync.
    EXPECT_LT(launched, nb);
    ddp.finish_gradient_sync();
    int64_t done = 0;
    for (const GradSyncEvent& e : ddp.last_sync_events()) done += e.kind == GradSyncEvent::BucketDone;
    EXPECT_EQ(done, nb);
    EXPECT_GE(ddp.last_sync_stats().comm_seconds, 0.0);
  });
}

TEST(DistributedDataParallel, NoSyncAccumulatesLocallyThenReducesTheSum) {
  const Data d = make_data(4);
  // Reference: rank r accumulates batches r and r+2; the result is the mean over ranks.
  auto ref = make_mlp();
  std::vector<std::vector<float>> acc[2];
  for (int r = 0; r < 2; ++r) {
    ref->zero_grad();
    ref->loss(d.x[size_t(r)], d.y[size_t(r)]).backward();
    ref->loss(d.x[size_t(r + 2)], d.y[size_t(r + 2)]).backward();
    acc[r] = grads_of(*ref);
  }
  run_ranks(2, [&](int r, std::shared_ptr<ProcessGroup> pg) {
    auto model = make_mlp();
    DistributedDataParallel ddp(model, pg);
    {
      NoSyncGuard no_sync(ddp);
      model->loss(d.x[size_t(r)], d.y[size_t(r)]).backward();
      EXPECT_TRUE(ddp.last_sync_events().empty()) << "no communication while sync is off";
    }
    EXPECT_TRUE(ddp.gradient_sync());
    model->loss(d.x[size_t(r + 2)], d.y[size_t(r + 2)]).backward();
    ddp.finish_gradient_sync();
    auto g = grads_of(*model);
    ASSERT_TRUE(acc[0][0].empty());  // parameter 0 is the unused one: zeros
    EXPECT_EQ(g[0], std::vector<float>(5, 0.0f));
    for (size_t i = 1; i < g.size(); ++i)
      for (size_t j = 0; j < g[i].size(); ++j) ASSERT_EQ(g[i][j], (acc[0][i][j] + acc[1][i][j]) / 2.0f);
  });
}

TEST(DistributedDataParallel, BroadcastsRankZerosParametersAtConstruction) {
  run_ranks(3, [&](int r, std::shared_ptr<ProcessGroup> pg) {
    auto model = make_mlp();
    {
      NoGradGuard ng;
      for (Tensor p : model->parameters()) p.fill_(double(r + 1));
    }
    DistributedDataParallel ddp(model, pg);
    for (const Tensor& p : model->parameters())
      for (float v : p.to_vector<float>()) ASSERT_EQ(v, 1.0f);
  });
}

TEST(DistributedDataParallel, AParameterUsedOnOneRankOnlyIsAveragedWithZeros) {
  run_ranks(2, [&](int r, std::shared_ptr<ProcessGroup> pg) {
    auto model = make_mlp();
    DistributedDataParallel ddp(model, pg);
    Tensor loss = ops::sum(model->unused);  // d/d unused = 1 everywhere
    if (r == 0) loss.backward();
    ddp.finish_gradient_sync();
    EXPECT_EQ(model->unused.grad().to_vector<float>(), std::vector<float>(5, 0.5f));
    EXPECT_EQ(model->fc1->weight.grad().to_vector<float>(), std::vector<float>(96, 0.0f));
  });
}

namespace {

// Stands in for an offloading cache policy: every saved tensor is copied out on pack and
// the copy handed back on unpack, so backward never sees the forward's buffers.
class CopyOutPolicy final : public autograd::SavePolicy {
 public:
  autograd::Packed pack(const Tensor& t, const autograd::SaveInfo&) override {
    ++packed;
    return autograd::Packed{Tensor(), std::make_shared<Tensor>(t.detach().clone())};
  }
  Tensor unpack(autograd::Packed& p, const autograd::SaveInfo&) override {
    return *std::static_pointer_cast<Tensor>(p.handle);
  }
  int packed = 0;
};

}  // namespace

TEST(DistributedDataParallel, GradientsDoNotDependOnTheSavePolicy) {
  const Data d = make_data(2);
  std::vector<std::vector<float>> keep_all[2], copied[2];
  for (bool copy_out : {false, true}) {
    run_ranks(2, [&](int r, std::shared_ptr<ProcessGroup> pg) {
      auto policy = std::make_shared<CopyOutPolicy>();
      std::optional<autograd::SavePolicyGuard> guard;
      if (copy_out) guard.emplace(policy);
      auto model = make_mlp();
      DistributedDataParallel ddp(model, pg, {.bucket_cap_mb = 0.001, .first_bucket_cap_mb = 0.0005});
      model->loss(d.x[size_t(r)], d.y[size_t(r)]).backward();
      ddp.finish_gradient_sync();
      (copy_out ? copied : keep_all)[r] = grads_of(*model);
      if (copy_out) {
        EXPECT_GT(policy->packed, 0);
      }
    });
  }
  EXPECT_EQ(copied[0], keep_all[0]);
  EXPECT_EQ(copied[1], keep_all[1]);
  EXPECT_EQ(keep_all[0], keep_all[1]);
}
