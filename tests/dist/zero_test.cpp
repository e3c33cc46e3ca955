// ZeRO-1 on the in-process backend: sharded AdamW (and SGD with momentum) gives the same
// parameters as the unsharded optimizer bit for bit, holds only its shard of the state, and its
// consolidated state dict is the unsharded one (so checkpoints move between world sizes).
#include <gtest/gtest.h>

#include "strata/dist/zero.h"
#include "strata/ops.h"
#include "tests/dist/dist_test_util.h"

using namespace strata;
using namespace strata::dist;
using strata::dist::testing::run_ranks;

namespace {

// Parameters of awkward sizes so shard boundaries cut through them: 35 + 5 + 24 + 7 = 71.
std::vector<Tensor> make_params() {
  manual_seed(3);
  std::vector<Tensor> ps = {ops::randn({7, 5}), ops::randn({5}), ops::randn({3, 4, 2}), ops::randn({7})};
  for (Tensor& p : ps) p.set_requires_grad(true);
  return ps;
}

std::vector<Tensor> make_grads(int step) {
  manual_seed(100 + uint64_t(step));
  return {ops::randn({7, 5}), ops::randn({5}), ops::randn({3, 4, 2}), ops::randn({7})};
}

std::vector<optim::ParamGroup> groups_of(const std::vector<Tensor>& ps) {
  // Matrices decay, vectors do not (train_gpt's grouping), with different lrs too.
  return {optim::ParamGroup({ps[0], ps[2]}, optim::AdamWOptions(1e-2).weight_decay(0.1)),
          optim::ParamGroup({ps[1], ps[3]}, optim::AdamWOptions(3e-2).weight_decay(0.0))};
}

}  // namespace

TEST(ZeroRedundancyOptimizer, ShardedAdamWEqualsUnshardedAdamWBitForBit) {
  const int kSteps = 4;
  std::vector<Tensor> ref = make_params();
  optim::AdamW ref_opt(groups_of(ref), optim::AdamWOptions(1e-2).betas(0.9, 0.95));
  std::vector<std::vector<std::vector<float>>> expected;  // per step, per parameter
  for (int s = 0; s < kSteps; ++s) {
    std::vector<Tensor> g = make_grads(s);
    for (size_t i = 0; i < ref.size(); ++i) ref[i].set_grad(g[i]);
    ref_opt.param_groups()[0].set_lr(1e-2 * (s + 1));  // a schedule changing the lr
    ref_opt.step();
    expected.emplace_back();
    for (const Tensor& p : ref) expected.back().push_back(p.to_vector<float>());
  }
  std::vector<std::vector<Tensor>> grads;
  for (int s = 0; s < kSteps; ++s) grads.push_back(make_grads(s));

  for (int world : {2, 3, 4}) {
    run_ranks(world, [&](int r, std::shared_ptr<ProcessGroup> pg) {
      std::vector<Tensor> ps = make_params();
      auto opt = ZeroRedundancyOptimizer::adamw(groups_of(ps), optim::AdamWOptions(1e-2).betas(0.9, 0.95), pg);
      const auto [lo, hi] = opt->shard_range();
      const int64_t shard = (71 + world - 1) / world;
      EXPECT_EQ(lo, std::min<int64_t>(71, shard * r));
      EXPECT_EQ(hi, std::min<int64_t>(71, shard * (r + 1)));
      for (int s = 0; s < kSteps; ++s) {
        for (size_t i = 0; i < ps.size(); ++i) ps[i].set_grad(grads[size_t(s)][i].clone());
        opt->param_groups()[0].set_lr(1e-2 * (s + 1));
        opt->step();
        for (size_t i = 0; i < ps.size(); ++i)
          ASSERT_EQ(ps[i].to_vector<float>(), expected[size_t(s)][i]) << "world " << world << " step " << s << " param " << i;
      }
      // Only this rank's shard has optimizer state.
      int64_t state_numel = 0;
      for (const Tensor& p : opt->local_optimizer()->parameters())
        state_numel += opt->local_optimizer()->state_of(p)->at("exp_avg").numel();
      EXPECT_EQ(state_numel, hi - lo);
    });
  }
}

TEST(ZeroRedundancyOptimizer, ConsolidatedStateDictIsTheUnshardedOneAndResumesOnAnotherWorldSize) {
  std::vector<Tensor> ref = make_params();
  optim::AdamW ref_opt(groups_of(ref), optim::AdamWOptions(1e-2));
  for (int s = 0; s < 3; ++s) {
    std::vector<Tensor> g = make_grads(s);
    for (size_t i = 0; i < ref.size(); ++i) ref[i].set_grad(g[i]);
    ref_opt.step();
  }
  const optim::TensorDict ref_state = ref_opt.state_dict();
  // Continue the reference two steps as the target.
  std::vector<Tensor> cont;
  for (const Tensor& p : ref) cont.push_back(p.detach().clone().set_requires_grad(true));
  optim::AdamW cont_opt(groups_of(cont), optim::AdamWOptions(1e-2));
  cont_opt.load_state_dict(ref_state);
  for (int s = 3; s < 5; ++s) {
    std::vector<Tensor> g = make_grads(s);
    for (size_t i = 0; i < cont.size(); ++i) cont[i].set_grad(g[i]);
    cont_opt.step();
  }

  // World 3 runs the first three steps and consolidates.
  std::vector<optim::TensorDict> consolidated(3);
  run_ranks(3, [&](int r, std::shared_ptr<ProcessGroup> pg) {
    std::vector<Tensor> ps = make_params();
    auto opt = ZeroRedundancyOptimizer::adamw(groups_of(ps), optim::AdamWOptions(1e-2), pg);
    for (int s = 0; s < 3; ++s) {
      std::vector<Tensor> g = make_grads(s);
      for (size_t i = 0; i < ps.size(); ++i) ps[i].set_grad(g[i]);
      opt->step();
    }
    consolidated[size_t(r)] = opt->consolidated_state_dict();
  });
  for (const optim::TensorDict& c : consolidated) {
    ASSERT_EQ(c.size(), ref_state.size());
    for (const auto& [key, t] : ref_state) {
      ASSERT_TRUE(c.contains(key)) << key;
      EXPECT_EQ(c.at(key).shape(), t.shape()) << key;
      EXPECT_EQ(c.at(key).to_vector<double>(), t.to_vector<double>()) << key;
    }
  }

  // World 2 resumes from it (parameters from the reference) and matches the continuation.
  run_ranks(2, [&](int r, std::shared_ptr<ProcessGroup> pg) {
    std::vector<Tensor> ps;
    for (const Tensor& p : ref) ps.push_back(p.detach().clone().set_requires_grad(true));
    auto opt = ZeroRedundancyOptimizer::adamw(groups_of(ps), optim::AdamWOptions(1e-2), pg);
    opt->load_consolidated_state_dict(consolidated[0]);
    for (int s = 3; s < 5; ++s) {
      std::vector<Tensor> g = make_grads(s);
      for (size_t i = 0; i < ps.size(); ++i) ps[i].set_grad(g[i]);
      opt->step();
    }
    for (size_t i = 0; i < ps.size(); ++i) ASSERT_EQ(ps[i].to_vector<float>(), cont[i].to_vector<float>()) << i;
  });
}

TEST(ZeroRedundancyOptimizer, LoadRejectsMisshapedState) {
  auto pgs = make_local_group(1);
  std::vector<Tensor> ps = make_params();
  auto opt = ZeroRedundancyOptimizer::adamw(groups_of(ps), optim::AdamWOptions(1e-2), pgs[0]);
  optim::TensorDict bad;
  bad.insert("state.0.step", ops::scalar_tensor(1.0, DType::f64));
  bad.insert("state.0.exp_avg", ops::zeros({5, 7}));
  try {
    opt->load_consolidated_state_dict(bad);
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("size mismatch for \"state.0.exp_avg\": [5, 7]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("missing \"state.0.exp_avg_sq\""), std::string::npos) << msg;
  }
}

// SGD with momentum sharded the same way (train_resnet's optimizer): the same parameters bit for
// bit, a consolidated state that is SGD's own state_dict (momentum buffers, no "step"), and a
// resume from it on another world size that continues as SGD does.
TEST(ZeroRedundancyOptimizer, ShardedSgdWithMomentumEqualsUnshardedSgdAndResumes) {
  const optim::SGDOptions so = optim::SGDOptions(0.05).momentum(0.9).nesterov(true);
  auto sgd_groups = [&](const std::vector<Tensor>& ps) {
    return std::vector<optim::ParamGroup>{
        optim::ParamGroup({ps[0], ps[2]}, optim::SGDOptions(so).weight_decay(1e-2)),
        optim::ParamGroup({ps[1], ps[3]}, optim::SGDOptions(so).weight_decay(0))};
  };
  std::vector<Tensor> ref = make_params();
  optim::SGD ref_opt(sgd_groups(ref), so);
  optim::TensorDict after3;
  for (int s = 0; s < 5; ++s) {
    std::vector<Tensor> g = make_grads(s);
    for (size_t i = 0; i < ref.size(); ++i) ref[i].set_grad(g[i]);
    ref_opt.step();
    if (s == 2) after3 = ref_opt.state_dict();
  }
  std::vector<optim::TensorDict> consolidated(3);
  std::vector<std::vector<Tensor>> at3(3);
  run_ranks(3, [&](int r, std::shared_ptr<ProcessGroup> pg) {
    std::vector<Tensor> ps = make_params();
    auto opt = ZeroRedundancyOptimizer::sgd(sgd_groups(ps), so, pg);
    for (int s = 0; s < 3; ++s) {
      std::vector<Tensor> g = make_grads(s);
      for (size_t i = 0; i < ps.size(); ++i) ps[i].set_grad(g[i]);
      opt->step();
    }
    consolidated[size_t(r)] = opt->consolidated_state_dict();
    for (const Tensor& p : ps) at3[size_t(r)].push_back(p.detach().clone());
  });
  ASSERT_EQ(consolidated[0].size(), after3.size());
  for (const auto& [key, t] : after3) {
    ASSERT_TRUE(consolidated[1].contains(key)) << key;
    EXPECT_EQ(consolidated[1].at(key).to_vector<double>(), t.to_vector<double>()) << key;
  }
  run_ranks(2, [&](int, std::shared_ptr<ProcessGroup> pg) {
    std::vector<Tensor> ps;
    for (const Tensor& p : at3[0]) ps.push_back(p.clone().set_requires_grad(true));
    auto opt = ZeroRedundancyOptimizer::sgd(sgd_groups(ps), so, pg);
    opt->load_consolidated_state_dict(consolidated[2]);
    for (int s = 3; s < 5; ++s) {
      std::vector<Tensor> g = make_grads(s);
      for (size_t i = 0; i < ps.size(); ++i) ps[i].set_grad(g[i]);
      opt->step();
    }
    for (size_t i = 0; i < ps.size(); ++i)
      ASSERT_EQ(ps[i].to_vector<float>(), ref[i].to_vector<float>()) << i;
  });
}
