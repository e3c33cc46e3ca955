// The simulator against timelines worked out by hand: a 2-block chain (two forward ops of 1 s,
// two backward ops of 1 s, one 100 MB saved tensor per block) under keep-all, host, NVMe with and
// without prefetch, a store still in flight when backward needs it (forwarding), op-level and
// segment recompute, and on a GPU profile whose NVMe traffic shares the host link.
#include "strata/memory/planner/simulator.h"

#include <gtest/gtest.h>

#include "strata/core/error.h"
#include "support/test_hardware.h"

using namespace strata;
using namespace strata::memory;
using namespace strata::memory::planner;

namespace {

constexpr uint64_t MB100 = 100'000'000;

// op 0: block 0 forward, makes T0 | op 1: block 1 forward, makes T1 (workspace 50 MB)
// op 2: block 1 backward, reads T1  | op 3: block 0 backward, reads T0
StepTrace chain() {
  StepTrace t;
  t.model = "two blocks";
  t.resident_bytes = 1'000'000'000;
  auto op = [](const char* kind, int32_t block, TracePhase ph, uint64_t temp = 0) {
    TraceOp o;
    o.kind = kind;
    o.block = block;
    o.phase = ph;
    o.seconds = 1.0;
    o.temp_bytes = temp;
    return o;
  };
  t.ops = {op("matmul", 0, TracePhase::Forward), op("matmul", 1, TracePhase::Forward, 50'000'000),
           op("matmul_backward", 1, TracePhase::Backward), op("matmul_backward", 0, TracePhase::Backward)};
  TraceTensor t0;
  t0.key = "b0#0:gelu";
  t0.bytes = MB100;
  t0.producer = 0;
  t0.last_forward_use = 0;
  t0.first_backward_use = t0.last_backward_use = 3;
  t0.block = 0;
  t0.op_recomputable = true;
  t0.recompute_seconds = 0.5;
  TraceTensor t1 = t0;
  t1.key = "b1#0:gelu";
  t1.producer = t1.last_forward_use = 1;
  t1.first_backward_use = t1.last_backward_use = 2;
  t1.block = 1;
  t.tensors = {t0, t1};
  t.blocks = {{"b0", 0, 0, 3, 3}, {"b1", 1, 1, 2, 2}};
  return t;
}

// A CPU: memcpy 1 GB/s (host tier: 0.1 s per tensor); one drive writing 0.5 GB/s, reading 1 GB/s.
HardwareProfile cpu(double nvme_write = 0.5e9) { return strata::testing::test_cpu(1e9, 1e9, nvme_write); }

// chain()'s keep-all plan with its first tensor (T0) sent to `action`.
SimPlan first_tensor_to(const StepTrace& t, CacheAction action) {
  SimPlan p = SimPlan::keep_all(t);
  p.tensors[0] = action;
  return p;
}

// chain() on cpu() with its first tensor sent to `action`.
SimResult simulate_first_tensor(CacheAction action) {
  const StepTrace t = chain();
  return simulate(t, first_tensor_to(t, action), cpu());
}

using Curve = std::vector<std::pair<double, uint64_t>>;

void expect_curve(const SimResult& r, const Curve& want) {
  ASSERT_EQ(r.activation_curve.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(r.activation_curve[i].first, want[i].first, 1e-9) << "point " << i;
    EXPECT_EQ(r.activation_curve[i].second, want[i].second) << "point " << i << " at t=" << want[i].first;
  }
}

}  // namespace

TEST(Simulator, KeepAllHoldsBothTensorsUntilTheirBackward) {
  StepTrace t = chain();
  SimResult r = simulate(t, SimPlan::keep_all(t), cpu());
  EXPECT_DOUBLE_EQ(r.step_seconds, 4.0);
  EXPECT_DOUBLE_EQ(r.stall_seconds, 0.0);
  EXPECT_EQ(r.activation_peak, 2 * MB100);
  EXPECT_EQ(r.step_peak, 1'000'000'000 + 2 * MB100 + 50'000'000);  // op 1's workspace on top of both
  expect_curve(r, {{0, MB100}, {1, 2 * MB100}, {3, MB100}, {4, 0}});
}

TEST(Simulator, HostTierStoresAfterTheProducerAndPrefetchesOneBlockAhead) {
  SimResult r = simulate_first_tensor(CacheAction::Host);
  // T0 stored 1.0 -> 1.1 (then freed); loaded when backward enters block 1 (t=2), 2.0 -> 2.1.
  EXPECT_DOUBLE_EQ(r.step_seconds, 4.0);
  EXPECT_DOUBLE_EQ(r.stall_seconds, 0.0);
  expect_curve(r, {{0, MB100}, {1, 2 * MB100}, {1.1, MB100}, {2, 2 * MB100}, {3, MB100}, {4, 0}});
  EXPECT_EQ(r.host_bytes_written, MB100);
  EXPECT_EQ(r.host_bytes_read, MB100);
  EXPECT_EQ(r.host_pool_peak, MB100);
  // On a CPU the pool is the same RAM: at t=1 T0, T1, op 1's workspace and T0's extent coexist.
  EXPECT_EQ(r.step_peak, 1'000'000'000 + 3 * MB100 + 50'000'000);
}

TEST(Simulator, NvmeLoadIssuedAtFirstUseStalls) {
  StepTrace t = chain();
  SimPlan p = first_tensor_to(t, CacheAction::Nvme);
  p.prefetch_at = {3, -1};  // no prefetch: loaded when op 3 needs it
  SimResult r = simulate(t, p, cpu());
  // Stored 1.0 -> 1.2 (0.5 GB/s); read at t=3, 3.0 -> 3.1 (1 GB/s): op 3 runs 3.1 -> 4.1.
  EXPECT_NEAR(r.stall_seconds, 0.1, 1e-12);
  EXPECT_NEAR(r.step_seconds, 4.1, 1e-12);
  expect_curve(r, {{0, MB100}, {1, 2 * MB100}, {1.2, MB100}, {3, MB100}, {4.1, 0}});
  EXPECT_EQ(r.nvme_bytes_written, MB100);
  EXPECT_EQ(r.nvme_bytes_read, MB100);
  EXPECT_EQ(r.host_pool_peak, 0u);
}

TEST(Simulator, AStoreStillRunningWhenBackwardNeedsItIsForwarded) {
  StepTrace t = chain();
  SimPlan p = first_tensor_to(t, CacheAction::Nvme);
  // 0.04 GB/s: the store would end at 3.5, after op 3 starts (t=3): T0 is still in memory.
  SimResult r = simulate(t, p, cpu(0.04e9));
  EXPECT_DOUBLE_EQ(r.step_seconds, 4.0);
  EXPECT_EQ(r.nvme_bytes_written, 0u) << "a cancelled store writes nothing";
  EXPECT_EQ(r.nvme_bytes_read, 0u);
  expect_curve(r, {{0, MB100}, {1, 2 * MB100}, {3, MB100}, {4, 0}});
}

TEST(Simulator, OpLevelRecomputeDropsAfterForwardAndRemakesBeforeUse) {
  StepTrace t = chain();
  SimPlan p = first_tensor_to(t, CacheAction::Recompute);
  SimResult r = simulate(t, p, cpu());
  EXPECT_DOUBLE_EQ(r.recompute_seconds, 0.5);
  EXPECT_DOUBLE_EQ(r.step_seconds, 4.5);
  EXPECT_EQ(r.activation_peak, MB100);
  expect_curve(r, {{0, MB100}, {1, MB100}, {3, MB100}, {4.5, 0}});
  t.tensors[0].op_recomputable = false;
  EXPECT_THROW(simulate(t, p, cpu()), ValueError);
}

TEST(Simulator, ASegmentRerunsItsBlocksForwardBeforeItsBackward) {
  StepTrace t = chain();
  SimPlan p = SimPlan::keep_all(t);
  p.segments[0] = true;
  SimResult r = simulate(t, p, cpu());
  EXPECT_DOUBLE_EQ(r.recompute_seconds, 1.0);
  EXPECT_DOUBLE_EQ(r.step_seconds, 5.0);
  EXPECT_EQ(r.activation_peak, MB100);
  expect_curve(r, {{0, MB100}, {1, MB100}, {3, MB100}, {5, 0}});
}

TEST(Simulator, OnAGpuNvmeSharesTheHostLink) {
  StepTrace t = chain();
  t.tensors[1].producer = 0;  // both tensors made by op 0 (stores issued together at t=1)
  t.tensors[1].last_forward_use = 0;
  HardwareProfile g;
  g.name = "test gpu";
  g.gpu = true;
  g.host_to_device_bytes_per_second = {1e9, "test"};
  g.device_to_host_bytes_per_second = {1e9, "test"};
  DriveProfile d;
  d.read_bytes_per_second = {4e9, "test"};
  d.write_bytes_per_second = {4e9, "test"};
  g.drives.push_back(d);
  SimPlan p = first_tensor_to(t, CacheAction::Host);
  p.tensors[1] = CacheAction::Nvme;
  SimResult r = simulate(t, p, g);
  // T0 to host 1.0 -> 1.1 on the link; T1 to NVMe waits for the link, 1.1 -> 1.2 (link-bound).
  // Backward enters block 1 at t=2: T0's prefetch takes the link 2.0 -> 2.1, so T1's own load
  // (block 1 is the last: nothing prefetched it) runs 2.1 -> 2.2 and op 2 stalls 0.2 s.
  expect_curve(r, {{0, 2 * MB100}, {1.1, MB100}, {1.2, 0}, {2, MB100}, {2.1, 2 * MB100}, {3.2, MB100}, {4.2, 0}});
  EXPECT_NEAR(r.stall_seconds, 0.2, 1e-12);
  EXPECT_NEAR(r.step_seconds, 4.2, 1e-12);
  EXPECT_EQ(r.host_pool_peak, MB100);
  EXPECT_EQ(r.step_peak, 1'000'000'000 + 2 * MB100 + 50'000'000);  // the pool is host RAM on a GPU
}

TEST(Simulator, PlansFromTheCachesPlanAndBadPlansAreRefused) {
  StepTrace t = chain();
  Plan plan;
  plan.blocks["b0"] = CacheAction::Recompute;
  plan.tensors["b1#0:gelu"] = CacheAction::Host;
  SimPlan p = sim_plan_from(t, plan);
  EXPECT_TRUE(p.segments[0]);
  EXPECT_FALSE(p.segments[1]);
  EXPECT_EQ(p.tensors[1], CacheAction::Host);
  HardwareProfile no_drives = cpu();
  no_drives.drives.clear();
  SimPlan nv = SimPlan::keep_all(t);
  nv.tensors[0] = CacheAction::Nvme;
  EXPECT_THROW(simulate(t, nv, no_drives), ValueError);
  nv.tensors.pop_back();
  EXPECT_THROW(simulate(t, nv, cpu()), ValueError);
  StepTrace bad = chain();
  bad.tensors[0].first_backward_use = 1;  // a forward op
  EXPECT_THROW(simulate(bad, SimPlan::keep_all(bad), cpu()), ValueError);
}

TEST(Simulator, DeeperPrefetchLoadsEarlier) {
  // Three blocks of one forward and one backward op each (1 s); block 0's tensor goes to NVMe.
  StepTrace t;
  t.model = "three blocks";
  for (int b = 0; b < 3; ++b) {
    TraceOp o;
    o.kind = "matmul";
    o.block = b;
    o.seconds = 1.0;
    t.ops.push_back(o);
  }
  for (int b = 2; b >= 0; --b) {
    TraceOp o;
    o.kind = "matmul_backward";
    o.block = b;
    o.phase = TracePhase::Backward;
    o.seconds = 1.0;
    t.ops.push_back(o);
  }
  TraceTensor x;
  x.key = "b0#0:gelu";
  x.bytes = MB100;
  x.producer = x.last_forward_use = 0;
  x.first_backward_use = x.last_backward_use = 5;
  x.block = 0;
  t.tensors = {x};
  t.blocks = {{"b0", 0, 0, 5, 5}, {"b1", 1, 1, 4, 4}, {"b2", 2, 2, 3, 3}};
  SimPlan p = first_tensor_to(t, CacheAction::Nvme);
  HardwareProfile hw = cpu(1e9);
  // One block ahead: loaded when backward enters block 1 (t=4).
  expect_curve(simulate(t, p, hw), {{0, MB100}, {1.1, 0}, {4, MB100}, {6, 0}});
  // Two blocks ahead: when backward enters block 2, its first block (t=3).
  p.prefetch_blocks = 2;
  expect_curve(simulate(t, p, hw), {{0, MB100}, {1.1, 0}, {3, MB100}, {6, 0}});
  // The cache's plan carries the depth.
  Plan plan;
  plan.prefetch_blocks = 2;
  EXPECT_EQ(sim_plan_from(t, plan).prefetch_blocks, 2u);
  EXPECT_EQ(plan_from_text(plan_to_text(plan)).prefetch_blocks, 2u);
}

TEST(Simulator, OnACpuTheIoThreadsCopiesAndChecksumsBoundTransfersAndTakeComputeTime) {
  StepTrace t = chain();
  SimPlan p = first_tensor_to(t, CacheAction::Nvme);
  HardwareProfile h = cpu(/*nvme_write=*/1e9);
  h.io_cpu_bytes_per_second = {0.5e9, "test"};  // slower than the drive: it bounds both directions
  h.io_compute_steal = {0.5, "test"};
  SimResult r = simulate(t, p, h);
  // Store issued at t=1: 1e8 B at 0.5 GB/s = 1.0 -> 1.2, and compute loses 0.5 x 0.2 s: op 1 runs
  // 1.1 -> 2.1. The load (prefetched when backward enters block 1, t=2.1) runs 2.1 -> 2.3 and
  // costs compute another 0.1 s: op 2 runs 2.2 -> 3.2, op 3 (T0 long loaded) 3.2 -> 4.2.
  EXPECT_NEAR(r.step_seconds, 4.2, 1e-12);
  EXPECT_NEAR(r.io_cpu_seconds, 0.2, 1e-12);
  EXPECT_DOUBLE_EQ(r.stall_seconds, 0.0);
  EXPECT_NEAR(r.forward_seconds, 2.1, 1e-12);
  EXPECT_NEAR(r.store_busy_seconds, 0.2, 1e-12);
  EXPECT_NEAR(r.load_busy_seconds, 0.2, 1e-12);
  EXPECT_EQ(r.stored_by_forward_end, MB100);
  expect_curve(r, {{0, MB100}, {1.1, 2 * MB100}, {1.2, MB100}, {2.1, 2 * MB100}, {3.2, MB100}, {4.2, 0}});
  // Without the figures (a profile measured before they existed) transfers cost compute nothing.
  SimResult base = simulate(t, p, cpu(1e9));
  EXPECT_DOUBLE_EQ(base.io_cpu_seconds, 0.0);
  EXPECT_NEAR(base.step_seconds, 4.0, 1e-12);
}
