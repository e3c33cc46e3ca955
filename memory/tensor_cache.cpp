#include "strata/memory/tensor_cache.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
#include <unordered_map>

#include "memory/tiers/host_tier.h"
#include "memory/tiers/nvme_tier.h"
#include "memory/worker.h"
#include "strata/autograd/node.h"
#include "strata/core/allocator.h"
#include "strata/core/backend.h"
#include "strata/core/error.h"

namespace strata::memory {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A stored storage's life: Storing -> Stored -> Loading -> Loaded, or back to Resident when a
// store is cancelled (forwarding) or fails (fallback); Failed when its data is lost. A storage
// dropped for op-level recompute goes Dropped -> Loaded (made again by its producer).
enum class RecState : uint8_t { Resident, Storing, Stored, Loading, Loaded, Failed, Dropped };

}  // namespace

struct Record {
  TensorCache::Impl* cache = nullptr;
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

  ~Record();
  void free_extent_locked();
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

struct TensorCache::Impl {
  TensorCacheOptions opt;
  std::shared_ptr<CachePolicy> policy;
  std::unique_ptr<HostTier> host;
  std::unique_ptr<NvmeTier> nvme;
  std::unique_ptr<IoChannel> store_ch, load_ch;
  // The GPU's direct path (device staging buffers), when it runs; else its chunks use the above.
  std::unique_ptr<IoChannel> device_store_ch, device_load_ch;
  std::string io_backend, device_io;
  IoChannel& store_channel(const Record& rec) const;
  IoChannel& load_channel(const Record& rec) const;
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

  // Copies between host memory and a record's storage, which may live on a GPU (then on the
  // backend's copy stream, waited for here: the caller is a worker thread).
  void copy_out(Record& rec, void* host_dst, const void* src, size_t n) const;
  void copy_in(Record& rec, void* dst, const void* host_src, size_t n, Event* after) const;
  void run_store(const std::shared_ptr<Record>& rec);
  void run_load(const std::shared_ptr<Record>& rec);
  void start_load_locked(const std::shared_ptr<Record>& rec, bool urgent);
  void prefetch_group(size_t g);
  void start_backward();
};

Record::~Record() {
  if (has_extent) free_extent_locked();
}

void Record::free_extent_locked() {
  if (!has_extent) return;
  has_extent = false;
  if (action == CacheAction::Host)
    cache->host->free(extent, nbytes);
  else
    cache->nvme->extents().free(extent, nbytes);
}

// ---- creation ----

std::shared_ptr<TensorCache> TensorCache::create(TensorCacheOptions options,
                                                 std::shared_ptr<CachePolicy> policy) {
  std::shared_ptr<TensorCache> c(new TensorCache());
  c->impl_ = std::make_unique<Impl>();
  Impl& m = *c->impl_;
  m.opt = std::move(options);
  m.policy = policy ? std::move(policy) : make_keep_all_policy();
  m.activation_limit.store(m.opt.activation_limit_bytes);
  if (m.opt.host_pool_bytes > 0) m.host = std::make_unique<HostTier>(m.opt.host_pool_bytes);
  Backend* device_backend = nullptr;
  if (m.opt.device.type != DeviceType::CPU) {
    STRATA_CHECK(m.opt.device.type == DeviceType::CUDA, ValueError, "tensor cache: cannot move activations of ",
                 m.opt.device.str(), " (only the CPU's and a GPU's)");
    device_backend = &backend_for(m.opt.device);
    if (m.host) m.host->pin_for(*device_backend);
  }
  std::string direct_refusal;  // DeviceIo::Direct asked for and not possible: an error
  if (!m.opt.spill_dir.empty() && m.opt.spill_arena_bytes > 0) {
    try {
      m.nvme = std::make_unique<NvmeTier>(m.opt.spill_dir, m.opt.spill_arena_bytes);
      auto counters = std::make_shared<FaultCounters>();
      std::string why;
      m.store_ch = m.nvme->open_channel(m.opt.io_backend, m.opt.io_chunk_bytes, m.opt.io_queue_depth,
                                        m.opt.faults, counters, &why);
      m.load_ch = m.nvme->open_channel(m.opt.io_backend, m.opt.io_chunk_bytes, m.opt.io_queue_depth,
                                       m.opt.faults, counters, &why);
      m.io_backend = m.store_ch->engine_name();
      if (device_backend) {
        m.device_io = std::string("staged (") + m.io_backend + ")";
        std::string direct_why;
        if (m.opt.device_io != DeviceIo::Staged) {
          try {
            m.device_store_ch = m.nvme->open_device_channel(*device_backend, m.opt.device.index, m.opt.direct_engine,
                                                            m.opt.io_chunk_bytes, m.opt.io_queue_depth, m.opt.faults,
                                                            counters);
            m.device_load_ch = m.nvme->open_device_channel(*device_backend, m.opt.device.index, m.opt.direct_engine,
                                                           m.opt.io_chunk_bytes, m.opt.io_queue_depth, m.opt.faults,
                                                           counters);
            m.device_io = std::string("direct (") + m.device_store_ch->engine_name() + ")";
          } catch (const IoUringRefused& e) {
            m.device_store_ch.reset();
            direct_why = e.why;
          } catch (const Error& e) {  // e.g. no device memory for the staging buffers
            m.device_store_ch.reset();
            direct_why = e.what();
          }
        }
        if (m.opt.device_io == DeviceIo::Direct && !m.device_store_ch) direct_refusal = direct_why;
        if (!m.device_store_ch || !m.device_load_ch) {  // staged: the host buffers carry device chunks
          m.device_store_ch.reset();
          m.device_load_ch.reset();
          m.store_ch->pin_staging(*device_backend);
          m.load_ch->pin_staging(*device_backend);
        }
      }
      if (!why.empty()) m.setup_warnings.push_back(why);
    } catch (const IoError& e) {
      m.device_store_ch.reset();
      m.device_load_ch.reset();
      m.store_ch.reset();
      m.load_ch.reset();
      m.nvme.reset();
      m.device_io.clear();
      m.setup_warnings.push_back(std::string("NVMe tier off: ") + e.what());
    }
    STRATA_CHECK(direct_refusal.empty(), IoError, "tensor cache: the direct GPU-to-NVMe path (",
                 m.opt.direct_engine, ") was asked for but ", direct_refusal);
    for (const auto& w : m.setup_warnings) m.warn(w);
  }
  m.store_worker = std::make_unique<Worker>();
  m.load_worker = std::make_unique<Worker>();
  m.stats.io_backend = m.io_backend;
  m.stats.device_io = m.device_io;
  return c;
}

TensorCache::~TensorCache() {
  if (!impl_) return;
  impl_->store_worker.reset();
  impl_->load_worker.reset();
}

const TensorCacheOptions& TensorCache::options() const { return impl_->opt; }
CachePolicy& TensorCache::policy() const { return *impl_->policy; }

// ---- pack / unpack ----

autograd::Packed TensorCache::pack(const Tensor& t, const autograd::SaveInfo& info) {
  Impl& m = *impl_;
  // Parameters stay; tensors saved while backward runs (double backward) are needed soon: kept
  // (SSDTrain). SaveInfo::key is set for exactly the others.
  if (!t.defined() || !info.cacheable()) return {t, nullptr};
  const Storage& s = t.storage();
  std::shared_ptr<Record> rec;
  bool wait_for_stores = false;
  {
    std::lock_guard<std::mutex> lk(m.index_mu);
    if (m.in_backward) m.reset_step_index();  // a new micro-batch's forward
    size_t group = m.group_for(info.block);
    m.group_of_scope.emplace(info.scope, group);
    {
      Impl::Group& g = m.groups[group];
      if (g.seen.insert(s->id()).second) {
        g.bytes += s->nbytes();
        if (std::strcmp(info.op, "checkpoint") == 0) g.input_bytes += s->nbytes();
      }
    }
    auto it = m.by_storage.find(s->id());
    if (it != m.by_storage.end()) {
      auto live = it->second.lock();
      if (live && live->version == s->version() && live->handles.load() > 0) {
        std::lock_guard<std::mutex> sl(m.stats_mu);
        ++m.stats.dedup_hits;
        rec = std::move(live);
      }
    }
    if (!rec) {
      const size_t nbytes = s->nbytes();
      CacheAction action = CacheAction::Keep;
      const Device dev = s->device();
      if (nbytes >= m.opt.min_bytes && (dev.type == DeviceType::CPU || dev == m.opt.device)) {
        SaveRequest req;
        req.info = &info;
        req.storage_bytes = nbytes;
        req.group = group;
        req.groups_last_step = m.groups_last_step;
        action = m.policy->decide(req);
        const bool recipe = info.producer && info.producer->can_recompute(t.output_nr());
        if (action == CacheAction::Recompute && !recipe) {
          m.warn("op-level recompute asked for tensors whose producers cannot make them again "
                 "(only cheap ops that save their inputs can): those are kept");
          action = CacheAction::Keep;
        }
        std::optional<uint64_t> extent;
        if (action == CacheAction::Host) {
          if (!m.host)
            m.fallback("no host pool (host_pool_bytes is 0): host offloads are kept");
          else if (!(extent = m.host->allocate(nbytes)))
            m.fallback("host pool full (" + std::to_string(m.host->extents().capacity()) +
                       " bytes): tensors kept in memory");
        } else if (action == CacheAction::Nvme) {
          if (!m.nvme)
            m.fallback("no NVMe tier (spill directory unset or unusable): NVMe offloads are kept");
          else if (!(extent = m.nvme->extents().allocate(nbytes)))
            m.fallback("spill arena full (" + std::to_string(m.nvme->extents().capacity()) +
                       " bytes): tensors kept in memory");
        }
        if (extent || action == CacheAction::Recompute) {
          rec = std::make_shared<Record>();
          rec->cache = &m;
          rec->key = info.key;
          rec->action = action;
          rec->storage_id = s->id();
          rec->version = s->version();
          rec->nbytes = nbytes;
          rec->group = group;
          rec->device = dev;
          if (dev.type != DeviceType::CPU && action != CacheAction::Recompute)
            rec->produced = backend_for(dev).record_compute(dev.index);
          if (recipe) {
            rec->recipe = info.producer;
            rec->recipe_output = t.output_nr();
          }
          m.by_storage[s->id()] = rec;
          m.groups[group].records.push_back(rec);
          if (action == CacheAction::Recompute) {
            rec->state = RecState::Dropped;  // the memory goes with the forward's last reference
            rec->dropped = s;
            std::lock_guard<std::mutex> sl(m.stats_mu);
            ++m.stats.op_recompute_drops;
          } else {
            rec->state = RecState::Storing;
            rec->storage = s;
            rec->has_extent = true;
            rec->extent = *extent;
            {
              std::lock_guard<std::mutex> bl(m.backlog_mu);
              ++m.stores_pending;
            }
            m.store_worker->push([&m, rec] { m.run_store(rec); });
            wait_for_stores = true;
          }
        }
      }
      if (!rec) {
        std::lock_guard<std::mutex> sl(m.stats_mu);
        ++m.stats.kept;
        return {t, nullptr};
      }
    }
  }
  auto h = std::make_shared<Handle>();
  h->rec = rec;
  rec->handles.fetch_add(1);
  if (wait_for_stores) m.hold_activation_limit(s->device());
  h->shape = t.shape();
  h->strides = t.strides();
  h->offset = t.storage_offset();
  h->dtype = t.dtype();
  return {Tensor(), h};
}

Tensor TensorCache::unpack(autograd::Packed& p, const autograd::SaveInfo& info) {
  if (p.tensor.defined() || !p.handle) return p.tensor;
  Impl& m = *impl_;
  auto* h = static_cast<Handle*>(p.handle.get());
  Record& r = *h->rec;
  std::unique_lock<std::mutex> lk(r.mu);
  for (;;) {
    switch (r.state) {
      case RecState::Resident:
      case RecState::Loaded:
        return Tensor::from_storage(r.storage, h->shape, h->strides, h->offset, h->dtype);
      case RecState::Storing: {  // still in memory: forward it and cancel the store
        r.cancel = true;
        r.state = RecState::Resident;
        std::lock_guard<std::mutex> sl(m.stats_mu);
        ++m.stats.forwarded;
        continue;
      }
      case RecState::Stored:
        m.start_load_locked(h->rec, /*urgent=*/true);
        continue;
      case RecState::Loading: {
        auto t0 = Clock::now();
        r.cv.wait(lk, [&] { return r.state != RecState::Loading; });
        std::lock_guard<std::mutex> sl(m.stats_mu);
        m.stats.stall_seconds += seconds_since(t0);
        continue;
      }
      case RecState::Failed:
        STRATA_CHECK(!r.recipe.expired(), IoError, info.op, " (scope '", info.scope, "'): ", r.error);
        {
          std::lock_guard<std::mutex> sl(m.stats_mu);
          ++m.stats.recomputed_reads;
        }
        [[fallthrough]];
      case RecState::Dropped: {
        // Made again by its producer from the producer's own saved tensors (which may load).
        auto t0 = Clock::now();
        std::shared_ptr<autograd::Node> producer = r.recipe.lock();
        STRATA_CHECK(producer, AutogradError, info.op, " (scope '", info.scope, "'): the producer of saved tensor '",
                     r.key, "' is gone, so it cannot be recomputed");
        lk.unlock();
        Tensor again;
        {
          autograd::PhaseGuard phase(autograd::Phase::Recompute);
          again = producer->recompute_output(r.recipe_output);
        }
        lk.lock();
        STRATA_CHECK(again.defined() && again.storage()->nbytes() == r.nbytes &&
                         again.storage_offset() == 0 && again.is_contiguous(),
                     AutogradError, info.op, " (scope '", info.scope, "'): recomputing saved tensor '",
                     r.key, "' with ", producer->name(), " did not give its ", r.nbytes, "-byte storage back");
        again.storage()->set_category(MemoryCategory::SavedActivation);
        r.storage = again.storage();
        r.state = RecState::Loaded;
        std::lock_guard<std::mutex> sl(m.stats_mu);
        m.stats.recompute_seconds += seconds_since(t0);
        ++m.stats.op_recomputes;
        continue;
      }
    }
  }
}

// ---- the workers' jobs ----

void TensorCache::Impl::hold_activation_limit(Device dev) {
  const size_t limit = activation_limit.load();
  if (limit == 0) return;
  MemoryStats& mem = backend_for(dev).allocator(dev.index).stats();
  auto over = [&] { return mem.snapshot().current_of(MemoryCategory::SavedActivation) > int64_t(limit); };
  if (!over()) return;
  const auto t0 = Clock::now();
  bool waited = false;
  {
    std::unique_lock<std::mutex> lk(backlog_mu);
    // More than the store just queued (which frees nothing while forward still uses its tensor).
    // Only a store's end frees memory while forward waits here, and each one signals.
    waited = stores_pending > 1 && over();
    backlog_cv.wait(lk, [&] { return stores_pending <= 1 || !over(); });
  }
  if (!waited) return;
  std::lock_guard<std::mutex> sl(stats_mu);
  stats.store_wait_seconds += seconds_since(t0);
  ++stats.store_waits;
}

void TensorCache::Impl::run_store(const std::shared_ptr<Record>& rec) {
  // Signals the store's end last, after `src` below has let go of the storage.
  struct Finished {
    Impl* m;
    ~Finished() { m->store_finished(); }
  } finished{this};
  Storage src;
  {
    std::lock_guard<std::mutex> lk(rec->mu);
    if (rec->state != RecState::Storing || rec->cancel) {
      if (rec->state == RecState::Storing) rec->state = RecState::Resident;
      rec->free_extent_locked();
      std::lock_guard<std::mutex> sl(stats_mu);
      ++stats.cancelled_stores;
      return;
    }
    src = rec->storage;
  }
  auto t0 = Clock::now();
  IoStatus st;
  std::vector<uint32_t> crcs;
  if (rec->action == CacheAction::Host) {
    try {
      copy_out(*rec, host->at(rec->extent), src->data(), rec->nbytes);
    } catch (const std::exception& e) {
      st.ok = false;
      st.what = e.what();
    }
  } else if (rec->device.type == DeviceType::CPU) {
    st = store_ch->write(src->data(), rec->nbytes, rec->extent, crcs, &rec->cancel);
  } else {
    ChunkCopy copy = [this, &rec](void* dst, const void* from, size_t n) { copy_out(*rec, dst, from, n); };
    st = store_channel(*rec).write(src->data(), rec->nbytes, rec->extent, crcs, &rec->cancel, &copy);
  }
  double busy = seconds_since(t0);
  bool stored = false;
  {
    std::lock_guard<std::mutex> lk(rec->mu);
    if (rec->state == RecState::Storing && !rec->cancel && st.ok && !st.cancelled) {
      rec->crcs = std::move(crcs);
      rec->state = RecState::Stored;
      rec->dropped = rec->storage;
      rec->storage.reset();  // the memory copy goes (once nothing else holds the storage)
      stored = true;
    } else if (rec->state == RecState::Storing && !st.ok) {
      rec->state = RecState::Resident;
      rec->free_extent_locked();
    } else {
      if (rec->state == RecState::Storing) rec->state = RecState::Resident;
      rec->free_extent_locked();
    }
    rec->cv.notify_all();
  }
  if (!st.ok && rec->action == CacheAction::Host) {
    fallback("copy to the host pool failed (" + st.what + "): tensors kept in memory");
  } else if (!st.ok) {
    fallback("write to " + nvme->describe() + " failed (" + st.what + " at offset " +
             std::to_string(st.file_offset) + "): tensors kept in memory");
  }
  std::lock_guard<std::mutex> sl(stats_mu);
  if (stored) {
    TierCounters& c = rec->action == CacheAction::Host ? stats.host : stats.nvme;
    c.bytes_written += rec->nbytes;
    ++c.tensors_written;
    if (rec->action == CacheAction::Nvme) store_busy_seconds += busy;
  } else if (st.ok) {
    ++stats.cancelled_stores;
  }
}

IoChannel& TensorCache::Impl::store_channel(const Record& rec) const {
  return rec.device.type != DeviceType::CPU && device_store_ch ? *device_store_ch : *store_ch;
}

IoChannel& TensorCache::Impl::load_channel(const Record& rec) const {
  return rec.device.type != DeviceType::CPU && device_load_ch ? *device_load_ch : *load_ch;
}

void TensorCache::Impl::copy_out(Record& rec, void* host_dst, const void* src, size_t n) const {
  if (rec.device.type == DeviceType::CPU) {
    std::memcpy(host_dst, src, n);
    return;
  }
  auto done = backend_for(rec.device).copy_bytes_async(host_dst, src, n, rec.device.index, rec.produced.get());
  if (done) done->synchronize();
}

void TensorCache::Impl::copy_in(Record& rec, void* dst, const void* host_src, size_t n, Event* after) const {
  if (rec.device.type == DeviceType::CPU) {
    std::memcpy(dst, host_src, n);
    return;
  }
  // Waited for before the record is Loaded, so compute work issued after the unpack sees it.
  auto done = backend_for(rec.device).copy_bytes_async(dst, host_src, n, rec.device.index, after);
  if (done) done->synchronize();
}

void TensorCache::Impl::start_load_locked(const std::shared_ptr<Record>& rec, bool urgent) {
  rec->state = RecState::Loading;
  load_worker->push([this, rec] { run_load(rec); }, urgent);
}

void TensorCache::Impl::run_load(const std::shared_ptr<Record>& rec) {
  {
    std::lock_guard<std::mutex> lk(rec->mu);
    if (rec->state != RecState::Loading) return;
    if (rec->cancel && rec->handles.load() == 0) {  // nobody will unpack it any more
      rec->state = RecState::Stored;
      return;
    }
    // The memory copy outlived the store (something outside the cache still holds it, unchanged
    // since the save): it is the saved tensor, and a read would only make a second copy.
    if (auto alive = rec->dropped.lock(); alive && !opt.poison_dropped && alive->version() == rec->version) {
      rec->storage = std::move(alive);
      rec->state = RecState::Loaded;
      rec->free_extent_locked();
      rec->cv.notify_all();
      std::lock_guard<std::mutex> sl(stats_mu);
      TierCounters& t = rec->action == CacheAction::Host ? stats.host : stats.nvme;
      t.bytes_reused += rec->nbytes;
      ++t.tensors_reused;
      return;
    }
  }
  const bool on_cpu = rec->device.type == DeviceType::CPU;
  Allocator* alloc = on_cpu ? &cpu_allocator() : &backend_for(rec->device).allocator(rec->device.index);
  auto dst = std::make_shared<StorageImpl>(rec->nbytes, rec->device, alloc, MemoryCategory::SavedActivation);
  // The block may have been freed by compute work still queued on the GPU: copy after it.
  std::unique_ptr<Event> after = on_cpu ? nullptr : backend_for(rec->device).record_compute(rec->device.index);
  IoStatus st;
  if (rec->action == CacheAction::Host) {
    try {
      copy_in(*rec, dst->data(), host->at(rec->extent), rec->nbytes, after.get());
    } catch (const std::exception& e) {
      st.ok = false;
      st.what = e.what();
    }
  } else {
    ChunkCopy copy = [this, &rec, &after](void* to, const void* from, size_t n) {
      copy_in(*rec, to, from, n, after.get());
    };
    const ChunkCopy* cp = on_cpu ? nullptr : &copy;
    IoChannel& ch = load_channel(*rec);
    st = ch.read(dst->data(), rec->nbytes, rec->extent, rec->crcs, cp);
    if (!st.ok) {
      warn("read from " + nvme->describe() + " failed (" + st.what + " at offset " +
           std::to_string(st.file_offset) + "): retrying once");
      st = ch.read(dst->data(), rec->nbytes, rec->extent, rec->crcs, cp);
    }
  }
  std::string lost_msg;
  {
    std::lock_guard<std::mutex> lk(rec->mu);
    if (st.ok) {
      rec->storage = std::move(dst);
      rec->state = RecState::Loaded;
      rec->free_extent_locked();
    } else {
      rec->state = RecState::Failed;
      rec->error = "saved tensor '" + rec->key + "' (" + std::to_string(rec->nbytes) +
                   " bytes) is lost: reading it from " +
                   (rec->action == CacheAction::Host ? std::string("the host pool") : nvme->describe()) + " at offset " +
                   std::to_string(st.file_offset) + " failed (" + st.what +
                   ") after its memory copy was freed, and it has no recompute recipe";
      if (rec->recipe.expired()) lost_msg = rec->error;  // with a recipe, unpack makes it again
    }
    rec->cv.notify_all();
  }
  std::lock_guard<std::mutex> sl(stats_mu);
  if (st.ok) {
    TierCounters& c = rec->action == CacheAction::Host ? stats.host : stats.nvme;
    c.bytes_read += rec->nbytes;
    ++c.tensors_read;
  } else if (!lost_msg.empty()) {
    lost.push_back(lost_msg);
  }
}

// ---- scopes and prefetch ----

void TensorCache::Impl::prefetch_group(size_t g) {
  std::vector<std::shared_ptr<Record>> recs;
  {
    std::lock_guard<std::mutex> lk(index_mu);
    if (g >= groups.size()) return;
    auto& list = groups[g].records;
    for (auto it = list.rbegin(); it != list.rend(); ++it)  // reverse forward order
      if (auto r = it->lock()) recs.push_back(std::move(r));
  }
  for (auto& r : recs) {
    std::lock_guard<std::mutex> lk(r->mu);
    if (r->state == RecState::Stored && r->handles.load() > 0) start_load_locked(r, false);
  }
}

void TensorCache::Impl::start_backward() {
  if (opt.sync_stores_before_backward || opt.poison_dropped) store_worker->wait_idle();
  size_t n;
  std::vector<std::shared_ptr<Record>> all;
  {
    std::lock_guard<std::mutex> lk(index_mu);
    n = groups.size();
    if (opt.poison_dropped)
      for (auto& g : groups)
        for (auto& w : g.records)
          if (auto r = w.lock()) all.push_back(std::move(r));
  }
  for (auto& r : all) {
    std::lock_guard<std::mutex> lk(r->mu);
    if (r->state != RecState::Stored && r->state != RecState::Dropped) continue;
    if (auto s = r->dropped.lock(); s && s->device().type == DeviceType::CPU)
      std::memset(s->data(), 0xFF, s->nbytes());
  }
  // As late as the rule below allows (the planner's simulator assumes the same): group g loads
  // when backward enters group g + ahead, so at backward's start only the last `ahead` groups
  // load; the group before them waits until backward reaches the last one (the loss head's
  // backward can be long, and loading earlier only raises the peak).
  const size_t ahead = policy->prefetch_blocks() ? policy->prefetch_blocks() : opt.prefetch_blocks;
  for (size_t i = 0; i < std::max<size_t>(ahead, 1) && i < n; ++i) prefetch_group(n - 1 - i);
}

void TensorCache::on_scope(autograd::ScopeEvent e, autograd::Phase phase, const std::string& path) {
  Impl& m = *impl_;
  using autograd::Phase;
  using autograd::ScopeEvent;
  if (phase == Phase::Recompute) {
    if (e == ScopeEvent::Enter) {
      if (m.recompute_depth++ == 0) {
        m.recompute_t0 = Clock::now();
        std::lock_guard<std::mutex> sl(m.stats_mu);
        ++m.stats.segment_recomputes;
      }
    } else if (--m.recompute_depth == 0) {
      std::lock_guard<std::mutex> sl(m.stats_mu);
      m.stats.recompute_seconds += seconds_since(m.recompute_t0);
    }
    return;
  }
  if (phase == Phase::Forward) {
    std::lock_guard<std::mutex> lk(m.index_mu);
    if (m.in_backward) m.reset_step_index();
    if (e == ScopeEvent::Enter) {
      m.entered[path] = Clock::now();
    } else {
      auto g = m.group_of_block.find(path);
      auto t = m.entered.find(path);
      if (g != m.group_of_block.end() && t != m.entered.end())
        m.groups[g->second].forward_seconds += seconds_since(t->second);
    }
    return;
  }
  if (e != ScopeEvent::Enter) return;
  size_t g = SIZE_MAX;
  bool first = false;
  {
    std::lock_guard<std::mutex> lk(m.index_mu);
    if (!m.in_backward) {
      m.in_backward = true;
      first = true;
    }
    auto it = m.group_of_scope.find(path);
    if (it != m.group_of_scope.end()) g = it->second;
    if (g == m.last_bwd_group) return;
    if (g != SIZE_MAX) m.last_bwd_group = g;
  }
  if (first) m.start_backward();
  if (g == SIZE_MAX) return;
  const size_t ahead = m.policy->prefetch_blocks() ? m.policy->prefetch_blocks() : m.opt.prefetch_blocks;
  for (size_t i = 0; i <= ahead && i <= g; ++i) m.prefetch_group(g - i);
}

bool TensorCache::wants_segment(const std::string& block_path) {
  if (!impl_->policy->recompute_block(block_path)) return false;
  {
    std::lock_guard<std::mutex> lk(impl_->index_mu);
    if (impl_->in_backward) impl_->reset_step_index();
    impl_->groups[impl_->group_for(block_path)].segment = true;
  }
  std::lock_guard<std::mutex> sl(impl_->stats_mu);
  ++impl_->stats.segments;
  return true;
}

void TensorCache::observe_recompute(const Tensor& t, const autograd::SaveInfo& info) {
  if (!t.defined() || info.is_parameter || t.storage()->holds_parameter()) return;
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lk(m.index_mu);
  auto it = m.group_of_block.find(info.block);
  if (it == m.group_of_block.end()) return;
  Impl::Group& g = m.groups[it->second];
  if (g.seen.insert(t.storage()->id()).second) g.recompute_bytes += t.storage()->nbytes();
}

bool TensorCache::prefers_lean(const char* op) {
  autograd::SaveInfo where;
  where.op = op;
  where.scope = autograd::current_scope_path();
  where.block = autograd::current_block_path();
  return impl_->policy->prefers_lean(where);
}

void TensorCache::set_activation_limit(size_t bytes) { impl_->activation_limit.store(bytes); }

void TensorCache::set_policy(std::shared_ptr<CachePolicy> policy) {
  impl_->policy = policy ? std::move(policy) : make_keep_all_policy();
}

StepProfile TensorCache::last_profile() const {
  std::lock_guard<std::mutex> lk(impl_->index_mu);
  return impl_->last_profile;
}

// ---- steps ----

void TensorCache::begin_step() {
  Impl& m = *impl_;
  m.store_worker->wait_idle();
  m.load_worker->wait_idle();
  {
    std::lock_guard<std::mutex> lk(m.index_mu);
    m.reset_step_index();
  }
  autograd::restart_save_keys();
  std::lock_guard<std::mutex> sl(m.stats_mu);
  m.stats = CacheStats{};
  m.stats.io_backend = m.io_backend;
  m.stats.device_io = m.device_io;
  m.stats.warnings = m.setup_warnings;
  m.store_busy_seconds = 0;
  m.lost.clear();
  if (m.host) m.host->extents().reset_peak();
  if (m.nvme) m.nvme->extents().reset_peak();
}

void TensorCache::wait_for_stores() { impl_->store_worker->wait_idle(); }

CacheStats TensorCache::stats() const {
  const Impl& m = *impl_;
  std::lock_guard<std::mutex> sl(m.stats_mu);
  CacheStats s = m.stats;
  if (m.host) {
    s.host_pool_peak = m.host->extents().peak();
    s.host_pool_used = m.host->extents().used();
  }
  if (m.nvme) {
    s.spill_arena_peak = m.nvme->extents().peak();
    s.spill_arena_used = m.nvme->extents().used();
  }
  return s;
}

CacheStats TensorCache::end_step() {
  Impl& m = *impl_;
  m.store_worker->wait_idle();
  m.load_worker->wait_idle();
  StepProfile prof;
  {
    std::lock_guard<std::mutex> lk(m.index_mu);
    for (const auto& g : m.groups) {
      GroupProfile gp;
      gp.block = g.block;
      gp.forward_seconds = g.forward_seconds;
      gp.bytes = g.bytes;
      gp.input_bytes = g.input_bytes;
      gp.recompute_bytes = g.recompute_bytes;
      gp.segment = g.segment;
      prof.groups.push_back(gp);
      prof.forward_seconds += g.forward_seconds;
    }
    m.groups_last_step = m.groups.size();
  }
  CacheStats s = stats();
  {
    std::lock_guard<std::mutex> sl(m.stats_mu);
    if (m.store_busy_seconds > 0)
      prof.write_bytes_per_second = double(m.stats.nvme.bytes_written) / m.store_busy_seconds;
    STRATA_CHECK(m.lost.empty(), IoError, "tensor cache: ", m.lost.front());
  }
  m.policy->on_step_end(prof);
  {
    std::lock_guard<std::mutex> lk(m.index_mu);
    m.last_profile = prof;
  }
  return s;
}

size_t TensorCache::live_records() const {
  const Impl& m = *impl_;
  std::lock_guard<std::mutex> lk(m.index_mu);
  size_t n = 0;
  for (const auto& [id, w] : m.by_storage)
    if (!w.expired()) ++n;
  return n;
}

}  // namespace strata::memory
