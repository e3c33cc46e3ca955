// TensorCache: the SavePolicy every saved activation goes through. Per saved storage it keeps
// the tensor, drops it for recompute, or stores it asynchronously to a pinned host pool or to an
// O_DIRECT NVMe file arena, and brings it back (prefetched in reverse block order) before
// backward needs it. docs/design.md, "Layer 5: memory".
//
// Words used across the cache and the planner:
//   tier     where an offloaded storage's bytes wait for backward: the host pool or the NVMe
//            spill arena (one unlinked file), each carved into extents (memory/tiers/tier.h).
//   channel  one direction's machinery to the NVMe tier (store or load): an engine, its staging
//            buffers and their checksums; each worker thread has its own.
//   engine   what moves a channel's chunks to and from the file: io_uring, a pread/pwrite thread
//            pool, or cuFile (GPUDirect Storage) for a GPU's direct path (IoEngineKind).
//   block    a module marked as a planner block (a transformer layer): the unit of recompute
//            segments, offload groups and prefetch.
//   segment  a block run under recompute: it saves only its inputs and RNG state and re-runs its
//            forward once in backward.
//   plan     per block and per saved tensor (by its key, "<scope>#<n>:<op>"), the action to
//            take: keep, recompute, host or NVMe (plan.h; made by the planner).
//
//   auto cache = memory::TensorCache::create(options, memory::parse_cache_policy("nvme"));
//   autograd::SavePolicyGuard guard(cache);
//   cache->begin_step();
//   Tensor loss = model.loss(x, y); loss.backward();
//   memory::CacheStats s = cache->end_step();
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "strata/autograd/saved_tensor.h"
#include "strata/core/device.h"
#include "strata/memory/cache_policy.h"
#include "strata/memory/io_engine_kind.h"
#include "strata/memory/io_faults.h"

namespace strata::memory {

struct TensorCacheOptions {
  // The device whose activations the cache moves besides the CPU's (a GPU: its stores and loads
  // run on a copy stream of their own, and the host pool and staging buffers are page-locked for
  // it at creation). Saved tensors on any other device are kept.
  Device device = kCPU;
  // Storages smaller than this are kept whatever the policy says (0: none are).
  size_t min_bytes = size_t(1) << 20;
  // Host tier: one pool of this many bytes, allocated once (0: no host tier; Host -> Keep).
  size_t host_pool_bytes = 0;
  // NVMe tier: an unlinked file in this directory, fallocate'd to spill_arena_bytes
  // ("" or 0 bytes: no NVMe tier; Nvme -> Keep, counted as a fallback).
  std::string spill_dir;
  size_t spill_arena_bytes = 0;
  IoEngineKind io_engine = IoEngineKind::Auto;  // the host-memory channels
  size_t io_chunk_bytes = size_t(4) << 20;  // one I/O request (and one staging buffer)
  size_t io_queue_depth = 4;                // requests in flight per direction
  DeviceIo device_io = DeviceIo::Auto;
  IoEngineKind direct_engine = IoEngineKind::CuFile;  // the direct path's: CuFile or Threads
  // Blocks ahead (in backward order) whose tensors are loaded when backward enters a block.
  size_t prefetch_blocks = 1;
  // The budget the cache holds when stores lag: a forward save that is sent to a tier while
  // the device's saved-activation bytes are above this waits for earlier stores to finish (until
  // under it, or no other store is pending). A drive slower than planned then costs time
  // (store_wait_seconds) instead of memory over the budget (on a GPU: out of memory). 0: never
  // waits. set_activation_limit changes it between steps.
  size_t activation_limit_bytes = 0;
  // Waits for every store at the start of backward (tests: deterministic counters).
  bool sync_stores_before_backward = false;
  IoFaults faults;  // injected under the real I/O layer (tests)
  // Tests: when backward starts, overwrite (with 0xFF bytes, NaN for floats) every stored
  // storage that is still alive somewhere, proving that no op reads a saved tensor except
  // through SavedTensor::unpack.
  bool poison_dropped = false;
};

struct TierCounters {
  uint64_t bytes_written = 0;
  uint64_t bytes_read = 0;
  uint64_t tensors_written = 0;
  uint64_t tensors_read = 0;
  // Reads skipped: the stored tensor's memory copy was still alive when backward needed it (held
  // outside the cache, e.g. a batch's inputs), so it was used. read + reused = written.
  uint64_t bytes_reused = 0;
  uint64_t tensors_reused = 0;
};

// One step's figures (begin_step .. end_step).
struct CacheStats {
  TierCounters host, nvme;
  uint64_t kept = 0;              // storages kept by decision (policy, size, parameter)
  uint64_t dedup_hits = 0;        // saves of a storage already recorded this step
  uint64_t forwarded = 0;         // unpacks served from memory while the store was in flight
  uint64_t cancelled_stores = 0;  // stores abandoned (forwarded, or freed before done)
  uint64_t fallbacks = 0;         // offloads that ended as Keep (tier full, I/O error, ...)
  uint64_t recomputed_reads = 0;  // loads that failed and were recomputed instead
  uint64_t segments = 0;          // blocks run as recompute segments
  uint64_t segment_recomputes = 0;  // ... and re-run in backward
  uint64_t op_recompute_drops = 0;  // storages dropped for op-level recompute
  uint64_t op_recomputes = 0;       // ... and made again in backward
  double stall_seconds = 0;       // unpacks waiting for loads
  double store_wait_seconds = 0;  // forward waiting for stores, above activation_limit_bytes
  uint64_t store_waits = 0;       // ... how many saves waited
  double recompute_seconds = 0;   // segments re-running their forward, ops making outputs again
  uint64_t host_pool_peak = 0;    // bytes in use, peak
  uint64_t spill_arena_peak = 0;
  uint64_t host_pool_used = 0;    // bytes in use when the figures were taken
  uint64_t spill_arena_used = 0;
  std::vector<std::string> warnings;  // each cause once
  std::string io_engine;              // "io_uring", "threads", or "" (no NVMe tier)
  // A GPU's path to NVMe: "direct (cufile)", "staged (io_uring)", ...; "" without a GPU or tier.
  std::string device_io;
};

class TensorCache final : public autograd::SavePolicy,
                          public std::enable_shared_from_this<TensorCache> {
 public:
  // Opens the tiers now (pool, file, rings, threads): nothing is allocated on the hot path.
  // A missing or unusable spill directory does not throw: the NVMe tier is off, with a warning.
  static std::shared_ptr<TensorCache> create(TensorCacheOptions options,
                                             std::shared_ptr<CachePolicy> policy);
  ~TensorCache() override;

  autograd::Packed pack(const Tensor& t, const autograd::SaveInfo& info) override;
  Tensor unpack(autograd::Packed& p, const autograd::SaveInfo& info) override;
  void on_scope(autograd::ScopeEvent e, autograd::Phase phase, const std::string& path) override;
  bool wants_segment(const std::string& block_path) override;
  void observe_recompute(const Tensor& t, const autograd::SaveInfo& info) override;
  // Asks the policy (CachePolicy::prefers_lean) for the current scope and block.
  bool prefers_lean(const char* op) override;
  // Replaces the policy from the next step on (e.g. a plan made from a profiling step).
  void set_policy(std::shared_ptr<CachePolicy> policy);
  // TensorCacheOptions::activation_limit_bytes, from the next save on (0: never wait).
  void set_activation_limit(size_t bytes);
  // Grows the NVMe tier's spill file to at least `bytes` (between steps); IoError naming the
  // directory where the drive cannot hold them, ValueError without an NVMe tier.
  void grow_spill_arena(uint64_t bytes);
  // The NVMe tier's spill file size (0 without one).
  uint64_t spill_arena_capacity() const;
  // The profile of the last finished step (what end_step handed to the policy).
  StepProfile last_profile() const;

  void begin_step();
  // Waits for outstanding I/O, finishes the step's statistics and hands the profile to the
  // policy. Throws if a store or load failed in a way that lost a tensor.
  CacheStats end_step();
  // The running step's figures so far.
  CacheStats stats() const;
  // Waits until no store is queued or in flight.
  void wait_for_stores();
  const TensorCacheOptions& options() const;
  CachePolicy& policy() const;
  // Records still alive (tensors saved and not yet released by backward).
  size_t live_records() const;

  struct Impl;

 private:
  TensorCache() = default;
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::memory
