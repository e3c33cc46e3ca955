// The planner on a traced step: its plan holds the budget in the simulator and is at least as fast
// as every baseline that also holds it; plans convert to the cache's Plan and back; an impossible
// budget is explained.
#include "strata/memory/planner/planner.h"

#include <gtest/gtest.h>

#include "strata/memory/planner/tracer.h"
#include "strata/strata.h"
#include "support/random_parameters.h"
#include "support/test_hardware.h"

using namespace strata;
using namespace strata::memory;
using namespace strata::memory::planner;

namespace {

// Six blocks: matmul, GELU, a product that saves the GELU output (op-level recomputable), dropout.
StepTrace traced_chain() {
  manual_seed(11);
  std::vector<Tensor> w = strata::testing::random_parameters(6, {96, 96}, 0.1);
  Tensor x = ops::randn({768, 96});
  auto tracer = std::make_shared<StepTracer>();
  {
    OpObserverGuard obs(tracer.get());
    autograd::SavePolicyGuard save(tracer);
    tracer->begin();
    Tensor h = x;
    for (size_t i = 0; i < w.size(); ++i) {
      autograd::ScopeGuard block("h." + std::to_string(i), /*is_block=*/true);
      h = ops::gelu(ops::matmul(h, w[i]), "tanh");
      h = ops::dropout(ops::mul(h, h), 0.1);
    }
    ops::sum(h).backward();
  }
  return tracer->finish("chain");
}

HardwareProfile cpu() { return strata::testing::test_cpu(5e9, 1.5e9, 1.2e9); }

// traced_chain with fixed op times, GELU outputs that cost 1 ms each to make again, and each
// matmul output (GELU's saved input) recomputable too, at `ratio` times a GELU output's cost per
// byte; `gemm_outputs` counts those.
StepTrace chain_with_recomputable_matmuls(double ratio, size_t* gemm_outputs) {
  StepTrace t = traced_chain();
  for (TraceOp& o : t.ops) o.seconds = 1e-3;
  double gelu_per_byte = 0;
  for (TraceTensor& x : t.tensors)
    if (x.op_recomputable && !x.block_input) {
      x.recompute_seconds = 1e-3;
      gelu_per_byte = 1e-3 / double(x.bytes);
    }
  *gemm_outputs = 0;
  for (TraceTensor& x : t.tensors)
    if (gelu_per_byte > 0 && !x.op_recomputable && !x.block_input && x.block >= 0 &&
        t.ops[size_t(x.producer)].kind.find("matmul") != std::string::npos) {
      x.op_recomputable = true;
      x.recompute_seconds = ratio * gelu_per_byte * double(x.bytes);
      ++*gemm_outputs;
    }
  return t;
}

}  // namespace

TEST(Planner, HoldsTheBudgetAndBeatsEveryBaselineThatAlsoHoldsIt) {
  const StepTrace t = traced_chain();
  const HardwareProfile hw = cpu();
  const uint64_t keep_peak = simulate(t, SimPlan::keep_all(t), hw).activation_peak;
  for (double fraction : {0.9, 0.6, 0.4}) {
    const uint64_t budget = uint64_t(double(keep_peak) * fraction);
    PlannerResult r = plan_step(t, hw, budget);
    ASSERT_TRUE(r.plan.fits) << fraction << ": " << r.explanation;
    EXPECT_LE(r.plan.predicted.activation_and_pool_peak, budget) << "on a CPU the host pool is the same RAM";
    ASSERT_EQ(r.baselines.size(), 6u);
    for (const PolicyResult& b : r.baselines) {
      EXPECT_EQ(b.fits, b.predicted.activation_and_pool_peak <= budget) << b.name;
      if (b.fits) { EXPECT_LE(r.plan.predicted.step_seconds, b.predicted.step_seconds + 1e-12) << b.name << " at " << fraction; }
    }
    EXPECT_FALSE(r.baselines[0].fits) << "keep-all cannot hold a budget below its own peak";
    EXPECT_NE(r.explanation.find("held"), std::string::npos) << r.explanation;
  }
}

TEST(Planner, PlansConvertToTheCachesPlanAndBack) {
  const StepTrace t = traced_chain();
  const HardwareProfile hw = cpu();
  ChainProblem problem = chain_problem(t, hw, 1ull << 40, {});
  // One block per kind of option: keep, selective, recompute, host, nvme, keep.
  std::vector<int> choice(t.blocks.size(), 0);
  for (size_t b = 0; b + 1 < t.blocks.size(); ++b) choice[b] = int(b % problem.blocks[b].options.size());
  SimPlan sp = sim_plan_for(t, problem, choice);
  Plan plan = cache_plan_for(t, sp);
  SimPlan back = sim_plan_from(t, plan);
  EXPECT_EQ(back.segments, sp.segments);
  EXPECT_EQ(back.tensors, sp.tensors);
  // The plan survives the cache's text format too.
  SimPlan again = sim_plan_from(t, plan_from_text(plan_to_text(plan)));
  EXPECT_EQ(again.tensors, sp.tensors);
}

TEST(Planner, AnImpossibleBudgetIsExplained) {
  const StepTrace t = traced_chain();
  PlannerResult r = plan_step(t, cpu(), 1000);
  EXPECT_FALSE(r.plan.fits);
  EXPECT_NE(r.explanation.find("cannot be met: the lowest predicted peak is"), std::string::npos) << r.explanation;
}

TEST(Planner, OffloadOptionsArePrefixGroupsWhoseHeldBytesGrowAsTheSharedChannelFallsBehind) {
  StepTrace t = traced_chain();
  for (TraceOp& o : t.ops) o.seconds = 1e-3;  // fixed times: the test does not depend on the clock
  HardwareProfile hw = cpu();
  hw.drives[0].write_bytes_per_second.value = 0.1e9;  // slower than the blocks are produced
  const ChainProblem p = chain_problem(t, hw, 1ull << 40, {}, /*prefetch_blocks=*/1);
  std::vector<uint64_t> held;
  for (const ChainBlock& b : p.blocks) {
    for (const BlockOption& o : b.options) {
      if (o.name == "nvme") {
        EXPECT_EQ(o.prefix_group, 1) << b.path;
        held.push_back(o.held_bytes);
      }
      if (o.name == "selective+nvme") { EXPECT_EQ(o.prefix_group, 2) << b.path; }
      if (o.name == "keep" || o.name == "selective" || o.name == "recompute") { EXPECT_EQ(o.prefix_group, 0) << b.path; }
    }
  }
  ASSERT_EQ(held.size(), t.blocks.size());
  for (size_t b = 1; b < held.size(); ++b) EXPECT_GE(held[b], held[b - 1]) << "block " << b;
  EXPECT_LT(held.front(), held.back()) << "the channel falls further behind with every block it carries";
  // Judged alone, no block is held back by the others' stores.
  const ChainProblem alone = chain_problem(t, hw, 1ull << 40, {}, 1, /*prefix_offload=*/false);
  for (const ChainBlock& b : alone.blocks)
    for (const BlockOption& o : b.options) EXPECT_EQ(o.prefix_group, 0) << b.path << " " << o.name;
  // The planner's plan holds a tight budget on the simulator with this slow drive too.
  const uint64_t keep_peak = simulate(t, SimPlan::keep_all(t), hw).activation_peak;
  PlannerResult r = plan_step(t, hw, uint64_t(0.5 * double(keep_peak)));
  EXPECT_TRUE(r.plan.fits) << r.explanation;
}

TEST(Planner, ACheaperSelectiveLevelRecomputesOnlyTheCheapestOutputs) {
  // Matmul outputs at ten times a GELU output's cost per byte.
  size_t gemm_outputs = 0;
  const StepTrace t = chain_with_recomputable_matmuls(10, &gemm_outputs);
  ASSERT_EQ(gemm_outputs, t.blocks.size());
  const ChainProblem p = chain_problem(t, cpu(), 1ull << 40, {});
  std::vector<int> choice(t.blocks.size(), 0);
  for (size_t j = 0; j < p.blocks[0].options.size(); ++j)
    if (p.blocks[0].options[j].name == "selective-cheap") choice[0] = int(j);
  ASSERT_NE(choice[0], 0) << "block 0 offers the cheap level";
  const SimPlan sp = sim_plan_for(t, p, choice);
  for (size_t k = 0; k < t.tensors.size(); ++k) {
    const TraceTensor& x = t.tensors[k];
    if (x.block != 0 || x.block_input || !x.op_recomputable) continue;
    const bool gemm = t.ops[size_t(x.producer)].kind.find("matmul") != std::string::npos;
    EXPECT_EQ(sp.tensors[k], gemm ? CacheAction::Keep : CacheAction::Recompute) << x.key;
  }
}

namespace {

int option_index(const ChainProblem& p, size_t block, const std::string& name) {
  const auto& opts = p.blocks[block].options;
  for (size_t j = 0; j < opts.size(); ++j)
    if (opts[j].name == name) return int(j);
  return -1;
}

}  // namespace

TEST(Planner, AGemmOutputIsNeverCheapEvenAtLessThanTwiceTheCheapestCostPerByte) {
  // BERT-large's intermediate projection costs 1.8x a GELU output per byte to make again, yet it
  // takes a GEMM: the cheap level (Megatron's memory-bound outputs) leaves it out.
  size_t gemm_outputs = 0;
  const StepTrace t = chain_with_recomputable_matmuls(1.5, &gemm_outputs);
  ASSERT_EQ(gemm_outputs, t.blocks.size());
  const ChainProblem p = chain_problem(t, cpu(), 1ull << 40, {});
  const int cheap = option_index(p, 0, "selective-cheap"), all = option_index(p, 0, "selective");
  ASSERT_GE(cheap, 0) << "the GEMM outputs make the two levels differ";
  ASSERT_GE(all, 0);
  EXPECT_GT(p.blocks[0].options[size_t(cheap)].held_bytes, p.blocks[0].options[size_t(all)].held_bytes);
  std::vector<int> choice(t.blocks.size(), 0);
  choice[0] = cheap;
  const SimPlan sp = sim_plan_for(t, p, choice);
  size_t gemm_kept = 0;
  for (size_t k = 0; k < t.tensors.size(); ++k) {
    const TraceTensor& x = t.tensors[k];
    if (x.block != 0 || x.block_input || !x.op_recomputable) continue;
    const bool gemm = t.ops[size_t(x.producer)].kind.find("matmul") != std::string::npos;
    EXPECT_EQ(sp.tensors[k], gemm ? CacheAction::Keep : CacheAction::Recompute) << x.key;
    gemm_kept += gemm;
  }
  EXPECT_EQ(gemm_kept, 1u);
}

TEST(Planner, SelectiveRecomputeDropsABlockInputThePreviousBlockCanMakeAgainUnlessASegmentNeedsIt) {
  // A post-LN transformer: block b's input is block b-1's layer norm output, made again from the
  // norm's saved input. Mark each block input made inside the chain recomputable.
  StepTrace t = traced_chain();
  for (TraceOp& o : t.ops) o.seconds = 1e-3;
  // Recompute costs from the fixed op times, not the traced run's clock (which options a block
  // keeps depends on them).
  t.recompute_costs_from_ops();
  std::vector<int> input_of(t.blocks.size(), -1);
  for (size_t k = 0; k < t.tensors.size(); ++k) {
    TraceTensor& x = t.tensors[k];
    if (!x.block_input || x.block < 1 || t.ops[size_t(x.producer)].block != x.block - 1) continue;
    x.op_recomputable = true;
    x.recompute_seconds = 1e-4;
    input_of[size_t(x.block)] = int(k);
  }
  for (size_t b = 1; b < t.blocks.size(); ++b) ASSERT_GE(input_of[b], 0) << "block " << b;
  const ChainProblem p = chain_problem(t, cpu(), 1ull << 40, {});
  const int keep = option_index(p, 2, "keep"), sel = option_index(p, 2, "selective"),
            seg = option_index(p, 2, "recompute");
  ASSERT_TRUE(keep >= 0 && sel >= 0 && seg >= 0);
  // The selective option frees the input too; the segment keeps it (it restarts from it).
  uint64_t gelu = 0;
  for (const TraceTensor& x : t.tensors)
    if (x.block == 2 && x.op_recomputable && !x.block_input) gelu += x.bytes;
  const uint64_t input = t.tensors[size_t(input_of[2])].bytes;
  EXPECT_EQ(p.blocks[2].options[size_t(keep)].held_bytes - p.blocks[2].options[size_t(sel)].held_bytes, gelu + input);
  EXPECT_GE(p.blocks[2].options[size_t(seg)].held_bytes, input);
  // Selective everywhere: every chain-made input is recomputed.
  std::vector<int> choice(t.blocks.size(), -1);
  for (size_t b = 0; b < t.blocks.size(); ++b) {
    choice[b] = option_index(p, b, "selective");
    ASSERT_GE(choice[b], 0) << "block " << b;
  }
  SimPlan sp = sim_plan_for(t, p, choice);
  for (size_t b = 1; b < t.blocks.size(); ++b)
    EXPECT_EQ(sp.tensors[size_t(input_of[b])], CacheAction::Recompute) << "block " << b;
  // Block 1 as a segment: block 2's input, made by block 1's ops, stays (block 1's saved tensors are
  // gone until its segment re-runs, after block 2's backward); block 1's own input still goes.
  choice[1] = option_index(p, 1, "recompute");
  ASSERT_GE(choice[1], 0);
  sp = sim_plan_for(t, p, choice);
  EXPECT_TRUE(sp.segments[1]);
  EXPECT_EQ(sp.tensors[size_t(input_of[2])], CacheAction::Keep);
  EXPECT_EQ(sp.tensors[size_t(input_of[3])], CacheAction::Recompute);
  // The planner's plans stay valid on the simulator, and the cache's Plan carries the drops.
  const uint64_t keep_peak = simulate(t, SimPlan::keep_all(t), cpu()).activation_peak;
  PlannerResult r = plan_step(t, cpu(), uint64_t(0.5 * double(keep_peak)));
  EXPECT_TRUE(r.plan.fits) << r.explanation;
  const Plan plan = cache_plan_for(t, sp);
  EXPECT_EQ(plan.tensors.at(t.tensors[size_t(input_of[3])].key), CacheAction::Recompute);
}

TEST(Planner, AnOffloadedBlocksBackwardPeakCountsOnlyWhatTheBlocksBeforeItLoad) {
  // With prefetch depth 2, block 3 is back in memory while blocks 1 and 2 load: their offloaded
  // bytes, which under selective recompute leave out the outputs they make again themselves.
  const StepTrace t = traced_chain();
  const ChainProblem p = chain_problem(t, cpu(), 1ull << 40, {}, /*prefetch_blocks=*/2);
  const int whole = option_index(p, 3, "nvme"), sel = option_index(p, 3, "selective+nvme");
  ASSERT_TRUE(whole >= 0 && sel >= 0);
  uint64_t dropped = 0, saved3 = 0, saved12 = 0;
  for (const TraceTensor& x : t.tensors) {
    if (x.first_backward_use < 0) continue;
    if (x.block == 3) saved3 += x.bytes;
    if (x.block == 1 || x.block == 2) {
      saved12 += x.bytes;
      if (x.op_recomputable && !x.block_input) dropped += x.bytes;
    }
  }
  ASSERT_GT(dropped, 0u);
  EXPECT_EQ(p.blocks[3].options[size_t(whole)].peak_bytes, saved3 + saved12);
  EXPECT_EQ(p.blocks[3].options[size_t(sel)].peak_bytes, saved3 + saved12 - dropped);
}

TEST(Planner, PerTensorRefinementTradesADearDropForACheaperOneTheBlockOptionsCannotSeparate) {
  // Each block b >= 1 has two outputs to make again, of one size: its input (block b-1's output,
  // 1.9 units per byte) and its GELU output (1 unit). The block options drop both or neither, so
  // dropping five tensors costs 1 + 2.9 + 2.9 at block level; keeping the inputs and dropping
  // five GELU outputs costs 5.
  StepTrace t = traced_chain();
  for (TraceOp& o : t.ops) o.seconds = 1e-3;
  uint64_t size = 0;
  for (TraceTensor& x : t.tensors) {
    if (x.block < 0 || x.first_backward_use < 0) continue;
    if (x.op_recomputable && !x.block_input) {
      x.recompute_seconds = 1e-3;
      size = x.bytes;
    } else if (x.block_input && x.block >= 1 && t.ops[size_t(x.producer)].block == x.block - 1) {
      x.op_recomputable = true;
      x.recompute_seconds = 1.9e-3;
    }
  }
  for (const TraceTensor& x : t.tensors)
    if (x.op_recomputable) { ASSERT_EQ(x.bytes, size) << x.key; }
  HardwareProfile hw = cpu();
  hw.drives.clear();  // recompute only: no baseline offloads
  PlannerOptions only_selective;
  only_selective.allow_recompute = only_selective.allow_host = only_selective.allow_nvme = false;
  const uint64_t keep_peak = simulate(t, SimPlan::keep_all(t), hw).activation_peak;
  const uint64_t budget = keep_peak - 5 * size + size / 2;
  PlannerOptions blocks_only = only_selective;
  blocks_only.refine_rounds = 0;
  const PlannerResult coarse = plan_step(t, hw, budget, blocks_only), fine = plan_step(t, hw, budget, only_selective);
  ASSERT_TRUE(coarse.plan.fits && fine.plan.fits) << coarse.explanation << " / " << fine.explanation;
  const double keep_time = simulate(t, SimPlan::keep_all(t), hw).step_seconds;
  EXPECT_NEAR(coarse.plan.predicted.step_seconds - keep_time, 6.8e-3, 1e-9);
  EXPECT_NEAR(fine.plan.predicted.step_seconds - keep_time, 5e-3, 1e-9);
  for (size_t k = 0; k < t.tensors.size(); ++k)
    if (t.tensors[k].block_input && t.tensors[k].op_recomputable) {
      EXPECT_EQ(fine.plan.plan.tensors[k], CacheAction::Keep) << t.tensors[k].key;
    }
}
