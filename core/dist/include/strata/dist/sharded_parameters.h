// ShardedParameters: ZeRO stage 3's parameters (Rajbhandari et al., "ZeRO", section 5.3). Each rank
// keeps only its span of every parameter; a parameter's whole tensor exists while it is used.
//
//   dist::DistributedDataParallel ddp(model, pg, {.shard_gradients = true});  // rank 0's weights
//   dist::ShardedParameters params(ddp);             // keeps this rank's spans, frees the rest
//   auto opt = dist::ZeroRedundancyOptimizer::adamw(groups, defaults, pg, &ddp, &params);
//   autograd::SavePolicyGuard g(params.wrap(nullptr));  // a scope's parameters go at its end
//   model->loss(x, y).backward();                     // each touch gathers; gradients reduce-scatter
//   ddp.finish_gradient_sync();
//   opt->step();                                      // updates the spans, drops every gathered copy
//
// The spans are the ones ZeRO-2 reduce-scatters the gradients into (dist::shard_span with the
// DDP's alignment), so the optimizer updates span i from gradient span i with no copy. A parameter
// away from its device is gathered when anything touches its bytes (StorageImpl::data(): every
// rank all-gathers the spans), and dropped again when the innermost module scope that gathered it
// ends (forward, backward or recompute), or by release_all(). Gathers are collectives issued on the
// calling thread, so every rank must touch the parameters in the same order: forward and backward
// do, while work one rank does alone (rank 0's evaluation, a checkpoint's model state_dict on one
// rank) must first call gather_all() on every rank, and release_all() after.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "strata/autograd/saved_tensor.h"
#include "strata/core/storage_pager.h"
#include "strata/dist/ddp.h"

namespace strata::dist {

class ShardedParameters final : public StoragePager, public std::enable_shared_from_this<ShardedParameters> {
 public:
  // Keeps this rank's span of each of `ddp`'s parameters (built with shard_gradients) and frees
  // the whole tensors. The parameters must be contiguous and own their storage. Every rank calls
  // it, after the DDP's construction has given them rank 0's weights.
  explicit ShardedParameters(const DistributedDataParallel& ddp);
  // Gathers every parameter back, whole and unpaged (collective: every rank destroys its own).
  ~ShardedParameters() override;
  ShardedParameters(const ShardedParameters&) = delete;
  ShardedParameters& operator=(const ShardedParameters&) = delete;

  // This rank's span of parameter i (ddp.parameters() order), flattened: [len] elements, what
  // ZeroRedundancyOptimizer updates. Written there, it reaches the whole tensor at the next gather.
  const Tensor& shard(size_t i) const { return shards_[i]; }
  size_t size() const { return shards_.size(); }

  // StoragePager. fault_in is a collective (an all-gather of parameter s's spans).
  void fault_in(StorageImpl& s) override;
  // Drops parameter s's whole tensor; bytes written into it since its gather go to this rank's
  // span first (a loaded checkpoint, a broadcast).
  void page_out(StorageImpl& s) override;

  // Gathers every parameter not on its device, in parameter order (collective).
  void gather_all();
  // Drops every gathered parameter without writing it back (after the optimizer updated the spans,
  // the whole tensors are stale).
  void release_all();
  // A SavePolicy that is `inner` (null: keep everything) and drops the parameters a module scope
  // gathered when that scope ends.
  std::shared_ptr<autograd::SavePolicy> wrap(std::shared_ptr<autograd::SavePolicy> inner);
  void on_scope(autograd::ScopeEvent event);

  // Parameters gathered now, and all-gathers issued so far.
  size_t gathered() const;
  int64_t gathers() const;

 private:
  struct Param {
    Tensor tensor;
    Storage storage;
    ShardSpan span;
    bool whole = false;       // gathered, on the device
    uint64_t version_at = 0;  // the storage's version when gathered
  };
  void gather(Param& p);
  void drop(Param& p, bool write_back);

  ProcessGroup& group_;
  std::vector<Param> params_;
  std::vector<Tensor> shards_;
  std::unordered_map<const StorageImpl*, size_t> index_;
  // Per open module scope, the parameters gathered while it was the innermost.
  std::vector<std::vector<size_t>> scopes_;
  int64_t gathers_ = 0;
  mutable std::recursive_mutex mu_;
};

}  // namespace strata::dist
