// TensorCache: creation, pack and unpack (the policy's decision, the record, forwarding, loads and
// recomputes), and the step's figures. The workers' transfers are in cache_transfers.cpp, blocks
// and prefetch in cache_block_index.cpp.
#include "strata/memory/tensor_cache.h"

#include <cstring>

#include "memory/tensor_cache_impl.h"
#include "strata/core/allocator.h"
#include "strata/core/backend.h"
#include "strata/core/error.h"

namespace strata::memory {

// ---- creation ----

std::shared_ptr<TensorCache> TensorCache::create(TensorCacheOptions options,
                                                 std::shared_ptr<CachePolicy> policy) {
  std::shared_ptr<TensorCache> c(new TensorCache());
  c->impl_ = std::make_unique<Impl>();
  Impl& m = *c->impl_;
  m.opt = std::move(options);
  m.policy = policy ? std::move(policy) : make_keep_all_policy();
  m.activation_limit.store(m.opt.activation_limit_bytes);
  m.tiers = open_cache_tiers(m.opt);
  m.setup_warnings = m.tiers.warnings;
  for (const auto& w : m.setup_warnings) m.warn(w);
  m.store_worker = std::make_unique<Worker>();
  m.load_worker = std::make_unique<Worker>();
  m.stats.io_engine = m.tiers.io_engine;
  m.stats.device_io = m.tiers.device_io;
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
    if (m.checking_policy) {
      m.seen.scope_ops.emplace(info.scope, info.op);
      m.seen.keys.insert(info.key);
      if (!info.block.empty()) m.seen.blocks.insert(info.block);
    }
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
        Tier* tier = m.tier_for(action);
        if (action == CacheAction::Host && !tier)
          m.fallback("no host pool (host_pool_bytes is 0): host offloads are kept");
        else if (action == CacheAction::Nvme && !tier)
          m.fallback("no NVMe tier (spill directory unset or unusable): NVMe offloads are kept");
        else if (tier && !(extent = tier->allocate(nbytes)))
          m.fallback(std::string(tier->name()) + " full (" + std::to_string(tier->extents().capacity()) +
                     " bytes): tensors kept in memory");
        if (extent || action == CacheAction::Recompute) {
          rec = std::make_shared<Record>();
          rec->tier = tier;
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
  m.stats.io_engine = m.tiers.io_engine;
  m.stats.device_io = m.tiers.device_io;
  m.stats.warnings = m.setup_warnings;
  m.store_busy_seconds = 0;
  m.lost.clear();
  for (Tier* t : {m.tier_for(CacheAction::Host), m.tier_for(CacheAction::Nvme)})
    if (t) t->extents().reset_peak();
}

void TensorCache::wait_for_stores() { impl_->store_worker->wait_idle(); }

CacheStats TensorCache::stats() const {
  const Impl& m = *impl_;
  std::lock_guard<std::mutex> sl(m.stats_mu);
  CacheStats s = m.stats;
  if (m.tiers.host) {
    s.host_pool_peak = m.tiers.host->extents().peak();
    s.host_pool_used = m.tiers.host->extents().used();
  }
  if (m.tiers.nvme) {
    s.spill_arena_peak = m.tiers.nvme->extents().peak();
    s.spill_arena_used = m.tiers.nvme->extents().used();
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
  std::vector<std::string> unmatched;
  {
    std::lock_guard<std::mutex> lk(m.index_mu);
    // The first step that saved anything (a step that saved nothing tells nothing).
    if (m.checking_policy && !m.seen.scope_ops.empty()) {
      unmatched = m.policy->unmatched(m.seen);
      m.checking_policy = false;
      m.seen = SeenSaves{};
    }
  }
  if (!unmatched.empty()) {
    std::string list;
    for (size_t i = 0; i < unmatched.size() && i < 5; ++i) list += (i ? ", " : "") + unmatched[i];
    if (unmatched.size() > 5) list += detail::concat(", and ", unmatched.size() - 5, " more");
    throw ValueError(detail::concat("cache policy '", m.policy->name(), "': ", unmatched.size(), " entr",
                                    unmatched.size() == 1 ? "y matches" : "ies match",
                                    " nothing in this model's first step: ", list,
                                    " (scopes and blocks are module paths, e.g. transformer.h.0.mlp)"));
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
