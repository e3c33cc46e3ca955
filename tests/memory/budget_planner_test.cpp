// The trainers' greedy budget planner: hand-computed profiles, and a measured budget held for
// real on a GPT step.
#include "strata/memory/planner/budget_planner.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "strata/models/gpt.h"
#include "strata/strata.h"
#include "support/spill_room.h"
#include "support/token_batch.h"

using namespace strata;
using namespace strata::memory;
using strata::memory::planner::BudgetInputs;
using strata::memory::planner::BudgetPlan;
using strata::memory::planner::plan_for_budget;

namespace {

// Hand-made profile: 4 blocks h.0 .. h.3 keeping 100 bytes each (inputs 10), 50 bytes saved
// outside blocks, 1000 bytes of everything else, no margin. Keep-all: 1000 + 50 + 400 = 1450.
BudgetInputs four_blocks() {
  BudgetInputs in;
  in.profile.groups.push_back({"", 0, 50, 0, 0, false});
  for (int i = 0; i < 4; ++i) in.profile.groups.push_back({"h." + std::to_string(i), 1, 10, 10, 100, true});
  in.activation_peak = 150;
  in.step_peak = 1150;  // other = 1000
  in.margin = 0;
  return in;
}

}  // namespace

TEST(BudgetPlanner, GreedySolverOnAHandComputedProfile) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  BudgetInputs in = four_blocks();
  // Recompute only: blocks 0, 1 -> 1000 + 50 + 100 + 100 + 10 + 10 + max 100 = 1370.
  BudgetPlan b = plan_for_budget(in, 1380);
  EXPECT_TRUE(b.feasible) << b.explanation;
  EXPECT_EQ(b.plan.blocks.at("h.0"), CacheAction::Recompute);
  EXPECT_EQ(b.plan.blocks.at("h.1"), CacheAction::Recompute);
  EXPECT_EQ(b.plan.blocks.at("h.2"), CacheAction::Keep);
  EXPECT_EQ(b.plan.predicted_step_peak, 1370u);
  // Everything recomputed: 1000 + 50 + 40 + 100 = 1190 is the floor.
  BudgetPlan tight = plan_for_budget(in, 1100);
  EXPECT_FALSE(tight.feasible);
  EXPECT_EQ(tight.min_step_peak, 1190u);
  EXPECT_NE(tight.explanation.find("cannot be met"), std::string::npos) << tight.explanation;
  // With NVMe (prefetch window of 2 blocks): blocks 0..2 offloaded -> 1000 + 50 + 100 + 200 = 1350.
  in.nvme = true;
  BudgetPlan nv = plan_for_budget(in, 1360);
  EXPECT_TRUE(nv.feasible) << nv.explanation;
  EXPECT_EQ(nv.plan.blocks.at("h.2"), CacheAction::Nvme);
  EXPECT_EQ(nv.plan.blocks.at("h.3"), CacheAction::Keep);
  EXPECT_EQ(nv.plan.predicted_step_peak, 1350u);
}

// An NVMe arena smaller than the blocks the budget wants moved: the greedy sends blocks to NVMe
// while their bytes fit the arena (less 1% for the 4 KiB rounding of each store) and recomputes
// the rest, instead of planning stores the arena would refuse.
TEST(BudgetPlanner, NvmeBlocksFitTheArenaAndTheRestAreRecomputed) {
  BudgetInputs in = four_blocks();
  in.nvme = true;
  in.prefetch_blocks = 0;  // a window of one block: 1000 + 50 + kept + the largest moved block
  // Unbounded: blocks 0..2 to NVMe -> 1000 + 50 + 100 (h.3) + 100 = 1250.
  BudgetPlan free = plan_for_budget(in, 1250);
  ASSERT_TRUE(free.feasible) << free.explanation;
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(free.plan.blocks.at("h." + std::to_string(i)), CacheAction::Nvme) << i;
  // An arena of 202 bytes holds two blocks (202 - 2 = 200): h.2 is recomputed instead (keeping its
  // 10 input bytes): 1000 + 50 + 10 + 100 + max(100 recompute, 100 window) = 1260.
  in.nvme_capacity = 202;
  BudgetPlan bounded = plan_for_budget(in, 1260);
  ASSERT_TRUE(bounded.feasible) << bounded.explanation;
  EXPECT_EQ(bounded.plan.blocks.at("h.0"), CacheAction::Nvme);
  EXPECT_EQ(bounded.plan.blocks.at("h.1"), CacheAction::Nvme);
  EXPECT_EQ(bounded.plan.blocks.at("h.2"), CacheAction::Recompute);
  EXPECT_EQ(bounded.plan.blocks.at("h.3"), CacheAction::Keep);
  EXPECT_EQ(bounded.plan.predicted_step_peak, 1260u);
  EXPECT_NE(bounded.explanation.find("2 of 4 blocks to NVMe, 1 of 4 blocks to recompute"), std::string::npos)
      << bounded.explanation;
  // An arena of 201 bytes holds one block only (201 - 2 = 199).
  in.nvme_capacity = 201;
  BudgetPlan one = plan_for_budget(in, 1260);
  EXPECT_EQ(one.plan.blocks.at("h.1"), CacheAction::Recompute) << one.explanation;
}

// End to end on the tiny GPT: profile one step with every block recomputed, plan for a budget
// between that step's peak and the keep-all peak, and the planned steps stay under it, with the
// same gradients.
TEST(BudgetPlanner, AMeasuredBudgetIsHeldForReal) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  models::GPTConfig c = models::GPTConfig::preset("tiny");
  c.dropout = 0.1;
  c.n_layer = 4;
  manual_seed(3);
  models::GPT model(c);
  const auto [x, y] = strata::testing::token_batch(4, 64, {.x_mul = 7, .y_mul = 11});
  TensorCacheOptions o;
  o.min_bytes = 0;
  auto cache = TensorCache::create(o, parse_cache_policy("keep"));
  auto run_step = [&](std::vector<float>* grad0) {
    autograd::SavePolicyGuard guard(cache);
    model.zero_grad();
    cpu_allocator().stats().reset_peaks();
    cache->begin_step();
    Tensor loss = model.loss(x, y);
    loss.backward();
    cache->end_step();
    if (grad0) {
      Tensor g = model.parameters()[0].grad();
      grad0->assign(g.data<float>(), g.data<float>() + g.numel());
    }
    return cpu_allocator().stats().snapshot();
  };
  std::vector<float> g_keep, g_plan;
  // Same RNG state for every step, so dropout masks and gradients compare.
  RngState rng = current_generator().state();
  MemorySnapshot keep = run_step(&g_keep);
  current_generator().set_state(rng);
  cache->set_policy(parse_cache_policy("recompute"));
  MemorySnapshot prof = run_step(nullptr);
  BudgetInputs in;
  in.profile = cache->last_profile();
  in.step_peak = uint64_t(prof.total_peak);
  in.activation_peak = uint64_t(prof.peak_of(MemoryCategory::SavedActivation));
  const uint64_t budget = (uint64_t(prof.total_peak) + uint64_t(keep.total_peak)) / 2;
  BudgetPlan b = plan_for_budget(in, budget);
  ASSERT_TRUE(b.feasible) << b.explanation;
  cache->set_policy(make_plan_policy(b.plan));
  current_generator().set_state(rng);
  MemorySnapshot planned = run_step(&g_plan);
  EXPECT_LE(uint64_t(planned.total_peak), budget) << b.explanation;
  EXPECT_LT(planned.total_peak, keep.total_peak);
  EXPECT_EQ(g_plan, g_keep);
  // A budget under the floor is refused with the reason.
  BudgetPlan no = plan_for_budget(in, uint64_t(prof.total_peak) / 2);
  EXPECT_FALSE(no.feasible);
}
