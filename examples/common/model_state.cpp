#include "examples/common/model_state.h"

#include <cstdio>
#include <filesystem>

#include "examples/common/trainer_common.pb.h"
#include "strata/core/byte_size.h"
#include "strata/core/error.h"
#include "strata/memory/nvme_state_store.h"

namespace strata::examples {

namespace {

// The spill directory a placement on NVMe needs, checked, for `flag`'s messages.
const std::string& spill_dir_for(const std::string& flag, const TensorCacheConfig& cache, const char* what) {
  STRATA_CHECK(!cache.spill_dir().empty(), ValueError, flag,
               " needs --spill-dir: the directory for the spill file of the ", what);
  std::error_code ec;
  STRATA_CHECK(std::filesystem::is_directory(cache.spill_dir(), ec), ValueError, flag, ": --spill-dir '",
               cache.spill_dir(), "' is not a directory");
  return cache.spill_dir();
}

std::shared_ptr<optim::StateStore> store_for(optim::StatePlacement where, const std::string& flag,
                                             const TensorCacheConfig& cache, Device device, uint64_t bytes,
                                             uint64_t buffers, const char* what) {
  if (where == optim::StatePlacement::Device) return nullptr;
  if (where == optim::StatePlacement::Host) return optim::make_host_state_store(device);
  memory::NvmeStateSettings s;
  s.dir = spill_dir_for(flag, cache, what);
  s.capacity = memory::nvme_state_capacity(bytes, buffers);
  s.what = what;
  return memory::make_nvme_state_store(s);
}

}  // namespace

void place_optimizer_state(const OptimizerConfig& optim, const TensorCacheConfig& cache, Device device,
                           optim::Optimizer& optimizer) {
  if (!optim.has_optimizer_state()) return;
  const std::string flag = "--optimizer-state " + optim.optimizer_state();
  const optim::StatePlacement where =
      optim::parse_state_placement(optim.optimizer_state(), "--optimizer-state");
  if (where == optim::StatePlacement::Device) return;
  uint64_t bytes = 0;
  try {
    bytes = optimizer.state_bytes();
  } catch (const NotImplementedError& e) {
    throw ValueError(flag + ": " + e.what());
  }
  optimizer.place_state(
      store_for(where, flag, cache, device, bytes, 2 * optimizer.parameters().size(), "optimizer state"));
}

std::shared_ptr<memory::ParamPager> page_parameters(const OptimizerConfig& optim,
                                                    const TensorCacheConfig& cache, Device device,
                                                    const nn::Module& model) {
  memory::ParamPagerSettings s;
  if (optim.has_weights()) s.weights = optim::parse_state_placement(optim.weights(), "--weights");
  if (optim.has_gradients()) s.gradients = optim::parse_state_placement(optim.gradients(), "--gradients");
  if (s.weights == optim::StatePlacement::Device && s.gradients == optim::StatePlacement::Device)
    return nullptr;
  uint64_t bytes = 0, tensors = 0;
  for (const Tensor& p : model.parameters()) bytes += p.nbytes(), ++tensors;
  s.weight_store =
      store_for(s.weights, "--weights " + optim.weights(), cache, device, bytes, tensors, "weights");
  s.gradient_store =
      store_for(s.gradients, "--gradients " + optim.gradients(), cache, device, bytes, tensors, "gradients");
  return memory::ParamPager::create(model, device, std::move(s));
}

std::string optimizer_state_line(const optim::Optimizer& optimizer) {
  const optim::StateStore* store = optimizer.state_store();
  if (store == nullptr) return "";
  return "optimizer state: " + std::string(state_placement_name(store->placement())) + ", " +
         format_bytes(double(
             optimizer.state_bytes([&](size_t i, const Tensor&) { return optimizer.state_placed(i); }))) +
         " in " + store->describe();
}

std::string optimizer_state_traffic(const optim::Optimizer& optimizer, int64_t steps) {
  const optim::StateStore* store = optimizer.state_store();
  if (store == nullptr || store->placement() != optim::StatePlacement::Nvme) return "";
  const uint64_t moved = store->bytes_read() + store->bytes_written();
  return "optimizer state: " + format_bytes(double(store->bytes_read())) + " read, " +
         format_bytes(double(store->bytes_written())) + " written (" +
         format_bytes(steps > 0 ? double(moved) / double(steps) : 0.0) + " per step)";
}

}  // namespace strata::examples

namespace strata::examples {

std::string pager_line(const memory::ParamPager& pager) {
  const memory::ParamPagerSettings& s = pager.settings();
  std::string where;
  if (s.weight_store) where = "weights in " + s.weight_store->describe();
  if (s.gradient_store)
    where += (where.empty() ? "" : "; ") + ("gradients in " + s.gradient_store->describe());
  return "model state: " + pager.describe() + " (" + where + ")";
}

std::string pager_traffic(const memory::ParamPager& pager, int64_t steps) {
  const memory::PagerStats t = pager.stats();
  const double n = steps > 0 ? double(steps) : 1.0;
  char waited[64];
  std::snprintf(waited, sizeof waited, "; waited %.2f s", t.wait_seconds);
  return "model state: weights " + format_bytes(double(t.weight_bytes_in) / n) + " in, " +
         format_bytes(double(t.weight_bytes_out) / n) + " out, gradients " +
         format_bytes(double(t.gradient_bytes_in) / n) + " in, " +
         format_bytes(double(t.gradient_bytes_out) / n) + " out per step; " + std::to_string(t.demand_loads) +
         " loaded on demand" + waited;
}

}  // namespace strata::examples
