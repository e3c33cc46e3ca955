// ZeroRedundancyOptimizer: ZeRO stage 1 (Rajbhandari et al., "ZeRO: Memory Optimizations
// Toward Training Trillion Parameter Models", 2020, section 5.1): each rank keeps the
// optimizer state of, and updates, only its 1/N shard of the parameters; the updated
// parameters are then all-gathered so every rank holds all of them again.
//
//   dist::DistributedDataParallel ddp(model, pg);          // full averaged gradients
//   auto opt = dist::ZeroRedundancyOptimizer::adamw(groups, optim::AdamWOptions(6e-4), pg);
//   ... backward ...; ddp.finish_gradient_sync(); opt->step();
//
// The shards are contiguous ranges of the parameters laid end to end in parameters() order
// (DeepSpeed's flat partition, so shards are balanced to one element), padded to a
// multiple of the world size. A parameter cut by a shard boundary is updated in two pieces;
// elementwise optimizers (AdamW, SGD) give the same bits as the unsharded optimizer.
// Checkpoints use consolidated_state_dict(), which has exactly the unsharded optimizer's
// state_dict() format, so a checkpoint resumes on any world size, sharded or not.
//
// ZeRO stage 2 (section 5.2): given a DistributedDataParallel built with shard_gradients, the
// gradients are reduce-scattered during backward and each rank keeps only its share. The
// partition is then per parameter (dist::shard_span: each parameter cut in world chunks, as
// PyTorch's FSDP2 does) rather than the flat one, so that a parameter's share is ready as soon as
// its own collective is; this rank updates its span of every parameter from its gradient span,
// and the parameters are all-gathered as in stage 1. Clip with clip_grad_norm_(), which sums the
// squares of every rank's spans.
//
//   dist::DistributedDataParallel ddp(model, pg, {.shard_gradients = true});
//   auto opt = dist::ZeroRedundancyOptimizer::adamw(groups, optim::AdamWOptions(6e-4), pg, &ddp);
//   ... backward ...; ddp.finish_gradient_sync(); opt->clip_grad_norm_(1.0); opt->step();
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "strata/dist/ddp.h"
#include "strata/dist/process_group.h"
#include "strata/dist/sharded_parameters.h"
#include "strata/optim/adamw.h"
#include "strata/optim/optimizer.h"
#include "strata/optim/sgd.h"

namespace strata::dist {

class ZeroRedundancyOptimizer final : public optim::Optimizer {
 public:
  // Builds the optimizer that updates this rank's pieces (each group's options are those of
  // the group the piece comes from).
  using LocalOptimizerFactory = std::function<std::unique_ptr<optim::Optimizer>(std::vector<optim::ParamGroup>)>;

  // `elementwise_state`: the local optimizer's per-element state names (AdamW: exp_avg,
  // exp_avg_sq; SGD: momentum_buffer), gathered by consolidated_state_dict(); `counts_steps`: its
  // state also has a per-parameter "step" (AdamW's), handled separately.
  // `sharded_gradients`: ZeRO-2, the gradients of `ddp` (built with shard_gradients, over the
  // same group and holding every parameter given here); it must outlive the optimizer.
  // `sharded_parameters`: ZeRO-3, the same DDP's parameters kept as spans (ShardedParameters, made
  // from `sharded_gradients`): the pieces are its spans, and step() drops the gathered parameters
  // instead of all-gathering them; it must outlive the optimizer.
  ZeroRedundancyOptimizer(std::vector<optim::ParamGroup> groups, const optim::OptimizerOptions& defaults,
                          std::shared_ptr<ProcessGroup> group, LocalOptimizerFactory make_local,
                          std::vector<std::string> elementwise_state,
                          const DistributedDataParallel* sharded_gradients = nullptr,
                          bool counts_steps = true, ShardedParameters* sharded_parameters = nullptr);
  static std::unique_ptr<ZeroRedundancyOptimizer> adamw(
      std::vector<optim::ParamGroup> groups, const optim::AdamWOptions& defaults,
      std::shared_ptr<ProcessGroup> group, const DistributedDataParallel* sharded_gradients = nullptr,
      ShardedParameters* sharded_parameters = nullptr);
  // SGD (with momentum: its buffer sharded; without: no state).
  static std::unique_ptr<ZeroRedundancyOptimizer> sgd(
      std::vector<optim::ParamGroup> groups, const optim::SGDOptions& defaults,
      std::shared_ptr<ProcessGroup> group, const DistributedDataParallel* sharded_gradients = nullptr,
      ShardedParameters* sharded_parameters = nullptr);

  // 1, 2 or 3.
  int stage() const { return params_ ? 3 : ddp_ ? 2 : 1; }
  // ZeRO-2: torch.nn.utils.clip_grad_norm_ over the gradient spans of every rank (the 2-norm of
  // all of them; a collective); returns the total norm. Stage 1 clips the full gradients.
  double clip_grad_norm_(double max_norm);

  // Updates this rank's shard from the (already averaged) gradients, then all-gathers the
  // parameters (stage 3: drops the gathered ones instead). Collective: every rank calls it.
  void step() override;

  // Stage 1: this rank's range [begin, end) of the flat parameter vector, and its total length.
  std::pair<int64_t, int64_t> shard_range() const { return {shard_begin_, shard_end_}; }
  int64_t total_numel() const { return total_; }
  // The optimizer over this rank's pieces (null when the shard is empty). Its state can go to a
  // StateStore (place_state: ZeRO-Offload's host or NVMe state, per rank).
  const optim::Optimizer* local_optimizer() const { return local_.get(); }
  optim::Optimizer* local_optimizer() { return local_.get(); }

  // The unsharded optimizer's state_dict(), assembled from every rank's shard on the CPU (through
  // one window of staging on the device). Collective.
  optim::TensorDict consolidated_state_dict();
  // Takes this rank's shard of an unsharded state dict (consolidated or from a plain
  // optimizer). Throws ValueError naming missing or mis-shaped entries.
  void load_consolidated_state_dict(const optim::TensorDict& state);

 protected:
  std::vector<std::string> state_names() const override;

 private:
  struct Piece {
    int64_t param;        // index into parameters()
    int64_t begin, len;   // element range within the parameter
    Tensor view;          // 1-D view of the parameter's storage: what the local optimizer updates
  };
  std::vector<Piece> pieces_;
  // All-gathers every rank's pieces (what `source` gives for each of them: 1-D, piece.len) into
  // `dest` (per parameter, flat; undefined: not wanted), window by window.
  void all_gather_pieces(const std::function<Tensor(const Piece&)>& source, const std::vector<Tensor>& dest);
  // Where piece k's elements go in this rank's send buffer.
  int64_t send_offset(const Piece& piece) const;

  std::vector<int64_t> offset_;  // per parameter: see unflatten
  const DistributedDataParallel* ddp_ = nullptr;
  ShardedParameters* params_ = nullptr;  // stage 3
  std::vector<int64_t> ddp_index_;       // stage 2, per parameter: its index among ddp_->parameters()
  std::vector<int> local_group_;   // per outer group: index among the local optimizer's groups, or -1
  int64_t total_ = 0, shard_ = 0, shard_begin_ = 0, shard_end_ = 0;
  std::shared_ptr<ProcessGroup> group_;
  std::unique_ptr<optim::Optimizer> local_;
  std::vector<std::string> elementwise_state_;
  bool counts_steps_ = true;
  // The key whose presence says that parameter i has state (its "step", else its first buffer).
  std::string state_key(size_t i) const;
  // The all-gathers stage at most this many elements per rank at a time.
  static constexpr int64_t kGatherWindow = int64_t(1) << 18;
};

}  // namespace strata::dist
