// BatchNorm2d: per-channel batch normalization of NCHW tensors with running statistics, as
// torch.nn.BatchNorm2d (parameters weight, bias; buffers running_mean, running_var,
// num_batches_tracked); with a process group, torch.nn.SyncBatchNorm.
#pragma once

#include <cstdint>
#include <memory>

#include "strata/dist/process_group.h"
#include "strata/nn/module.h"

namespace strata::nn {

struct BatchNormOptions {
  explicit BatchNormOptions(int64_t num_features) : num_features_(num_features) {}
  BatchNormOptions& eps(double e) { eps_ = e; return *this; }
  BatchNormOptions& momentum(double m) { momentum_ = m; return *this; }
  BatchNormOptions& affine(bool a) { affine_ = a; return *this; }
  BatchNormOptions& track_running_stats(bool t) { track_ = t; return *this; }
  BatchNormOptions& dtype(DType d) { dtype_ = d; return *this; }
  int64_t num_features() const { return num_features_; }
  double eps() const { return eps_; }
  double momentum() const { return momentum_; }
  bool affine() const { return affine_; }
  bool track_running_stats() const { return track_; }
  DType dtype() const { return dtype_; }

 private:
  int64_t num_features_;
  double eps_ = 1e-5;
  double momentum_ = 0.1;
  bool affine_ = true;
  bool track_ = true;
  DType dtype_ = DType::f32;
};

class BatchNorm2d : public Module {
 public:
  explicit BatchNorm2d(const BatchNormOptions& options);
  explicit BatchNorm2d(int64_t num_features) : BatchNorm2d(BatchNormOptions(num_features)) {}
  // x [N, C, H, W]. Training (or without running statistics): batch statistics, and the
  // running ones updated (once per forward: not again when a recompute segment re-runs it).
  // Eval: the running statistics.
  Tensor forward(const Tensor& x) override;
  // weight = 1, bias = 0, running_mean = 0, running_var = 1, num_batches_tracked = 0.
  void reset_parameters();
  const BatchNormOptions& options() const { return options_; }

  // SyncBatchNorm: with a group of more than one rank, training statistics are those of every
  // rank's batch together (per-channel sums and counts summed over the ranks, forward and
  // backward), so N ranks of batch B normalize as one process of batch N * B. Every rank's
  // forward and backward then take part in collectives, in the same order on every rank. Null:
  // each rank's own batch (the default).
  void set_process_group(std::shared_ptr<dist::ProcessGroup> group) { group_ = std::move(group); }
  const std::shared_ptr<dist::ProcessGroup>& process_group() const { return group_; }

  Tensor weight, bias;                                     // [C]; undefined without affine
  Tensor running_mean, running_var, num_batches_tracked;  // [C], [C], i64 []; undefined without tracking

 private:
  Tensor forward_synced(const Tensor& x);

  BatchNormOptions options_;
  std::shared_ptr<dist::ProcessGroup> group_;
};

// torch.nn.SyncBatchNorm.convert_sync_batchnorm: gives every BatchNorm2d under `root` (itself
// included) the group; returns how many it found. Parameters and state-dict keys stay as they are.
int64_t convert_sync_batchnorm(Module& root, const std::shared_ptr<dist::ProcessGroup>& group);

}  // namespace strata::nn
