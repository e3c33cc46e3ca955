#include "examples/common/data_parallel.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "examples/common/adamw_groups.h"
#include "examples/common/checkpointing.h"
#include "examples/common/trainer_common.pb.h"
#include "examples/common/trainer_loop.h"

namespace strata::examples {

int zero_stage(const DataParallelConfig& c) {
  STRATA_CHECK(c.zero_stage() >= 0 && c.zero_stage() <= 3, ValueError, "--zero-stage: ", c.zero_stage(),
               " is not a ZeRO stage (0, 1, 2 or 3)");
  STRATA_CHECK(!c.zero1() || !c.has_zero_stage() || c.zero_stage() == 1, ValueError,
               "--zero1 is --zero-stage 1, and --zero-stage ", c.zero_stage(),
               " is given too: pass one of them");
  return c.zero1() ? 1 : c.zero_stage();
}

std::shared_ptr<dist::ProcessGroup> join_ranks(const DataParallelConfig& c, const dist::LaunchEnv& env,
                                               Device device) {
  const int stage = zero_stage(c);
  const std::string flag = c.zero1() ? "--zero1" : "--zero-stage " + std::to_string(stage);
  STRATA_CHECK(stage == 0 || env.launched(), ValueError, flag, " shards the optimizer's state",
               stage == 2   ? " and the gradients"
               : stage == 3 ? ", the gradients and the parameters"
                            : "",
               " across ranks, and this run has one process: start it under "
               "mpirun with 2 or more ranks, or drop ",
               flag);
  if (!env.launched()) return nullptr;
  const dist::ProcessGroupOptions options{
      .timeout = std::chrono::milliseconds(int64_t(c.collective_timeout() * 1000))};
  return device.is_cuda() && dist::nccl_available() ? dist::make_nccl_group(device.index, options)
                                                    : dist::make_mpi_group(options);
}

DataParallel::DataParallel(std::shared_ptr<dist::ProcessGroup> group, std::shared_ptr<nn::Module> model,
                           const DataParallelConfig& c)
    : group_(std::move(group)),
      bucket_mb_(c.bucket_mb()),
      timeout_s_(c.collective_timeout()),
      zero_stage_(examples::zero_stage(c)) {
  if (group_)
    ddp_ = std::make_unique<dist::DistributedDataParallel>(
        std::move(model), group_,
        dist::DistributedDataParallelOptions{.bucket_cap_mb = bucket_mb_,
                                             .shard_gradients = zero_stage_ >= 2});
  if (ddp_ && zero_stage_ == 3) {
    for (const Tensor& p : ddp_->parameters())
      STRATA_CHECK(
          p.storage()->pager() == nullptr, ValueError,
          "--zero-stage 3 keeps each rank's share of the weights and gathers them per layer; --weights "
          "and --gradients must then stay on the device");
    sharded_ = std::make_shared<dist::ShardedParameters>(*ddp_);
  }
}

void DataParallel::with_whole_parameters(const std::function<void()>& fn) const {
  if (!sharded_) return fn();
  sharded_->gather_all();
  fn();
  sharded_->release_all();
}

void refuse_zero_stage_3(const DataParallelConfig& c, const char* trainer) {
  STRATA_CHECK(zero_stage(c) != 3, ValueError, trainer,
               ": --zero-stage 3 is train_gpt's for now (its evaluation and checkpoints gather the sharded "
               "weights on every rank); use --zero-stage 2");
}

void DataParallel::micro_batch(int64_t micro, int64_t accum) {
  if (ddp_) ddp_->set_gradient_sync(micro + 1 == accum);
}

double DataParallel::finish(double loss) {
  if (!ddp_) return loss;
  ddp_->finish_gradient_sync();
  if (finished_++ > 0) {
    const dist::GradSyncStats s = ddp_->last_sync_stats();
    comm_ += s.comm_seconds, exposed_ += s.exposed_seconds;
  }
  return group_->all_reduce_scalar(loss, dist::ReduceOp::Avg);
}

std::string DataParallel::describe() const {
  if (!group_) return "";
  if (zero_stage_ == 3)
    return field(
        "data parallel: %d ranks (%s), parameters sharded and gathered per layer, gradients reduce-scattered "
        "per parameter, the optimizer's state sharded (ZeRO-3), collective timeout %.0f s",
        world(), group_->backend_name(), timeout_s_);
  if (zero_stage_ == 2)
    return field(
        "data parallel: %d ranks (%s), gradients reduce-scattered per parameter and sharded with the "
        "optimizer's state (ZeRO-2), collective timeout %.0f s",
        world(), group_->backend_name(), timeout_s_);
  return field("data parallel: %d ranks (%s), buckets of %.1f MB%s, collective timeout %.0f s", world(),
               group_->backend_name(), bucket_mb_,
               zero_stage_ == 1 ? ", the optimizer's state sharded (ZeRO-1)" : "", timeout_s_);
}

std::string DataParallel::timing() const {
  if (!group_) return "";
  const double n = double(std::max<int64_t>(finished_ - 1, 1));
  return field(
      "; %s %.1f ms/step, %.1f ms of it exposed after backward (%.0f%% hidden)",
      zero_stage_ >= 2 ? "reduce-scatter" : "all-reduce", 1e3 * comm_ / n, 1e3 * exposed_ / n,
      100.0 * dist::GradSyncStats{.comm_seconds = comm_, .exposed_seconds = exposed_}.hidden_fraction());
}

io::CheckpointState checkpoint_ranks(const RunRecord& run, int64_t step, const io::DataCursor& data,
                                     const nn::Module& model, optim::Optimizer& opt, int world) {
  auto* zero = dynamic_cast<dist::ZeroRedundancyOptimizer*>(&opt);
  io::CheckpointState st = zero ? checkpoint_state(run, step, data, model, zero->consolidated_state_dict())
                                : checkpoint_state(run, step, data, model, opt);
  st.metadata["world_size"] = std::to_string(world);
  st.metadata["zero1"] = zero && zero->stage() == 1 ? "true" : "false";
  st.metadata["zero_stage"] = std::to_string(zero ? zero->stage() : 0);
  return st;
}

void load_optimizer_state(optim::Optimizer& opt, const nn::StateDict& st) {
  if (auto* zero = dynamic_cast<dist::ZeroRedundancyOptimizer*>(&opt))
    zero->load_consolidated_state_dict(st);
  else
    opt.load_state_dict(st);
}

io::CheckpointState TrainerAdamW::checkpoint(const RunRecord& run, int64_t step, const io::DataCursor& data,
                                             const nn::Module& model, int world) const {
  return checkpoint_ranks(run, step, data, model, *opt, world);
}

void TrainerAdamW::load(const nn::StateDict& st) const { load_optimizer_state(*opt, st); }

TrainerAdamW make_trainer_adamw(const std::vector<Tensor>& parameters, const LrScheduleConfig& schedule,
                                const OptimizerConfig& settings, double eps, const DataParallel& ranks) {
  auto [groups, defaults] = adamw_groups(parameters, schedule, settings, eps);
  if (ranks.zero_stage() == 0) return {std::make_unique<optim::AdamW>(std::move(groups), defaults)};
  return {dist::ZeroRedundancyOptimizer::adamw(std::move(groups), defaults, ranks.shared_group(),
                                               ranks.zero_stage() >= 2 ? ranks.ddp() : nullptr,
                                               ranks.sharded_parameters())};
}

io::CheckpointState resume_ranks(const std::string& dir, const RunRecord& run, nn::Module& model,
                                 const DataParallel& ranks) {
  io::CheckpointState st = restore_checkpoint(dir, model, run);
  // ZeRO-3: load_state_dict hands each weight back once written (release_paged), so each rank's
  // span holds what it read.
  if (!ranks.lead()) return st;
  std::printf("resumed from %s at step %ld\n", dir.c_str(), long(st.step));
  const auto saved = st.metadata.find("world_size");
  if (saved != st.metadata.end() && saved->second != std::to_string(ranks.world()))
    std::printf(
        "  the checkpoint was written by %s rank(s), resuming on %d: weights, optimizer state and data "
        "position carry over; the global batch is now %d x the per-rank batch\n",
        saved->second.c_str(), ranks.world(), ranks.world());
  return st;
}

}  // namespace strata::examples
