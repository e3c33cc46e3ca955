// Simulator: discrete-event replay of a StepTrace under a per-tensor plan on a HardwareProfile:
// the compute stream, the copy channels each way (host link or memcpy), NVMe reads and writes;
// predicts step time, stall and recompute time, the activation and step peaks, and bytes per tier.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "strata/memory/cache_policy.h"
#include "strata/memory/plan.h"
#include "strata/memory/planner/hardware.h"
#include "strata/memory/planner/trace.h"

namespace strata::memory::planner {

// What to do with each saved tensor of a trace, and which blocks run as recompute segments.
struct SimPlan {
  std::vector<CacheAction> tensors;  // per trace tensor (Recompute: op-level, needs op_recomputable)
  std::vector<bool> segments;        // per trace block: saves only its inputs, re-runs in backward
  // Per tensor: the op at whose start its load is issued (-1: the cache's rule: when backward
  // enters block b it loads blocks b-1 .. b-prefetch_blocks; at its start, the last ones).
  std::vector<int32_t> prefetch_at;
  size_t prefetch_blocks = 1;

  static SimPlan keep_all(const StepTrace& trace);
};

// The cache's Plan (block paths and tensor keys) for this trace's tensors and blocks.
SimPlan sim_plan_from(const StepTrace& trace, const Plan& plan);

struct SimResult {
  double step_seconds = 0;       // compute, recompute, stalls and (on a CPU) compute lost to I/O threads
  double compute_seconds = 0;    // the trace's own ops
  double recompute_seconds = 0;  // segments re-run and op-level recomputes
  double stall_seconds = 0;      // backward waiting for loads
  double segment_recompute_seconds = 0;  // ... of recompute_seconds: segments re-run
  double forward_seconds = 0;    // when backward starts (the activation peak is usually here)
  // Copy channel busy time (device to host or to the drive; back), and what forward's end left
  // unstored: the offload's limit is bandwidth x forward time.
  double store_busy_seconds = 0, load_busy_seconds = 0;
  uint64_t stored_by_forward_end = 0;
  double io_cpu_seconds = 0;  // compute time lost to the I/O threads' copies and checksums (a CPU)
  uint64_t activation_peak = 0;  // saved tensors resident (recompute transients included)
  uint64_t step_peak = 0;        // + resident state + op workspace (+ the host pool on a CPU)
  uint64_t host_pool_peak = 0;
  uint64_t activation_and_pool_peak = 0;  // both at once (on a CPU they share the RAM)
  uint64_t host_bytes_written = 0, host_bytes_read = 0;
  uint64_t nvme_bytes_written = 0, nvme_bytes_read = 0;
  // Resident saved-tensor bytes after each change: (seconds from the step's start, bytes).
  std::vector<std::pair<double, uint64_t>> activation_curve;
};

// Throws ValueError when the plan does not fit the trace (sizes, or op-level recompute of a
// tensor without a recipe) or asks for a tier the profile lacks (NVMe without drives).
// `curve`: record activation_curve (the planner's inner loop skips it).
SimResult simulate(const StepTrace& trace, const SimPlan& plan, const HardwareProfile& hw, bool curve = true);

}  // namespace strata::memory::planner
