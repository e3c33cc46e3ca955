// DataParallel: a trainer's ranks under mpirun (process group, gradient averaging, ZeRO stages 1-2,
// checkpoints).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "examples/common/checkpointing.h"
#include "strata/core/device.h"
#include "strata/dist/ddp.h"
#include "strata/dist/process_group.h"
#include "strata/dist/zero.h"
#include "strata/io/checkpoint/checkpoint.h"
#include "strata/nn/module.h"
#include "strata/optim/optimizer.h"

namespace strata::examples {

class DataParallelConfig;
class LrScheduleConfig;
class OptimizerConfig;

// --zero-stage (or --zero1): 0, 1, 2 or 3; ValueError naming the flags otherwise.
int zero_stage(const DataParallelConfig& c);
// ValueError naming `trainer` for --zero-stage 3 (a trainer whose rank-0 work does not gather the
// sharded weights on every rank first).
void refuse_zero_stage_3(const DataParallelConfig& c, const char* trainer);

// Under mpirun, this rank's process group: gradients on a GPU all-reduce through NCCL (bootstrapped
// over MPI), host memory's through MPI. Null in one process, where a ZeRO stage is refused (nothing
// to shard over).
std::shared_ptr<dist::ProcessGroup> join_ranks(const DataParallelConfig& c, const dist::LaunchEnv& env,
                                               Device device);

// A trainer's ranks. Each rank trains on its share of every global batch (its loader takes batches
// rank, rank + N, ...); DistributedDataParallel broadcasts rank 0's weights and averages the
// gradients in buckets during backward (ZeRO-2: reduce-scatters each parameter's, and each rank
// keeps its span), so N ranks step as one process with --grad-accum N does.
// In one process (no group) there is nothing to average and every call below does nothing.
class DataParallel {
 public:
  DataParallel() = default;
  // `model` is on its device; under mpirun its weights become rank 0's.
  DataParallel(std::shared_ptr<dist::ProcessGroup> group, std::shared_ptr<nn::Module> model,
               const DataParallelConfig& c);

  dist::ProcessGroup* group() const { return group_.get(); }
  const std::shared_ptr<dist::ProcessGroup>& shared_group() const { return group_; }
  int rank() const { return group_ ? group_->rank() : 0; }
  int world() const { return group_ ? group_->size() : 1; }
  // Rank 0: logs, evaluates and writes checkpoints.
  bool lead() const { return rank() == 0; }
  int zero_stage() const { return zero_stage_; }
  // Null in one process.
  const dist::DistributedDataParallel* ddp() const { return ddp_.get(); }
  // ZeRO-3's sharded parameters (null below stage 3 and in one process).
  dist::ShardedParameters* sharded_parameters() const { return sharded_.get(); }
  // Runs `fn` with every parameter whole on this rank: under ZeRO-3 every rank gathers them first
  // (a collective: every rank calls it, and `fn` may then do rank 0's work alone) and drops them
  // after; otherwise just `fn`.
  void with_whole_parameters(const std::function<void()>& fn) const;

  // Before the backward of micro-batch `micro` of `accum`: only the last one all-reduces (the
  // gradients accumulated so far); the others accumulate locally.
  void micro_batch(int64_t micro, int64_t accum);
  // After the step's last backward: waits for the averaged gradients. Returns `loss` averaged
  // over the ranks.
  double finish(double loss);

  // "data parallel: 2 ranks (mpi), buckets of 25.0 MB, collective timeout 300 s" (empty in one process).
  std::string describe() const;
  // "; all-reduce X ms/step, Y ms of it exposed after backward (Z% hidden)" over the steps after the
  // first (empty in one process).
  std::string timing() const;

 private:
  std::shared_ptr<dist::ProcessGroup> group_;
  std::unique_ptr<dist::DistributedDataParallel> ddp_;
  std::shared_ptr<dist::ShardedParameters> sharded_;
  double bucket_mb_ = 0, timeout_s_ = 0;
  int zero_stage_ = 0;
  int64_t finished_ = 0;           // steps synchronized
  double comm_ = 0, exposed_ = 0;  // seconds over the steps after the first
};

// What a checkpoint at `step` holds (checkpoint_state), with the world size and ZeRO stage in its
// metadata; under ZeRO the optimizer's unsharded state is gathered from every rank, so every rank
// calls it (rank 0 writes it).
io::CheckpointState checkpoint_ranks(const RunRecord& run, int64_t step, const io::DataCursor& data,
                                     const nn::Module& model, optim::Optimizer& opt, int world);
// Loads a checkpoint's optimizer state into `opt` (under ZeRO: this rank's shard of it).
void load_optimizer_state(optim::Optimizer& opt, const nn::StateDict& st);

// AdamW over the trainers' groups (adamw_groups.h), or with --zero-stage 1 or 2 AdamW whose state
// (and with 2, whose gradients) are sharded across the ranks. Its checkpointed state is the
// unsharded optimizer's either way.
struct TrainerAdamW {
  std::unique_ptr<optim::Optimizer> opt;

  // What a checkpoint at `step` holds, with the world size and ZeRO stage in its metadata;
  // collective under ZeRO: every rank calls it.
  io::CheckpointState checkpoint(const RunRecord& run, int64_t step, const io::DataCursor& data,
                                 const nn::Module& model, int world) const;
  void load(const nn::StateDict& st) const;
};

TrainerAdamW make_trainer_adamw(const std::vector<Tensor>& parameters, const LrScheduleConfig& schedule,
                                const OptimizerConfig& settings, double eps, const DataParallel& ranks);

// --resume: the checkpoint in `dir`'s weights into `model` (restore_checkpoint); returns the checkpoint
// for its optimizer state, step and data cursor. The cursor counts batches of the global order, so it
// is valid on any world size; rank 0 says so when the world size changed.
io::CheckpointState resume_ranks(const std::string& dir, const RunRecord& run, nn::Module& model,
                                 const DataParallel& ranks);
// The same with AdamW's state loaded into `opt` and the data position into `loader` (anything with
// set_cursor); returns the checkpoint's step.
template <class Loader>
int64_t resume_ranks(const std::string& dir, const RunRecord& run, nn::Module& model, const TrainerAdamW& opt,
                     Loader& loader, const DataParallel& ranks) {
  const io::CheckpointState st = resume_ranks(dir, run, model, ranks);
  opt.load(st.optimizer);
  loader.set_cursor(st.data);
  return st.step;
}

}  // namespace strata::examples
