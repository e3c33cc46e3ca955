// ZeRO stage 3 on the in-process backend: ShardedParameters keeps each rank's span of every
// parameter and gathers a whole parameter only while a module scope uses it; with
// ZeroRedundancyOptimizer updating those spans, two ranks train as one process with gradient
// accumulation does, bit for bit, and checkpoint the unsharded optimizer's state.
#include <gtest/gtest.h>

#include "strata/dist/ddp.h"
#include "strata/dist/sharded_parameters.h"
#include "strata/dist/zero.h"
#include "tests/dist/dist_test_util.h"
#include "tests/dist/mlp_fixture.h"
#include "tests/dist/zero_reference.h"

using namespace strata;
using namespace strata::dist;
using namespace strata::dist::testing;

namespace {

// The parameters, gathered whole on every rank for a look, then dropped again.
std::vector<std::vector<float>> gathered_values(Mlp& model, ShardedParameters& params) {
  params.gather_all();
  std::vector<std::vector<float>> v = values_of(model.parameters());
  params.release_all();
  return v;
}

// One rank's MLP, its DDP reducing gradients to spans (cut anywhere: alignment 1) and its
// parameters kept as spans.
struct ShardedRank {
  std::shared_ptr<Mlp> model = make_mlp();
  std::unique_ptr<DistributedDataParallel> ddp;
  std::shared_ptr<ShardedParameters> params;
  explicit ShardedRank(std::shared_ptr<ProcessGroup> pg)
      : ddp(std::make_unique<DistributedDataParallel>(
            model, std::move(pg),
            DistributedDataParallelOptions{.shard_gradients = true, .shard_alignment = 1})),
        params(std::make_shared<ShardedParameters>(*ddp)) {}
};

}  // namespace

TEST(Zero3, TwoRanksTrainAsOneProcessWithGradAccum2BitForBit) {
  const Data d = make_data(2 * kSteps);
  const Reference ref = train_one_process(d, 0);
  run_ranks(2, [&](int r, std::shared_ptr<ProcessGroup> pg) {
    ShardedRank rank(pg);
    const std::shared_ptr<Mlp>& model = rank.model;
    DistributedDataParallel& ddp = *rank.ddp;
    const std::shared_ptr<ShardedParameters>& params = rank.params;
    auto opt =
        ZeroRedundancyOptimizer::adamw(groups_of(*model), optim::AdamWOptions(1e-2), pg, &ddp, params.get());
    EXPECT_EQ(opt->stage(), 3);
    // This rank holds its spans only: about half of the 440 elements.
    int64_t held = 0;
    for (size_t i = 0; i < params->size(); ++i) held += params->shard(i).numel();
    EXPECT_LE(held, 440 / 2 + 7);
    EXPECT_EQ(params->gathered(), 0u);
    for (int s = 0; s < kSteps; ++s) {
      {
        autograd::SavePolicyGuard scopes(params->wrap(nullptr));
        const Tensor loss = model->loss(d.x[size_t(2 * s + r)], d.y[size_t(2 * s + r)]);
        EXPECT_EQ(params->gathered(), 0u) << "each layer's parameters go when its scope ends";
        loss.backward();
        EXPECT_EQ(params->gathered(), 0u) << "and again in backward";
      }
      ddp.finish_gradient_sync();
      opt->step();
      EXPECT_EQ(params->gathered(), 0u);
      ASSERT_EQ(gathered_values(*model, *params), ref.params[size_t(s)]) << "step " << s;
    }
    // Forward gathers each of the 6 used parameters once a step (backward gathers what its
    // kernels read again), and each look all 7.
    EXPECT_GE(params->gathers(), int64_t(kSteps) * (6 + 7));
    const optim::TensorDict mine = opt->consolidated_state_dict();
    for (const auto& [key, value] : ref.state) {
      ASSERT_TRUE(mine.contains(key)) << key;
      EXPECT_EQ(mine.at(key).to_vector<double>(), value.to_vector<double>()) << key;
    }
  });
}

// Bytes written into a gathered parameter (a loaded checkpoint) reach this rank's span when it is
// handed back, so the next gather has them; a drop after the optimizer's update writes nothing.
TEST(Zero3, WritesIntoAGatheredParameterReachTheSpans) {
  run_ranks(2, [&](int r, std::shared_ptr<ProcessGroup> pg) {
    ShardedRank rank(pg);
    ShardedParameters& params = *rank.params;
    Tensor w = rank.model->fc2->weight;
    {
      NoGradGuard no_grad;
      w.copy_(ops::full(w.shape(), 0.25));  // gathers it, then writes every element
    }
    release_paged(w);
    EXPECT_EQ(params.gathered(), 0u);
    const ShardSpan span = rank.ddp->gradient_span(3);  // fc2.weight
    EXPECT_EQ(params.shard(3).to_vector<float>(), std::vector<float>(size_t(span.len), 0.25f));
    EXPECT_EQ(w.to_vector<float>(), std::vector<float>(size_t(w.numel()), 0.25f)) << "gathered again";
    params.release_all();
  });
}

TEST(Zero3, RefusesShardedParametersWithoutShardedGradients) {
  run_ranks(2, [&](int r, std::shared_ptr<ProcessGroup> pg) {
    auto model = make_mlp();
    DistributedDataParallel ddp(model, pg);
    EXPECT_THROW(ShardedParameters params(ddp), ValueError);
  });
}
