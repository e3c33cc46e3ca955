// ZeRO stage 2 on the in-process backend: DistributedDataParallel with shard_gradients leaves each
// rank its span of every averaged gradient (the all-reduced average's, bit for bit) and no full
// gradient; ZeroRedundancyOptimizer over those spans trains as one process with gradient
// accumulation does, clips by the norm over every rank's spans, and checkpoints the unsharded
// optimizer's state.
#include <gtest/gtest.h>

#include <cmath>

#include "strata/dist/ddp.h"
#include "strata/dist/zero.h"
#include "strata/optim/clip_grad.h"
#include "tests/dist/dist_test_util.h"
#include "tests/dist/mlp_fixture.h"
#include "tests/dist/zero_reference.h"

using namespace strata;
using namespace strata::dist;
using namespace strata::dist::testing;

TEST(Zero2, GradientSpansAreTheAllReducedAverageAndNoFullGradientIsKept) {
  for (int world : {2, 3}) {
    SCOPED_TRACE("world " + std::to_string(world));
    const Data d = make_data(world);
    std::vector<std::vector<std::vector<float>>> averaged{size_t(world)};
    run_ranks(world, [&](int r, std::shared_ptr<ProcessGroup> pg) {
      auto model = make_mlp();
      DistributedDataParallel ddp(model, pg);
      model->loss(d.x[size_t(r)], d.y[size_t(r)]).backward();
      ddp.finish_gradient_sync();
      for (const Tensor& p : model->parameters()) averaged[size_t(r)].push_back(p.grad().to_vector<float>());
    });
    run_ranks(world, [&](int r, std::shared_ptr<ProcessGroup> pg) {
      auto model = make_mlp();
      DistributedDataParallel ddp(model, pg, {.shard_gradients = true, .shard_alignment = 1});
      ASSERT_TRUE(ddp.shards_gradients());
      model->loss(d.x[size_t(r)], d.y[size_t(r)]).backward();
      // Launched during backward, in reverse parameter order, before the last gradient arrived.
      int64_t launches = 0, first_launch = -1, last_ready = -1;
      const std::vector<GradSyncEvent> ev = ddp.last_sync_events();
      const auto n = int64_t(ddp.parameters().size());
      for (size_t i = 0; i < ev.size(); ++i) {
        if (ev[i].kind == GradSyncEvent::BucketLaunched) {
          EXPECT_EQ(ev[i].index, n - 1 - launches++);
          if (first_launch < 0) first_launch = int64_t(i);
        }
        if (ev[i].kind == GradSyncEvent::GradReady) last_ready = int64_t(i);
      }
      ASSERT_GE(first_launch, 0);
      EXPECT_LT(first_launch, last_ready);
      ddp.finish_gradient_sync();
      int64_t held = 0;
      for (int64_t i = 0; i < n; ++i) {
        const Tensor& p = ddp.parameters()[size_t(i)];
        EXPECT_FALSE(p.grad().defined()) << "parameter " << i << " kept its full gradient";
        const ShardSpan span = shard_span(p.numel(), r, world);
        const std::vector<float> want(averaged[size_t(r)][size_t(i)].begin() + span.begin,
                                      averaged[size_t(r)][size_t(i)].begin() + span.begin + span.len);
        EXPECT_EQ(ddp.gradient_shard(i).to_vector<float>(), want) << "parameter " << i;
        held += ddp.gradient_shard(i).numel();
      }
      // 96 + 16 + 256 + 16 + 48 + 3 + 5 = 440 elements in all.
      EXPECT_LE(held, 440 / world + n);
    });
  }
}

// Past bucket_cap_mb of gradients in flight, backward waits for the oldest collective and lets its
// gradient go: with a bound below one parameter's bytes, each is released before the next launches.
TEST(Zero2, GradientsInFlightStayWithinTheBucketCap) {
  const Data d = make_data(2);
  run_ranks(2, [&](int r, std::shared_ptr<ProcessGroup> pg) {
    auto model = make_mlp();
    DistributedDataParallel ddp(model, pg,
                                {.bucket_cap_mb = 1e-6, .shard_gradients = true, .shard_alignment = 1});
    model->loss(d.x[size_t(r)], d.y[size_t(r)]).backward();
    int64_t launched = 0, done = 0;
    for (const GradSyncEvent& e : ddp.last_sync_events()) {
      if (e.kind == GradSyncEvent::BucketLaunched) {
        EXPECT_EQ(done, launched) << "a gradient launched while another was still held";
        ++launched;
      }
      done += e.kind == GradSyncEvent::BucketDone;
    }
    EXPECT_GE(launched, 6);
    EXPECT_EQ(done, launched);
    ddp.finish_gradient_sync();
  });
}

TEST(Zero2, ShardSpansCoverEveryElementOnceFromAlignedStarts) {
  for (int64_t align : {1, 4, 16384})
    for (int64_t numel : {0, 1, 5, 7, 96, 40000})
      for (int world : {1, 2, 3, 4}) {
        int64_t next = 0;
        for (int r = 0; r < world; ++r) {
          const ShardSpan s = shard_span(numel, r, world, align);
          EXPECT_EQ(s.begin, next) << numel << " over " << world << " aligned to " << align;
          if (s.len > 0) {
            EXPECT_EQ(s.begin % align, 0);
          }
          EXPECT_GE(s.chunk * world, numel);
          EXPECT_LT(s.chunk, (numel + world - 1) / world + align);
          EXPECT_GE(s.len, 0);
          EXPECT_LE(s.len, s.chunk);
          next = s.begin + s.len;
        }
        EXPECT_EQ(next, numel);
      }
  EXPECT_EQ(shard_span(40000, 1, 2, 16384).begin, 32768);
  EXPECT_EQ(shard_span(40000, 3, 4, 16384).len, 0);
}

TEST(Zero2, TwoRanksTrainAsOneProcessWithGradAccum2BitForBit) {
  const Data d = make_data(2 * kSteps);
  const Reference ref = train_one_process(d, 0);
  run_ranks(2, [&](int r, std::shared_ptr<ProcessGroup> pg) {
    auto model = make_mlp();
    DistributedDataParallel ddp(model, pg, {.shard_gradients = true, .shard_alignment = 1});
    auto opt = ZeroRedundancyOptimizer::adamw(groups_of(*model), optim::AdamWOptions(1e-2), pg, &ddp);
    EXPECT_EQ(opt->stage(), 2);
    for (int s = 0; s < kSteps; ++s) {
      model->loss(d.x[size_t(2 * s + r)], d.y[size_t(2 * s + r)]).backward();
      ddp.finish_gradient_sync();
      opt->step();
      ASSERT_EQ(values_of(model->parameters()), ref.params[size_t(s)]) << "step " << s;
    }
    // This rank's optimizer state is its spans: about half of the 440 elements.
    int64_t state = 0;
    for (const Tensor& p : opt->local_optimizer()->parameters())
      state += opt->local_optimizer()->state_of(p)->at("exp_avg").numel();
    EXPECT_LE(state, 440 / 2 + 7);
    // The checkpointed state is the unsharded optimizer's (the unused parameter, which got no
    // gradient in one process, has state only here).
    const optim::TensorDict mine = opt->consolidated_state_dict();
    for (const auto& [key, value] : ref.state) {
      ASSERT_TRUE(mine.contains(key)) << key;
      EXPECT_EQ(mine.at(key).to_vector<double>(), value.to_vector<double>()) << key;
    }
  });
}

// Spans that start on clip_grad_norm_'s blocks (the default alignment): the norm and the clipped
// update are one process's bit for bit. A layer of 24,000 weights is cut at element 16,384.
TEST(Zero2, ClippingOverAlignedSpansIsOneProcesssBitForBit) {
  const double max_norm = 0.05;  // below every step's norm: each step clips
  const Data d = make_data(2 * kSteps);
  const Reference ref = train_one_process(d, max_norm, kWide);
  for (double n : ref.norms) ASSERT_GT(n, max_norm);
  run_ranks(2, [&](int r, std::shared_ptr<ProcessGroup> pg) {
    auto model = make_mlp(kWide);
    DistributedDataParallel ddp(model, pg, {.shard_gradients = true});
    ASSERT_EQ(ddp.gradient_span(1).begin, r == 0 ? 0 : 16384) << "fc1.weight";
    auto opt = ZeroRedundancyOptimizer::adamw(groups_of(*model), optim::AdamWOptions(1e-2), pg, &ddp);
    for (int s = 0; s < kSteps; ++s) {
      model->loss(d.x[size_t(2 * s + r)], d.y[size_t(2 * s + r)]).backward();
      ddp.finish_gradient_sync();
      EXPECT_EQ(opt->clip_grad_norm_(max_norm), ref.norms[size_t(s)]) << "step " << s;
      opt->step();
      ASSERT_EQ(values_of(model->parameters()), ref.params[size_t(s)]) << "step " << s;
    }
  });
}

// Spans cut anywhere (alignment 1): the norm sums the pieces of a block in another order, equal
// to rounding, and so are the parameters.
TEST(Zero2, ClippingOverUnalignedSpansIsOneProcesssToRounding) {
  const Data d = make_data(2 * kSteps);
  const double max_norm = 0.05;
  const Reference ref = train_one_process(d, max_norm);
  for (double n : ref.norms) ASSERT_GT(n, max_norm);
  run_ranks(2, [&](int r, std::shared_ptr<ProcessGroup> pg) {
    auto model = make_mlp();
    DistributedDataParallel ddp(model, pg, {.shard_gradients = true, .shard_alignment = 1});
    auto opt = ZeroRedundancyOptimizer::adamw(groups_of(*model), optim::AdamWOptions(1e-2), pg, &ddp);
    for (int s = 0; s < kSteps; ++s) {
      model->loss(d.x[size_t(2 * s + r)], d.y[size_t(2 * s + r)]).backward();
      ddp.finish_gradient_sync();
      EXPECT_NEAR(opt->clip_grad_norm_(max_norm), ref.norms[size_t(s)], 1e-6 * ref.norms[size_t(s)]);
      opt->step();
      const auto got = values_of(model->parameters());
      for (size_t i = 0; i < got.size(); ++i)
        for (size_t j = 0; j < got[i].size(); ++j)
          ASSERT_NEAR(got[i][j], ref.params[size_t(s)][i][j], 1e-6) << "step " << s << " parameter " << i;
    }
  });
}

TEST(Zero2, RefusesAnOptimizerOverGradientsItDoesNotShard) {
  run_ranks(2, [&](int, std::shared_ptr<ProcessGroup> pg) {
    auto model = make_mlp();
    DistributedDataParallel whole(model, pg);
    EXPECT_THROW(ZeroRedundancyOptimizer::adamw(groups_of(*model), optim::AdamWOptions(1e-2), pg, &whole),
                 ValueError);
    EXPECT_THROW(whole.gradient_shard(0), ValueError);
  });
}
