// The tensor cache's transfers, run on its store and load workers: a store to its tier (and the
// forward waits that hold the activation limit), a load back (or the memory copy reused), each
// ending in the record's next state and the tier's counters.
#include <cstring>

#include "memory/tensor_cache_impl.h"
#include "strata/core/allocator.h"
#include "strata/core/backend.h"

namespace strata::memory {

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
  std::vector<uint32_t> crcs;
  IoStatus st = rec->tier->write(src->data(), rec->nbytes, rec->extent, rec->memory(rec->produced.get()), crcs,
                                 &rec->cancel);
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
  if (!st.ok)
    fallback("write to " + rec->tier->describe() + " failed (" + st.what + " at offset " +
             std::to_string(st.file_offset) + "): tensors kept in memory");
  std::lock_guard<std::mutex> sl(stats_mu);
  if (stored) {
    TierCounters& c = counters_for(rec->action);
    c.bytes_written += rec->nbytes;
    ++c.tensors_written;
    if (rec->action == CacheAction::Nvme) store_busy_seconds += busy;
  } else if (st.ok) {
    ++stats.cancelled_stores;
  }
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
      TierCounters& t = counters_for(rec->action);
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
  const TensorMemory mem = rec->memory(after.get());
  IoStatus st = rec->tier->read(dst->data(), rec->nbytes, rec->extent, mem, rec->crcs);
  if (!st.ok) {
    warn("read from " + rec->tier->describe() + " failed (" + st.what + " at offset " +
         std::to_string(st.file_offset) + "): retrying once");
    st = rec->tier->read(dst->data(), rec->nbytes, rec->extent, mem, rec->crcs);
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
                   rec->tier->describe() + " at offset " +
                   std::to_string(st.file_offset) + " failed (" + st.what +
                   ") after its memory copy was freed, and it has no recompute recipe";
      if (rec->recipe.expired()) lost_msg = rec->error;  // with a recipe, unpack makes it again
    }
    rec->cv.notify_all();
  }
  std::lock_guard<std::mutex> sl(stats_mu);
  if (st.ok) {
    TierCounters& c = counters_for(rec->action);
    c.bytes_read += rec->nbytes;
    ++c.tensors_read;
  } else if (!lost_msg.empty()) {
    lost.push_back(lost_msg);
  }
}

}  // namespace strata::memory
