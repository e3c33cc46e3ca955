// TensorCache's internals: a stored storage's Record and its states, the Handle a SavedTensor
// holds, and TensorCache::Impl. Private to memory/.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "memory/cache_tiers.h"
#include "memory/worker.h"
#include "strata/autograd/node.h"
#include "strata/memory/tensor_cache.h"

namespace strata::memory {

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A stored storage's life: Storing -> Stored -> Loading -> Loaded, or back to Resident when a
// store is cancelled (forwarding) or fails (fallback); Failed when its data is lost. A storage
// dropped for op-level recompute goes Dropped -> Loaded (made again by its producer).
enum class RecState : uint8_t { Resident, Storing, Stored, Loading, Loaded, Failed, Dropped };

// One offloaded or dropped storage: its state, where its bytes are, and who can make it again.
struct Record {
  Tier* tier = nullptr;  // where a stored copy lives (null for op-level recompute)
  std::string key;
  CacheAction action = CacheAction::Keep;
  uint64_t storage_id = 0;
  uint64_t version = 0;
  size_t nbytes = 0;
  size_t group = 0;
  Device device = kCPU;  // where the storage lives when in memory
  // A GPU tensor's stores wait for this mark on the compute stream (set when it was saved).
  std::unique_ptr<Event> produced;

  std::mutex mu;
  std::condition_variable cv;
  RecState state = RecState::Resident;
  Storage storage;  // held while Resident, Storing and Loaded
  std::weak_ptr<StorageImpl> dropped;  // the memory copy, once stored (poisoning)
  bool has_extent = false;
  uint64_t extent = 0;
  std::vector<uint32_t> crcs;
  std::atomic<bool> cancel{false};
  std::atomic<int> handles{0};
  std::string error;
  // The producer that can make the storage again (op-level recompute, or a lost read's rescue).
  // Weak: the consumer's graph keeps it alive while the tensor can still be unpacked, and a record
  // (whose last reference may go on a worker thread) must never be what destroys graph nodes.
  std::weak_ptr<autograd::Node> recipe;
  uint32_t recipe_output = 0;

  ~Record() { free_extent_locked(); }
  void free_extent_locked() {
    if (!has_extent) return;
    has_extent = false;
    tier->free(extent, nbytes);
  }
  TensorMemory memory(Event* after) const { return {device, after}; }
};

// What a SavedTensor holds for an offloaded view: the record and how to re-view its storage.
struct Handle {
  std::shared_ptr<Record> rec;
  Shape shape, strides;
  int64_t offset = 0;
  DType dtype = DType::f32;
  ~Handle() {
    if (rec->handles.fetch_sub(1) == 1) rec->cancel = true;  // last use: pending I/O is moot
  }
};

// The cache's state, shared by its three files: tensor_cache.cpp (creation, pack and unpack,
// steps), cache_transfers.cpp (the workers' stores and loads) and cache_block_index.cpp (blocks,
// scopes and prefetch).
struct TensorCache::Impl {
  TensorCacheOptions opt;
  std::shared_ptr<CachePolicy> policy;
  CacheTiers tiers;
  // The tier an action stores to (null for Keep and Recompute, or when it is not open).
  Tier* tier_for(CacheAction a) const {
    return a == CacheAction::Host ? static_cast<Tier*>(tiers.host.get())
                                  : a == CacheAction::Nvme ? static_cast<Tier*>(tiers.nvme.get()) : nullptr;
  }
  TierCounters& counters_for(CacheAction a) { return a == CacheAction::Host ? stats.host : stats.nvme; }
  // Declared after the tiers so they stop (joining their threads) before the tiers go.
  std::unique_ptr<Worker> store_worker, load_worker;
  // Stores queued or running, for the activation limit (run_store signals each one's end).
  std::mutex backlog_mu;
  std::condition_variable backlog_cv;
  size_t stores_pending = 0;
  std::atomic<size_t> activation_limit{0};
  void store_finished() {
    {
      std::lock_guard<std::mutex> lk(backlog_mu);
      --stores_pending;
    }
    backlog_cv.notify_all();
  }
  void hold_activation_limit(Device dev);

  // Statistics (innermost lock).
  mutable std::mutex stats_mu;
  CacheStats stats;
  std::set<std::string> warned;
  std::vector<std::string> setup_warnings;  // from create(): repeated in every step's stats
  double store_busy_seconds = 0;
  std::vector<std::string> lost;

  // Per-step index (main thread; index_mu guards it against readers on other threads).
  mutable std::mutex index_mu;
  struct Group {
    std::string block;
    std::vector<std::weak_ptr<Record>> records;
    double forward_seconds = 0;
    uint64_t bytes = 0, input_bytes = 0, recompute_bytes = 0;
    bool segment = false;
    std::set<uint64_t> seen;  // storages counted in bytes / recompute_bytes
  };
  StepProfile last_profile;
  std::vector<Group> groups;
  std::unordered_map<std::string, size_t> group_of_block;
  std::unordered_map<std::string, size_t> group_of_scope;
  std::unordered_map<uint64_t, std::weak_ptr<Record>> by_storage;
  std::unordered_map<std::string, Clock::time_point> entered;
  size_t groups_last_step = 0;
  // What the policy's first step saved, to check its entries against at that step's end.
  bool checking_policy = true;
  SeenSaves seen;
  bool in_backward = false;
  size_t last_bwd_group = SIZE_MAX;
  int recompute_depth = 0;
  Clock::time_point recompute_t0;

  void warn(const std::string& cause) {
    std::lock_guard<std::mutex> lk(stats_mu);
    if (warned.insert(cause).second) std::fprintf(stderr, "strata: tensor cache: %s\n", cause.c_str());
    for (const auto& w : stats.warnings)
      if (w == cause) return;
    stats.warnings.push_back(cause);
  }
  void fallback(const std::string& cause) {
    {
      std::lock_guard<std::mutex> lk(stats_mu);
      ++stats.fallbacks;
    }
    warn(cause);
  }
  void reset_step_index() {
    groups.clear();
    group_of_block.clear();
    group_of_scope.clear();
    by_storage.clear();
    entered.clear();
    in_backward = false;
    last_bwd_group = SIZE_MAX;
  }
  size_t group_for(const std::string& block) {
    auto it = group_of_block.find(block);
    if (it != group_of_block.end()) return it->second;
    groups.push_back(Group{});
    groups.back().block = block;
    group_of_block.emplace(block, groups.size() - 1);
    return groups.size() - 1;
  }

  void run_store(const std::shared_ptr<Record>& rec);
  void run_load(const std::shared_ptr<Record>& rec);
  void start_load_locked(const std::shared_ptr<Record>& rec, bool urgent);
  void prefetch_group(size_t g);
  void start_backward();
};

}  // namespace strata::memory
