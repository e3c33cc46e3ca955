#include "examples/common/data_parallel.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "examples/common/adamw_groups.h"
#include "examples/common/checkpointing.h"
#include "examples/common/trainer_common.pb.h"
#include "examples/common/trainer_loop.h"

namespace strata::examples {

std::shared_ptr<dist::ProcessGroup> join_ranks(const DataParallelConfig& c, const dist::LaunchEnv& env,
                                               Device device) {
  STRATA_CHECK(!c.zero1() || env.launched(), ValueError,
               "--zero1 shards AdamW's state across ranks, and this run has one process: start it under "
               "mpirun with 2 or more ranks, or drop --zero1");
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
      zero1_(c.zero1()) {
  if (group_)
    ddp_ = std::make_unique<dist::DistributedDataParallel>(
        std::move(model), group_, dist::DistributedDataParallelOptions{.bucket_cap_mb = bucket_mb_});
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
  return field("data parallel: %d ranks (%s), buckets of %.1f MB%s, collective timeout %.0f s", world(),
               group_->backend_name(), bucket_mb_, zero1_ ? ", AdamW's state sharded (ZeRO-1)" : "",
               timeout_s_);
}

std::string DataParallel::timing() const {
  if (!group_) return "";
  const double n = double(std::max<int64_t>(finished_ - 1, 1));
  return field(
      "; all-reduce %.1f ms/step, %.1f ms of it exposed after backward (%.0f%% hidden)", 1e3 * comm_ / n,
      1e3 * exposed_ / n,
      100.0 * dist::GradSyncStats{.comm_seconds = comm_, .exposed_seconds = exposed_}.hidden_fraction());
}

io::CheckpointState TrainerAdamW::checkpoint(const RunRecord& run, int64_t step, const io::DataCursor& data,
                                             const nn::Module& model, int world) const {
  io::CheckpointState st = zero ? checkpoint_state(run, step, data, model, zero->consolidated_state_dict())
                                : checkpoint_state(run, step, data, model, *opt);
  st.metadata["world_size"] = std::to_string(world);
  st.metadata["zero1"] = zero ? "true" : "false";
  return st;
}

void TrainerAdamW::load(const nn::StateDict& st) const {
  if (zero)
    zero->load_consolidated_state_dict(st);
  else
    opt->load_state_dict(st);
}

TrainerAdamW make_trainer_adamw(const std::vector<Tensor>& parameters, const LrScheduleConfig& schedule,
                                const OptimizerConfig& settings, double eps, const DataParallelConfig& c,
                                const DataParallel& ranks) {
  auto [groups, defaults] = adamw_groups(parameters, schedule, settings, eps);
  TrainerAdamW o;
  if (!c.zero1()) {
    o.opt = std::make_unique<optim::AdamW>(std::move(groups), defaults);
    return o;
  }
  auto z = dist::ZeroRedundancyOptimizer::adamw(std::move(groups), defaults, ranks.shared_group());
  o.zero = z.get();
  o.opt = std::move(z);
  return o;
}

io::CheckpointState resume_ranks(const std::string& dir, const RunRecord& run, nn::Module& model,
                                 const DataParallel& ranks) {
  io::CheckpointState st = restore_checkpoint(dir, model, run);
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
