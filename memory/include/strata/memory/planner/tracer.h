// StepTracer: records a StepTrace from one real training step. Installed as both the op observer
// (op times, costs, workspace) and the save policy (what is saved, by which op, used when in
// backward), delegating saves to an inner policy (keep-all by default; never segments).
//
//   auto tracer = std::make_shared<planner::StepTracer>();
//   {
//     OpObserverGuard obs(tracer.get());
//     autograd::SavePolicyGuard save(tracer);
//     tracer->begin();
//     Tensor loss = model.loss(x, y);
//     loss.backward();
//   }
//   planner::StepTrace trace = tracer->finish("gpt2", resident_bytes);
//
// Measuring workspace resets the device allocator's peaks at every op (the trainer's own peak
// figures for this step are then meaningless).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "strata/autograd/saved_tensor.h"
#include "strata/core/op_observer.h"
#include "strata/core/device.h"
#include "strata/memory/planner/cost_model.h"
#include "strata/memory/planner/hardware.h"
#include "strata/memory/planner/trace.h"

namespace strata::memory::planner {

struct TracerOptions {
  // Op times from this profile's cost model instead of the clock: how a shape-only run on the
  // Meta device (no data, no kernels) is traced for a machine it never ran on.
  const HardwareProfile* cost_model = nullptr;
  GemmPrecision precision = GemmPrecision::fp32;  // the rate of GEMM-like ops (cost model only)
  Device device = kCPU;    // whose allocator's temporaries are the ops' workspace
  // Ops with a leaner variant take it, as they do under any tensor-cache policy that saves memory
  // (the plan the trace is for will run under one).
  bool lean_variants = true;
};

class StepTracer final : public OpObserver, public autograd::SavePolicy {
 public:
  explicit StepTracer(std::shared_ptr<autograd::SavePolicy> inner = nullptr, TracerOptions options = {});

  void begin();
  // The trace of the step since begin(); `resident_bytes`: parameters, gradients and optimizer
  // state (0: read from the device allocator's Parameter, Gradient and OptimizerState bytes).
  StepTrace finish(const std::string& model, uint64_t resident_bytes = 0);

  // OpObserver
  void on_op(const OpRecord& record) override;
  void on_node_begin(const std::string& node) override;
  void on_node_end() override;
  // SavePolicy
  autograd::Packed pack(const Tensor& t, const autograd::SaveInfo& info) override;
  Tensor unpack(autograd::Packed& p, const autograd::SaveInfo& info) override;
  void on_scope(autograd::ScopeEvent e, autograd::Phase phase, const std::string& path) override;
  bool wants_segment(const std::string&) override { return false; }
  bool prefers_lean(const char* op) override { return opt_.lean_variants || inner_->prefers_lean(op); }

 private:
  using Clock = std::chrono::steady_clock;
  double lap();  // seconds since the previous event
  int32_t block_index(const std::string& block_path);
  int32_t block_of_scope(const std::string& scope) const;
  uint64_t temp_since_reset() const;

  std::shared_ptr<autograd::SavePolicy> inner_;
  TracerOptions opt_;
  StepTrace trace_;
  Clock::time_point last_;
  bool backward_ = false;
  bool in_node_ = false;
  std::string backward_scope_;
  std::vector<uint64_t> ids_after_;  // per forward op: StorageImpl::next_id() once it ran
  uint64_t ids_at_begin_ = 0;        // storages below it existed before the step (its inputs)
  std::vector<char> external_;       // per tensor: made before the step
  std::unordered_map<uint64_t, int32_t> tensor_of_storage_;
  std::map<std::string, int32_t> block_ids_;
  std::map<std::string, int32_t> scope_blocks_;
};

}  // namespace strata::memory::planner
