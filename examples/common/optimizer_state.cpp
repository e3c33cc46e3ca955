#include "examples/common/optimizer_state.h"

#include <filesystem>

#include "examples/common/trainer_common.pb.h"
#include "strata/core/byte_size.h"
#include "strata/core/error.h"
#include "strata/memory/nvme_state_store.h"

namespace strata::examples {

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
  std::shared_ptr<optim::StateStore> store;
  if (where == optim::StatePlacement::Host) {
    store = optim::make_host_state_store(device);
  } else {
    STRATA_CHECK(!cache.spill_dir().empty(), ValueError, flag,
                 " needs --spill-dir: the directory of the file the state goes to");
    std::error_code ec;
    STRATA_CHECK(std::filesystem::is_directory(cache.spill_dir(), ec), ValueError, flag, ": --spill-dir '",
                 cache.spill_dir(), "' is not a directory");
    memory::NvmeStateSettings s;
    s.dir = cache.spill_dir();
    s.capacity = memory::nvme_state_capacity(bytes, 2 * optimizer.parameters().size());
    store = memory::make_nvme_state_store(s);
  }
  optimizer.place_state(store);
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
