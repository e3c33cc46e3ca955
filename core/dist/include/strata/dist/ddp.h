// DistributedDataParallel: gradient averaging across ranks for an nn::Module
// (torch.nn.parallel.DistributedDataParallel's reducer, in C++).
//
//   dist::DistributedDataParallel ddp(model, pg, {.bucket_cap_mb = 25});  // broadcasts rank 0's weights
//   for (int64_t micro = 0; micro < accum; ++micro) {
//     dist::NoSyncGuard no_sync(ddp, micro + 1 < accum);  // accumulate locally, no traffic
//     model->loss(x, y).backward();    // buckets are all-reduced as their gradients arrive
//   }
//   ddp.finish_gradient_sync();        // waits for the buckets; every .grad() is the average
//   opt.step();
//
// With shard_gradients (ZeRO-2), each parameter's gradient is reduce-scattered on its own as it
// becomes ready, launched in reverse parameter order on every rank; once launched, the parameter
// drops its full gradient, and each one is released as soon as its collective completes. After
// finish_gradient_sync every .grad() is undefined and gradient_shard(i) holds this rank's span of
// the average (ZeroRedundancyOptimizer::adamw with this DDP updates from those spans).
//
// Parameters are grouped into buckets of about bucket_cap_mb in reverse registration order
// (gradients arrive roughly in that order in backward; the first bucket is capped at
// first_bucket_cap_mb so communication starts early, as in PyTorch). A post-accumulate-grad
// hook on every parameter copies its gradient into its bucket; when a bucket is complete it is
// all-reduced asynchronously (mean), overlapping with the rest of backward. Buckets are
// launched in index order on every rank (a bucket that completes early waits for the ones
// before it), so all ranks issue the same collectives in the same order. Parameters that got
// no gradient in a backward (unused in forward) are reduced as zeros at finish_gradient_sync.
// The hooks only see accumulated gradients, so any tensor cache policy works unchanged.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "strata/dist/process_group.h"
#include "strata/nn/module.h"
#include "strata/optim/clip_grad.h"

namespace strata::dist {

struct DistributedDataParallelOptions {
  double bucket_cap_mb = 25.0;
  double first_bucket_cap_mb = 1.0;
  bool broadcast_parameters = true;  // copy rank 0's parameters and buffers at construction
  // ZeRO stage 2: reduce-scatter each parameter's gradient instead of all-reducing it, so that a
  // rank keeps only its share of every gradient (see gradient_shard) and no bucket copy of them.
  // bucket_cap_mb then bounds the gradient bytes in flight: past it, backward waits for the
  // oldest collective and releases its gradient.
  bool shard_gradients = false;
  // Spans start on multiples of this many elements (see shard_span): clip_grad_norm_'s block, so
  // that ZeroRedundancyOptimizer::clip_grad_norm_ gives the unsharded norm bit for bit.
  int64_t shard_alignment = optim::kClipBlock;
};

// Which elements of a flattened parameter of `numel` elements rank `rank` of `world` owns under
// ZeRO-2: [begin, begin + len), in chunks of ceil(numel / world) rounded up to a multiple of
// `align`, at most numel (PyTorch FSDP2's per-parameter split; the last ranks' spans may be short
// or empty, and a parameter of at most `align` elements is rank 0's alone).
struct ShardSpan {
  int64_t begin = 0, len = 0, chunk = 0;
};
ShardSpan shard_span(int64_t numel, int rank, int world, int64_t align = 1);

// One step of a gradient synchronization, recorded for tests and traces.
struct GradSyncEvent {
  enum Kind { GradReady, BucketLaunched, BucketDone } kind;
  int64_t index;  // parameter index (GradReady) or bucket index
};

// Timing of the last finish_gradient_sync (seconds).
struct GradSyncStats {
  double comm_seconds = 0;     // sum of the buckets' collective run times (communication thread)
  double exposed_seconds = 0;  // time finish_gradient_sync waited for them after backward
  // Fraction of communication hidden behind backward: 1 - exposed / comm (clamped to [0, 1]).
  double hidden_fraction() const;
};

class DistributedDataParallel {
 public:
  DistributedDataParallel(std::shared_ptr<nn::Module> module, std::shared_ptr<ProcessGroup> group,
                          DistributedDataParallelOptions options = {});
  ~DistributedDataParallel();
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  nn::Module& module() { return *module_; }
  ProcessGroup& group() { return *group_; }
  const ProcessGroup& group() const { return *group_; }

  // While off, backward only accumulates gradients locally (gradient accumulation); the
  // backward after it is switched back on all-reduces the accumulated sums.
  void set_gradient_sync(bool on) { sync_enabled_ = on; }
  bool gradient_sync() const { return sync_enabled_; }

  // Launches the buckets not launched yet, waits for all of them and writes the averaged
  // gradients into every parameter's .grad(). Call once after the last backward of a step.
  void finish_gradient_sync();

  // The parameters DDP reduces (requires_grad, in module order) and, per bucket, the indices
  // into them (bucket 0 holds the last parameters).
  const std::vector<Tensor>& parameters() const;
  // shard_gradients only: after finish_gradient_sync, this rank's span (shard_span) of parameter
  // i's averaged gradient, flattened: [len] elements.
  bool shards_gradients() const;
  ShardSpan gradient_span(int64_t i) const;  // this rank's span of parameter i
  int64_t shard_alignment() const;
  Tensor gradient_shard(int64_t i) const;
  std::vector<std::vector<int64_t>> bucket_assignment() const;
  // Events of the last (or current) synchronization, in the order they happened.
  std::vector<GradSyncEvent> last_sync_events() const;
  GradSyncStats last_sync_stats() const;

  struct Reducer;  // internal

 private:
  std::shared_ptr<nn::Module> module_;
  std::shared_ptr<ProcessGroup> group_;
  std::shared_ptr<Reducer> reducer_;  // hooks hold it weakly
  bool sync_enabled_ = true;
};

// Turns gradient sync off for its lifetime when `active` (PyTorch's ddp.no_sync()).
class NoSyncGuard {
 public:
  explicit NoSyncGuard(DistributedDataParallel& ddp, bool active = true)
      : ddp_(ddp), previous_(ddp.gradient_sync()) {
    if (active) ddp_.set_gradient_sync(false);
  }
  ~NoSyncGuard() { ddp_.set_gradient_sync(previous_); }
  NoSyncGuard(const NoSyncGuard&) = delete;
  NoSyncGuard& operator=(const NoSyncGuard&) = delete;

 private:
  DistributedDataParallel& ddp_;
  bool previous_;
};

// Assigns parameters (given by size in bytes, dtype and device) to buckets: reverse order,
// a new bucket when the cap would be exceeded or the dtype/device changes; a parameter
// larger than the cap gets a bucket of its own. Exposed for tests.
std::vector<std::vector<int64_t>> assign_buckets(const std::vector<Tensor>& params, size_t bucket_cap_bytes,
                                                 size_t first_bucket_cap_bytes);

}  // namespace strata::dist
