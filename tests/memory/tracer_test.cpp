// StepTracer on a real step: the trace's structure (blocks, producers before uses, keys as the
// cache names them), and the simulator replaying it under keep-all predicts the activation peak
// the allocator measures for the same step.
#include "strata/memory/planner/tracer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <thread>

#include "strata/memory/planner/hardware.h"
#include "strata/memory/planner/simulator.h"
#include "strata/models/gpt.h"
#include "strata/nn/meta_init.h"
#include "strata/strata.h"
#include "support/block_chain.h"
#include "support/random_parameters.h"
#include "support/test_hardware.h"

using namespace strata;
using namespace strata::memory;
using namespace strata::memory::planner;

namespace {

// Four blocks on a [rows, 64] input; odd blocks square their GELU's output.
Tensor chain(const Tensor& x, const std::vector<Tensor>& w) {
  return strata::testing::block_chain(x, w, /*square_odd_blocks=*/true);
}

std::vector<Tensor> weights() { return strata::testing::random_parameters(4, {64, 64}, 0.2); }

HardwareProfile cpu() { return strata::testing::test_cpu(1e10); }

// One traced step of chain(x, w).
StepTrace trace_chain(const Tensor& x, const std::vector<Tensor>& w) {
  auto tracer = std::make_shared<StepTracer>();
  {
    OpObserverGuard obs(tracer.get());
    autograd::SavePolicyGuard save(tracer);
    tracer->begin();
    chain(x, w).backward();
  }
  return tracer->finish("chain");
}

}  // namespace

TEST(StepTracer, RecordsBlocksTensorsAndTheirUses) {
  manual_seed(3);
  auto w = weights();
  Tensor x = ops::randn({512, 64});
  StepTrace t = trace_chain(x, w);
  ASSERT_EQ(t.blocks.size(), 4u);
  for (size_t b = 0; b < 4; ++b) {
    EXPECT_EQ(t.blocks[b].path, "b" + std::to_string(b));
    EXPECT_GE(t.blocks[b].first_backward_op, 0) << "block " << b << " has backward nodes";
    if (b > 0) {
      EXPECT_LT(t.blocks[b].first_backward_op, t.blocks[b - 1].first_backward_op) << "backward runs blocks in reverse";
    }
  }
  std::set<std::string> keys;
  size_t recomputable = 0, inputs = 0;
  for (const TraceTensor& s : t.tensors) {
    EXPECT_TRUE(keys.insert(s.key).second) << "duplicate key " << s.key;
    EXPECT_LE(s.producer, s.last_forward_use) << s.key;
    ASSERT_GE(s.first_backward_use, 0) << s.key << " is never unpacked";
    EXPECT_LT(s.last_forward_use, s.first_backward_use) << s.key;
    EXPECT_EQ(s.bytes % (512 * 4), 0u) << s.key;
    recomputable += s.op_recomputable;
    inputs += s.block_input;
  }
  EXPECT_TRUE(keys.count("b1#0:MatmulBackward")) << "keys follow the cache's <scope>#<n>:<node>";
  EXPECT_EQ(recomputable, 2u) << "the squared GELU outputs of blocks 1 and 3 can be made again by GELU";
  EXPECT_EQ(inputs, 4u) << "each block's matmul input comes from the block before, or is the batch";
  EXPECT_GT(t.resident_bytes, 0u);
}

TEST(StepTracer, KeepAllReplayPredictsTheMeasuredActivationPeak) {
  manual_seed(4);
  auto w = weights();
  Tensor x = ops::randn({1024, 64});
  StepTrace t = trace_chain(x, w);
  for (auto& p : w) p.set_grad(Tensor());
  // The same step again, untraced, with the allocator's peaks reset at its start. The stats are the
  // process's: in a run of the whole suite in one process, an earlier test's background worker
  // (a tensor cache's I/O thread) may still hold a saved storage for a moment, so the step starts
  // once none is held.
  const auto saved_now = [] {
    return cpu_allocator().stats().snapshot().current_of(MemoryCategory::SavedActivation);
  };
  for (int i = 0; i < 500 && saved_now() != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(saved_now(), 0) << "saved activations still held before the step";
  cpu_allocator().stats().reset_peaks();
  chain(x, w).backward();
  const int64_t measured = cpu_allocator().stats().snapshot().peak_of(MemoryCategory::SavedActivation);
  SimResult r = simulate(t, SimPlan::keep_all(t), cpu());
  EXPECT_EQ(int64_t(r.activation_peak), measured);
  // Recomputing every block keeps only block inputs: a strictly lower predicted peak.
  SimPlan seg = SimPlan::keep_all(t);
  seg.segments.assign(t.blocks.size(), true);
  SimResult rs = simulate(t, seg, cpu());
  EXPECT_LT(rs.activation_peak, r.activation_peak);
  EXPECT_GT(rs.recompute_seconds, 0.0);
}

TEST(StepTracer, TracesRoundTripThroughBinaryAndTextFiles) {
  manual_seed(5);
  auto w = weights();
  Tensor x = ops::randn({128, 64});
  StepTrace t = trace_chain(x, w);
  const std::string dir = ::testing::TempDir();
  for (const std::string name : {"trace.pb", "trace.textproto"}) {
    save_trace(t, dir + name);
    StepTrace back = load_trace(dir + name);
    EXPECT_EQ(back.model, "chain");
    EXPECT_EQ(back.resident_bytes, t.resident_bytes);
    ASSERT_EQ(back.ops.size(), t.ops.size());
    ASSERT_EQ(back.tensors.size(), t.tensors.size());
    ASSERT_EQ(back.blocks.size(), t.blocks.size());
    for (size_t i = 0; i < t.ops.size(); ++i) {
      EXPECT_EQ(back.ops[i].kind, t.ops[i].kind);
      EXPECT_EQ(back.ops[i].block, t.ops[i].block);
      EXPECT_EQ(back.ops[i].phase, t.ops[i].phase);
      EXPECT_EQ(back.ops[i].seconds, t.ops[i].seconds);
      EXPECT_EQ(back.ops[i].temp_bytes, t.ops[i].temp_bytes);
    }
    for (size_t i = 0; i < t.tensors.size(); ++i) {
      EXPECT_EQ(back.tensors[i].key, t.tensors[i].key);
      EXPECT_EQ(back.tensors[i].producer, t.tensors[i].producer);
      EXPECT_EQ(back.tensors[i].first_backward_use, t.tensors[i].first_backward_use);
      EXPECT_EQ(back.tensors[i].block_input, t.tensors[i].block_input);
    }
  }
  {  // a trace whose indices point past its ops is refused with the file's name
    StepTrace bad = t;
    bad.tensors[0].first_backward_use = int32_t(bad.ops.size()) + 5;
    bad.tensors[0].last_backward_use = bad.tensors[0].first_backward_use;
    save_trace(bad, dir + "bad.pb");
  }
  try {
    load_trace(dir + "bad.pb");
    FAIL() << "an inconsistent trace was loaded";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.pb"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_trace(dir + "missing.pb"), IoError);
}

TEST(StepTracer, AShapeOnlyMetaStepIsTracedWithTheCostModel) {
  const HardwareProfile h100 = load_hardware_profile(std::string(STRATA_TEST_DATA_DIR) +
                                                     "/../tools/hardware/h100-sxm-pcie5-1xgen4.textproto");
  models::GPTConfig cfg = models::GPTConfig::preset("tiny");
  const int64_t cpu_params = cpu_allocator().stats().snapshot().current_of(MemoryCategory::Parameter);
  std::unique_ptr<models::GPT> built;
  {
    nn::MetaInitGuard meta;  // parameters straight onto Meta: no CPU memory, no initialization
    built = std::make_unique<models::GPT>(cfg);
  }
  models::GPT& model = *built;
  for (const auto& [name, p] : model.named_parameters()) EXPECT_TRUE(p.device().is_meta()) << name;
  EXPECT_EQ(cpu_allocator().stats().snapshot().current_of(MemoryCategory::Parameter), cpu_params);
  const int64_t B = 2, T = 32;
  Tensor idx = ops::zeros({B, T}, TensorOptions().dtype(DType::i64).device(kMeta));
  Tensor targets = ops::zeros({B, T}, TensorOptions().dtype(DType::i64).device(kMeta));
  TracerOptions o;
  o.cost_model = &h100;
  o.device = kMeta;
  auto tracer = std::make_shared<StepTracer>(nullptr, o);
  {
    OpObserverGuard obs(tracer.get());
    autograd::SavePolicyGuard save(tracer);
    tracer->begin();
    model.loss(idx, targets).backward();
  }
  StepTrace t = tracer->finish("gpt tiny");
  EXPECT_EQ(t.source, "cost model: h100-sxm-pcie5-1xgen4, fp32 GEMMs");
  EXPECT_EQ(t.blocks.size(), size_t(cfg.n_layer));
  EXPECT_FALSE(t.tensors.empty());
  EXPECT_EQ(t.resident_bytes, uint64_t(model.num_parameters()) * 4 * 2) << "parameters and their gradients";
  double flops = 0;
  for (const TraceOp& op : t.ops) {
    EXPECT_GE(op.seconds, h100.kernel_launch_seconds.value) << op.kind;
    flops += op.flops;
  }
  EXPECT_GT(flops, 0.0);
  SimResult r = simulate(t, SimPlan::keep_all(t), h100);
  EXPECT_GT(r.activation_peak, 0u);
  EXPECT_NEAR(r.compute_seconds, r.step_seconds, 1e-12);
}

// Backward's workspace on the Meta device is what it is on the CPU: every temporary a backward node
// frees leaves the allocator's count (Meta storages hold no memory, yet count their bytes), so the
// workspace of the last block's backward equals the first's instead of growing with depth. The
// attention is the composite CUDA's f32 path and Meta take.
TEST(StepTracer, BackwardWorkspaceOnMetaDoesNotGrowWithDepth) {
  std::vector<uint64_t> per_device[2];
  for (int d = 0; d < 2; ++d) {
    const Device dev = d == 0 ? kCPU : kMeta;
    const int64_t B = 2, T = 32, C = 64, H = 4, D = C / H;
    std::vector<Tensor> w;
    for (int i = 0; i < 6; ++i) {
      Tensor p = ops::zeros({C, 3 * C}, TensorOptions().device(dev));
      p.set_requires_grad(true);
      p.set_is_parameter(true);
      w.push_back(p);
    }
    Tensor x = ops::zeros({B, T, C}, TensorOptions().device(dev));
    TracerOptions o;
    o.device = dev;
    auto tracer = std::make_shared<StepTracer>(nullptr, o);
    {
      OpObserverGuard obs(tracer.get());
      autograd::SavePolicyGuard save(tracer);
      tracer->begin();
      Tensor h = x;
      for (int i = 0; i < 6; ++i) {
        autograd::ScopeGuard block(std::string("b").append(std::to_string(i)), true);
        std::vector<Tensor> parts = ops::split(ops::matmul(h, w[size_t(i)]), C, 2);
        auto heads = [&](const Tensor& t) { return ops::transpose(ops::view(t, {B, T, H, D}), 1, 2); };
        Tensor y = ops::scaled_dot_product_attention(heads(parts[0]), heads(parts[1]), heads(parts[2]),
                                                     Tensor(), 0.0, true);
        h = ops::reshape(ops::transpose(y, 1, 2), {B, T, C});
      }
      ops::sum(h).backward();
    }
    for (const TraceOp& op : tracer->finish("composite attention").ops)
      if (op.phase == TracePhase::Backward && op.kind == "MatmulBackward")
        per_device[d].push_back(op.temp_bytes);
  }
  ASSERT_EQ(per_device[0].size(), 6u);
  ASSERT_EQ(per_device[1].size(), 6u);
  for (size_t b = 0; b < 6; ++b) {
    EXPECT_EQ(per_device[1][b], per_device[1][0]) << "block " << 5 - b << "'s backward on Meta";
    EXPECT_EQ(per_device[0][b], per_device[0][0]) << "block " << 5 - b << "'s backward on the CPU";
  }
}
