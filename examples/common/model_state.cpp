#include "examples/common/model_state.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>

#include "examples/common/trainer_common.pb.h"
#include "strata/core/byte_size.h"
#include "strata/core/error.h"
#include "strata/dist/zero.h"
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

namespace {

// A kind's flag: its placement when given, else nullopt for the budget to choose, or the device.
std::optional<optim::StatePlacement> pinned(bool given, const std::string& value, const char* flag,
                                            bool budget_places) {
  if (given) return optim::parse_state_placement(value, flag);
  if (budget_places) return std::nullopt;
  return optim::StatePlacement::Device;
}

// How a message names where a kind was put: its flag, or the budget.
std::string origin(bool given, const char* flag, const std::string& value, const char* what,
                   optim::StatePlacement where) {
  if (given) return std::string(flag) + " " + value;
  return std::string("--memory-budget (") + what + " on " + optim::state_placement_name(where) + ")";
}

// MemAvailable in /proc/meminfo, in bytes (0 when it cannot be read: no cap).
uint64_t host_memory_available() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  while (in >> key) {
    if (key == "MemAvailable:" && in >> kib) return kib * 1024;
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return 0;
}

}  // namespace

ModelStatePlacer::ModelStatePlacer(const OptimizerConfig& optim, const TensorCacheConfig& cache,
                                   Device device, const nn::Module& model, bool data_parallel,
                                   double optimizer_state_per_weight_byte)
    : optim_(optim), cache_(cache), device_(device), model_(model), data_parallel_(data_parallel) {
  state_ = memory::planner::model_state_of(model, optimizer_state_per_weight_byte);
  for (const Tensor& p : model.parameters())
    largest_param_elements_ = std::max(largest_param_elements_, p.numel());
  const uint64_t budget =
      cache.has_memory_budget() ? memory::parse_byte_size(cache.memory_budget(), "--memory-budget") : 0;
  // Under mpirun the budget moves the optimizer's state only: paging a block's weights and gradients
  // would have to follow the ranks' collectives.
  const bool budget_places = budget > 0;
  memory::planner::WholeStepOptions w;
  w.weights = pinned(optim.has_weights(), optim.weights(), "--weights", budget_places && !data_parallel);
  w.gradients =
      pinned(optim.has_gradients(), optim.gradients(), "--gradients", budget_places && !data_parallel);
  w.optimizer_state =
      pinned(optim.has_optimizer_state(), optim.optimizer_state(), "--optimizer-state", budget_places);
  // Host memory is a tier of its own beside a GPU or sim device; a flag that asks for a tier anyway
  // gets it (and its own message when it cannot be had).
  auto asks = [&](optim::StatePlacement where) {
    return w.weights == where || w.gradients == where || w.optimizer_state == where;
  };
  w.host_memory_bytes = cache.has_host_memory()
                            ? memory::parse_byte_size(cache.host_memory(), "--host-memory")
                            : host_memory_available();
  STRATA_CHECK(!cache.has_host_memory() || w.host_memory_bytes > 0, ValueError, "--host-memory '",
               cache.host_memory(), "' must be more than zero");
  STRATA_CHECK(!cache.has_host_memory() || budget > 0, ValueError, "--host-memory ", cache.host_memory(),
               " caps what --memory-budget places in host memory, and no --memory-budget is given");
  memory::planner::ModelStateTiers tiers;
  tiers.host = !device.is_cpu() || asks(optim::StatePlacement::Host);
  tiers.nvme = !cache.spill_dir().empty() || asks(optim::StatePlacement::Nvme);
  tiers.host_update = true;
  std::vector<memory::planner::ModelStatePlacement> ladder =
      memory::planner::placement_ladder(state_, w, tiers);
  ladder_ = budget_places ? ladder : std::vector<memory::planner::ModelStatePlacement>{ladder.front()};
  // Under mpirun the rungs differ in the optimizer's state only, whose size under ZeRO is known
  // once the optimizer is: place() picks the start then.
  budget_ = budget;
  if (!data_parallel) start_within_budget();
  placement_ = ladder_.front();
  page(placement_);
}

void ModelStatePlacer::start_within_budget() {
  // The run starts with the first placement whose model state fits the budget (less the margin the
  // budget's plan keeps) on its own.
  size_t start = 0;
  while (start + 1 < ladder_.size() && double(device_bytes(ladder_[start])) > 0.95 * double(budget_)) ++start;
  ladder_.erase(ladder_.begin(), ladder_.begin() + long(start));
}

uint64_t ModelStatePlacer::device_bytes(const memory::planner::ModelStatePlacement& p) const {
  uint64_t bytes = memory::planner::model_state_device_bytes(state_, p, 1);
  if (!device_.is_cpu()) return bytes;
  const memory::NvmeStateSettings defaults;
  const size_t moments = size_t(std::ceil(state_.optimizer_state_per_weight_byte));
  if (p.weights == optim::StatePlacement::Nvme)
    bytes += memory::nvme_state_host_bytes(defaults, largest_param_elements_, 1);
  if (p.gradients == optim::StatePlacement::Nvme)
    bytes += memory::nvme_state_host_bytes(defaults, largest_param_elements_, 1);
  if (p.optimizer_state == optim::StatePlacement::Nvme)
    bytes += memory::nvme_state_host_bytes(defaults, largest_param_elements_, moments);
  return bytes;
}

void ModelStatePlacer::page(const memory::planner::ModelStatePlacement& to) {
  using optim::StatePlacement;
  pager_.reset();  // a storage has one pager: the old one gives back what it holds first
  memory::ParamPagerSettings s;
  s.weights = to.weights;
  s.gradients = to.gradients;
  if (s.weights == StatePlacement::Device && s.gradients == StatePlacement::Device) return;
  uint64_t bytes = 0, tensors = 0;
  for (const Tensor& p : model_.parameters()) bytes += p.nbytes(), ++tensors;
  s.weight_store =
      store_for(s.weights, origin(optim_.has_weights(), "--weights", optim_.weights(), "weights", s.weights),
                cache_, device_, bytes, tensors, "weights");
  s.gradient_store =
      store_for(s.gradients,
                origin(optim_.has_gradients(), "--gradients", optim_.gradients(), "gradients", s.gradients),
                cache_, device_, bytes, tensors, "gradients");
  pager_ = memory::ParamPager::create(model_, device_, std::move(s));
}

optim::Optimizer& state_holder(optim::Optimizer& optimizer) {
  auto* zero = dynamic_cast<dist::ZeroRedundancyOptimizer*>(&optimizer);
  return zero && zero->local_optimizer() ? *zero->local_optimizer() : optimizer;
}

const optim::Optimizer& state_holder(const optim::Optimizer& optimizer) {
  return state_holder(const_cast<optim::Optimizer&>(optimizer));
}

void ModelStatePlacer::place(optim::Optimizer& outer) {
  auto* zero = dynamic_cast<dist::ZeroRedundancyOptimizer*>(&outer);
  if (optimizer_ == nullptr && zero) {
    // A sharded optimizer holds the state of this rank's shard only: the budget counts that.
    uint64_t local = 0;
    if (zero->local_optimizer())
      for (const Tensor& p : zero->local_optimizer()->parameters()) local += p.nbytes();
    state_.optimizer_state_per_weight_byte *=
        double(local) / double(std::max<uint64_t>(state_.weight_bytes(), 1));
  }
  if (optimizer_ == nullptr && budget_ > 0 && data_parallel_) {
    start_within_budget();
    placement_.optimizer_state = ladder_.front().optimizer_state;
  }
  optimizer_ = &outer;
  const optim::StatePlacement where = placement_.optimizer_state;
  if (where == optim::StatePlacement::Device) return;
  if (zero && !zero->local_optimizer()) return;  // an empty shard: no state to place
  optim::Optimizer& optimizer = state_holder(outer);
  const std::string flag = origin(optim_.has_optimizer_state(), "--optimizer-state", optim_.optimizer_state(),
                                  "optimizer state", where);
  uint64_t bytes = 0;
  try {
    bytes = optimizer.state_bytes();
  } catch (const NotImplementedError& e) {
    throw ValueError(flag + ": " + e.what());
  }
  optimizer.place_state(
      store_for(where, flag, cache_, device_, bytes, 2 * optimizer.parameters().size(), "optimizer state"));
}

std::vector<memory::ModelStateOption> ModelStatePlacer::options() const {
  std::vector<memory::ModelStateOption> out;
  if (ladder_.size() < 2) return out;
  for (const auto& p : ladder_) out.push_back({.placement = p.describe(), .device_bytes = device_bytes(p)});
  return out;
}

void ModelStatePlacer::move_to(size_t option) {
  STRATA_CHECK(option < ladder_.size(), ValueError, "ModelStatePlacer::move_to: option ", option, " of ",
               ladder_.size());
  const memory::planner::ModelStatePlacement to = ladder_[option];
  if (to.optimizer_state != placement_.optimizer_state) {
    STRATA_CHECK(optimizer_ != nullptr, ValueError, "ModelStatePlacer::move_to: place() was not called");
    placement_.optimizer_state = to.optimizer_state;
    place(*optimizer_);  // the state it has moves into the store
  }
  if (to.weights != placement_.weights || to.gradients != placement_.gradients) page(to);
  placement_ = to;
  ladder_.erase(ladder_.begin(), ladder_.begin() + long(option));
}

std::string optimizer_state_line(const optim::Optimizer& outer) {
  const optim::Optimizer& optimizer = state_holder(outer);
  const optim::StateStore* store = optimizer.state_store();
  if (store == nullptr) return "";
  return "optimizer state: " + std::string(state_placement_name(store->placement())) + ", " +
         format_bytes(double(
             optimizer.state_bytes([&](size_t i, const Tensor&) { return optimizer.state_placed(i); }))) +
         " in " + store->describe();
}

std::string optimizer_state_traffic(const optim::Optimizer& outer, int64_t steps) {
  const optim::StateStore* store = state_holder(outer).state_store();
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
