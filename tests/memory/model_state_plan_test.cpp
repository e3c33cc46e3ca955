// The whole-step planner's model state: what a model holds per block, what each placement leaves on
// the device and moves per step (exact bytes), the ladder of placements it tries, and plans for
// budgets above, at and below the smallest feasible one on a shape-only GPT step.
#include "strata/memory/planner/model_state_plan.h"

#include <gtest/gtest.h>

#include "strata/memory/planner/tracer.h"
#include "strata/models/gpt.h"
#include "strata/nn/meta_init.h"
#include "strata/strata.h"
#include "support/error_of.h"

using namespace strata;
using namespace strata::memory::planner;
using optim::StatePlacement;

namespace {

HardwareProfile profile(const std::string& name) {
  return load_hardware_profile(std::string(STRATA_TEST_DATA_DIR) + "/../tools/hardware/" + name +
                               ".textproto");
}

// Four blocks of 100 bytes of weights, 50 outside them, AdamW's two moments per weight.
ModelState four_blocks() {
  ModelState s;
  s.block_weight_bytes = {100, 100, 100, 100};
  s.outside_weight_bytes = 50;
  s.optimizer_state_per_weight_byte = 2;
  return s;
}

ModelStatePlacement placed(StatePlacement w, StatePlacement g, StatePlacement o) {
  ModelStatePlacement p;
  p.weights = w, p.gradients = g, p.optimizer_state = o;
  return p;
}

// A shape-only step of GPT `preset` (B=1, T=`seq`) traced with `hw`'s cost model, and its model
// state with AdamW's moments.
struct MetaStep {
  StepTrace trace;
  ModelState state;
};
MetaStep meta_step(const std::string& preset, int64_t seq, const HardwareProfile& hw) {
  std::unique_ptr<models::GPT> model;
  {
    nn::MetaInitGuard meta;
    model = std::make_unique<models::GPT>(models::GPTConfig::preset(preset));
  }
  TracerOptions o;
  o.cost_model = &hw;
  o.device = kMeta;
  auto tracer = std::make_shared<StepTracer>(nullptr, o);
  Tensor idx = ops::zeros({1, seq}, TensorOptions().dtype(DType::i64).device(kMeta));
  {
    OpObserverGuard obs(tracer.get());
    autograd::SavePolicyGuard save(tracer);
    tracer->begin();
    model->loss(idx, idx).backward();
  }
  return {tracer->finish(preset), model_state_of(*model, 2.0)};
}

constexpr StatePlacement kDev = StatePlacement::Device, kHost = StatePlacement::Host,
                         kNvme = StatePlacement::Nvme;

}  // namespace

TEST(ModelStatePlan, AModelsWeightsCountInTheirInnermostBlock) {
  models::GPTConfig cfg = models::GPTConfig::preset("tiny");
  std::unique_ptr<models::GPT> model;
  {
    nn::MetaInitGuard meta;
    model = std::make_unique<models::GPT>(cfg);
  }
  const ModelState s = model_state_of(*model, 2.0);
  // Per block: ln_1 128 + c_attn 64x192+192 + attention c_proj 64x64+64 + ln_2 128 + c_fc 64x256+256
  // + mlp c_proj 256x64+64 = 49,984 f32 weights.
  ASSERT_EQ(s.block_weight_bytes.size(), 2u);
  EXPECT_EQ(s.block_weight_bytes[0], 49984u * 4);
  EXPECT_EQ(s.block_weight_bytes[1], 49984u * 4);
  // Outside: wte 256x64 (tied to the head), wpe 64x64, ln_f 128.
  EXPECT_EQ(s.outside_weight_bytes, (16384u + 4096u + 128u) * 4);
  EXPECT_EQ(s.weight_bytes(), uint64_t(model->num_parameters()) * 4);
  EXPECT_EQ(s.optimizer_bytes(), 2 * s.weight_bytes());
}

TEST(ModelStatePlan, EachPlacementsDeviceBytesAndTrafficAreExact) {
  const ModelState s = four_blocks();  // 450 bytes of weights, 900 of moments
  const HardwareProfile gpu = profile("h100-sxm-pcie5-1xgen4");
  ModelStateCost all = model_state_cost(s, {}, gpu, 1);
  EXPECT_EQ(all.device_bytes, 450u + 450u + 900u);
  EXPECT_EQ(all.link_bytes + all.nvme_read_bytes + all.nvme_write_bytes + all.host_bytes + all.nvme_bytes,
            0u);
  // The optimizer's state on the host: weights go there and back for the update, gradients there.
  ModelStateCost opt = model_state_cost(s, placed(kDev, kDev, kHost), gpu, 1);
  EXPECT_EQ(opt.device_bytes, 900u);
  EXPECT_EQ(opt.host_bytes, 900u);
  EXPECT_EQ(opt.link_bytes, 2u * 450 + 450);
  // Gradients on the host too: they leave in backward and come back for the update (of blocks only;
  // the outside ones stay, with the running block's and the next one's).
  ModelStateCost grads = model_state_cost(s, placed(kDev, kHost, kHost), gpu, 1);
  EXPECT_EQ(grads.device_bytes, 450u + (50u + 2 * 100));
  EXPECT_EQ(grads.host_bytes, 900u + 400);
  EXPECT_EQ(grads.link_bytes, 2u * 450 + 400 + 400);
  // Everything on NVMe: weights read twice and written once, gradients written and read, moments
  // read and written; the device keeps what lies outside blocks and a window of two blocks.
  ModelStateCost nvme = model_state_cost(s, placed(kNvme, kNvme, kNvme), gpu, 1);
  EXPECT_EQ(nvme.device_bytes, 2u * (50 + 2 * 100));
  EXPECT_EQ(nvme.nvme_bytes, 400u + 400 + 900);
  EXPECT_EQ(nvme.nvme_read_bytes, 2u * 400 + 400 + 900);
  EXPECT_EQ(nvme.nvme_write_bytes, 400u + 400 + 900);
  // A deeper prefetch holds more blocks, never more than there are.
  EXPECT_EQ(model_state_cost(s, placed(kHost, kDev, kDev), gpu, 2).device_bytes, 50u + 300 + 450 + 900);
  EXPECT_EQ(model_state_cost(s, placed(kHost, kDev, kDev), gpu, 9).device_bytes, 50u + 400 + 450 + 900);
  // The host update is priced by the host's streaming rate, the device's by its memory's.
  EXPECT_GT(opt.update_seconds, all.update_seconds);
}

TEST(ModelStatePlan, TheLadderMovesOptimizerStateThenGradientsThenWeights) {
  const ModelState s = four_blocks();
  const HardwareProfile gpu = profile("h100-sxm-pcie5-1xgen4");
  const HardwareProfile cpu = profile("measured/cpu-2core-vm");
  auto ladder = [&](const HardwareProfile& hw, const WholeStepOptions& w) {
    std::vector<ModelStatePlacement> out;
    for (const WholeStepCandidate& c :
         plan_whole_step(meta_step("tiny", 16, hw).trace, s, hw, 1 << 30, {}, w).candidates)
      out.push_back(c.placement);
    return out;
  };
  using V = std::vector<ModelStatePlacement>;
  EXPECT_EQ(ladder(gpu, {}), (V{placed(kDev, kDev, kDev), placed(kDev, kDev, kHost),
                                placed(kDev, kHost, kHost), placed(kHost, kHost, kHost)}));
  // Host memory for the moments (900) but not for the gradients beside them: those go to NVMe.
  WholeStepOptions capped;
  capped.host_memory_bytes = 1000;
  EXPECT_EQ(ladder(gpu, capped), (V{placed(kDev, kDev, kDev), placed(kDev, kDev, kHost),
                                    placed(kDev, kNvme, kHost), placed(kNvme, kNvme, kHost)}));
  // On a CPU device host memory is the device's: NVMe only.
  EXPECT_EQ(ladder(cpu, {}), (V{placed(kDev, kDev, kDev), placed(kDev, kDev, kNvme),
                                placed(kDev, kNvme, kNvme), placed(kNvme, kNvme, kNvme)}));
  // A placed kind stays where it was put and is not a rung.
  WholeStepOptions pinned;
  pinned.gradients = kDev;
  EXPECT_EQ(ladder(gpu, pinned),
            (V{placed(kDev, kDev, kDev), placed(kDev, kDev, kHost), placed(kHost, kDev, kHost)}));
  // Plain SGD keeps no per-element state: no rung moves it.
  ModelState sgd = four_blocks();
  sgd.optimizer_state_per_weight_byte = 0;
  EXPECT_EQ(placement_ladder(sgd, {}, {.host = true, .nvme = true, .host_update = true}),
            (V{placed(kDev, kDev, kDev), placed(kDev, kHost, kDev), placed(kHost, kHost, kDev)}));
  WholeStepOptions no_tiers;
  no_tiers.allow_host = no_tiers.allow_nvme = false;
  EXPECT_EQ(ladder(gpu, no_tiers), (V{placed(kDev, kDev, kDev)}));
  WholeStepOptions host_on_cpu;
  host_on_cpu.weights = kHost;
  EXPECT_EQ(strata::testing::error_of<ValueError>([&] { ladder(cpu, host_on_cpu); }),
            "plan_whole_step: weights in host memory, but the device is the host");
}

TEST(ModelStatePlan, ABudgetIsHeldByMovingModelStateAndTheSmallestFeasibleOneIsNamed) {
  const HardwareProfile gpu = profile("h100-sxm-pcie5-1xgen4");
  const MetaStep step = meta_step("small", 64, gpu);
  const StepTrace& trace = step.trace;
  const ModelState& s = step.state;
  // Generous: everything stays on the device.
  WholeStepPlan roomy = plan_whole_step(trace, s, gpu, uint64_t(1) << 34);
  ASSERT_TRUE(roomy.fits);
  EXPECT_EQ(roomy.chosen().placement, ModelStatePlacement{});
  EXPECT_EQ(roomy.chosen().state.device_bytes, 4 * s.weight_bytes());
  // Less than the model state alone: it has to move, and the plan's predicted peak holds the budget.
  const uint64_t tight = 2 * s.weight_bytes();
  WholeStepPlan moved = plan_whole_step(trace, s, gpu, tight);
  ASSERT_TRUE(moved.fits) << moved.explanation;
  EXPECT_NE(moved.chosen().placement.optimizer_state, kDev);
  EXPECT_LE(moved.chosen().activations.plan.predicted.step_peak, tight);
  EXPECT_LT(moved.chosen().state.device_bytes, tight);
  // The smallest feasible budget is held, and 0.1% less is not.
  ASSERT_GT(moved.smallest_feasible_budget, 0u);
  WholeStepPlan edge = plan_whole_step(trace, s, gpu, moved.smallest_feasible_budget);
  EXPECT_TRUE(edge.fits) << edge.explanation;
  WholeStepPlan under = plan_whole_step(trace, s, gpu, moved.smallest_feasible_budget / 1000 * 999);
  EXPECT_FALSE(under.fits);
  EXPECT_NEAR(double(under.smallest_feasible_budget), double(moved.smallest_feasible_budget),
              2e-4 * double(moved.smallest_feasible_budget));
  EXPECT_NE(under.explanation.find("cannot be met for the whole step: the smallest feasible budget is"),
            std::string::npos)
      << under.explanation;
  EXPECT_EQ(under.chosen().placement, placed(kHost, kHost, kHost));
}
