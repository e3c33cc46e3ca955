// ParamPager: a model's weights and gradients kept, block by block, in host memory or on NVMe
// between uses, and on the device only around the block's forward and backward.
//
// Each planner block's weights come onto the device as its forward starts (the next blocks'
// ahead of time, `prefetch_blocks` deep) and leave as it ends; they come again, in backward order,
// for its backward. A gradient leaves as soon as backward has accumulated it. Everything else that
// touches a paged tensor (an optimizer's update, gradient clipping, a checkpoint) brings it back
// on first touch (StorageImpl::data()) and hands it back with release_paged(). Parameters outside
// every block (embeddings, a final norm, a head) stay on the device.
//
//   auto pager = memory::ParamPager::create(model, device, settings);   // after model.to(device)
//   autograd::SavePolicyGuard guard(pager->wrap(cache));                 // sees every block's scope
//   loss.backward(); opt.step(); pager->end_step();
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "strata/autograd/saved_tensor.h"
#include "strata/core/device.h"
#include "strata/core/storage_pager.h"
#include "strata/nn/module.h"
#include "strata/optim/state_store.h"

namespace strata::memory {

struct ParamPagerSettings {
  optim::StatePlacement weights = optim::StatePlacement::Device;
  optim::StatePlacement gradients = optim::StatePlacement::Device;
  // Where paged weights and gradients live away from the device: one store each, required for a
  // placement other than Device (optim::make_host_state_store, make_nvme_state_store).
  std::shared_ptr<optim::StateStore> weight_store, gradient_store;
  // Blocks whose weights load ahead of the one running (forward and backward).
  size_t prefetch_blocks = 1;
};

struct PagerStats {
  uint64_t weight_bytes_in = 0, weight_bytes_out = 0;      // onto the device / written home
  uint64_t gradient_bytes_in = 0, gradient_bytes_out = 0;  // the same for gradients
  uint64_t demand_loads = 0;  // paged tensors touched before any load of them had started
  double wait_seconds = 0;    // the calling thread waiting for loads and writes
};

class ParamPager final : public StoragePager, public std::enable_shared_from_this<ParamPager> {
 public:
  // Pages the parameters of `model`'s planner blocks as `settings` says, moving the weights to
  // their store now. ValueError naming the placement when a store is missing.
  static std::shared_ptr<ParamPager> create(const nn::Module& model, Device device,
                                            ParamPagerSettings settings);
  // Brings every paged tensor back onto the device, unpaged (a failure is reported on stderr).
  ~ParamPager() override;
  ParamPager(const ParamPager&) = delete;
  ParamPager& operator=(const ParamPager&) = delete;

  // A SavePolicy that is `inner` (null: keep everything) and tells this pager of every scope.
  std::shared_ptr<autograd::SavePolicy> wrap(std::shared_ptr<autograd::SavePolicy> inner);
  // The block bookkeeping behind wrap(): loads ahead, releases behind.
  void on_scope(autograd::ScopeEvent event, autograd::Phase phase, const std::string& path);

  void fault_in(StorageImpl& s) override;
  void page_out(StorageImpl& s) override;
  void prefetch(StorageImpl& s) override;
  // After the update: every paged tensor still on the device goes home, and the writes finish
  // (an I/O failure throws IoError here at the latest).
  void end_step();

  size_t blocks() const;
  size_t paged_parameters() const;
  uint64_t paged_bytes() const;  // the weights' bytes (their gradients' are as many)
  const ParamPagerSettings& settings() const;
  PagerStats stats() const;
  // "weights host, gradients nvme: 12 blocks, 96 parameters, 81.0 MiB"
  std::string describe() const;

 private:
  struct Impl;
  explicit ParamPager(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::memory
