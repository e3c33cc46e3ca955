// ParamPager: paged weights and gradients. Every paged storage is a Page: on the device, loading
// onto it, at home (its store), or being written home. Loads run on one worker and writes on
// another; the calling thread only allocates, records the device's compute, and waits when it
// touches a page that is not on the device yet.
#include "strata/memory/param_pager.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "memory/worker.h"
#include "strata/autograd/scope_notifying_policy.h"
#include "strata/core/backend.h"
#include "strata/core/byte_size.h"
#include "strata/core/error.h"
#include "strata/core/stream.h"
#include "strata/nn/planner_blocks.h"

namespace strata::memory {

namespace {

using autograd::Phase;
using autograd::ScopeEvent;
using Clock = std::chrono::steady_clock;
using optim::StatePlacement;

enum class Where : uint8_t { Device, Loading, Home, Writing };

struct Page {
  bool gradient = false;
  size_t slot = 0;   // its index in its store
  size_t block = 0;  // the planner block its parameter belongs to
  Tensor param;      // the parameter (a gradient page's storage is its current .grad())
  std::weak_ptr<StorageImpl> storage;
  uint64_t id = 0;  // the storage's id (0: a gradient page before its first gradient)
  Where where = Where::Device;
  bool home_valid = false;  // home holds the bytes of version synced_version
  uint64_t synced_version = 0;
  bool keep_after_write = false;  // touched while being written: stays on the device
  size_t nbytes = 0;
};

// A storage a paged parameter or gradient can own alone: whole, contiguous, its allocator's.
bool pageable(const Tensor& t) {
  return t.defined() && t.is_contiguous() && t.storage_offset() == 0 && t.storage()->nbytes() == t.nbytes() &&
         t.nbytes() > 0;
}

}  // namespace

struct ParamPager::Impl {
  Impl(Device d, ParamPagerSettings settings) : device(d), backend(backend_for(d)), s(std::move(settings)) {}

  Device device;
  Backend& backend;
  ParamPagerSettings s;
  StoragePager* self = nullptr;
  std::vector<std::string> block_paths;
  std::unordered_map<std::string, size_t> block_index;  // exact block path -> index
  std::vector<std::vector<size_t>> block_weights;       // weight pages per block
  std::vector<Page> pages;                              // fixed after create(): jobs hold indices
  std::unordered_map<uint64_t, size_t> by_id;           // storage id -> page
  std::unordered_map<std::string, int> block_of_scope;  // scope path -> block (-1: none), memoized
  bool in_backward = false;
  int backward_block = -1;
  uint64_t writing_bytes = 0;  // pages being written home, whose device memory is still held
  uint64_t write_window = 0;   // the most writing_bytes may be: one block's (below)
  size_t params = 0;           // parameters with a page (a slot in each store used)
  uint64_t param_bytes = 0;
  mutable std::mutex mu;
  std::condition_variable cv;
  PagerStats stats;
  std::string failure;
  Worker loads, stores;  // last: their threads stop first

  optim::StateStore& store_of(const Page& pg) const {
    return pg.gradient ? *s.gradient_store : *s.weight_store;
  }
  const char* kind(const Page& pg) const { return pg.gradient ? "gradient" : "weight"; }
  std::string name_of(const Page& pg) const {
    return std::string(kind(pg)) + " of parameter " + std::to_string(pg.slot) + " (block " +
           block_paths[pg.block] + ", " + format_bytes(double(pg.nbytes)) + ")";
  }

  int block_of(const std::string& path) {
    auto it = block_of_scope.find(path);
    if (it != block_of_scope.end()) return it->second;
    int best = -1;
    size_t best_len = 0;
    for (size_t b = 0; b < block_paths.size(); ++b) {
      const std::string& bp = block_paths[b];
      const bool inside = path.size() >= bp.size() && path.compare(0, bp.size(), bp) == 0 &&
                          (path.size() == bp.size() || path[bp.size()] == '.' || bp.empty());
      if (inside && (best < 0 || bp.size() > best_len)) {
        best = int(b);
        best_len = bp.size();
      }
    }
    block_of_scope.emplace(path, best);
    return best;
  }

  // Copies between device memory and a host chunk of a store, waiting for the copy.
  void copy(void* dst, const void* src, size_t bytes, Event* after) {
    std::unique_ptr<Event> done = backend.copy_bytes_async(dst, src, bytes, device.index, after);
    if (done) done->synchronize();
  }

  int64_t chunk_of(const Page& pg) const { return store_of(pg).chunk_for(pg.param.numel()); }

  // Calls fn(begin, end, byte offset, bytes) for each chunk of page `pg` its store moves at once.
  template <class Fn>
  void for_each_chunk(const Page& pg, Fn&& fn) const {
    const int64_t numel = pg.param.numel(), chunk = chunk_of(pg);
    const size_t esize = pg.param.element_size();
    for (int64_t begin = 0; begin < numel; begin += chunk) {
      const int64_t end = std::min(numel, begin + chunk);
      fn(begin, end, size_t(begin) * esize, size_t(end - begin) * esize);
    }
  }

  // ---- the workers' jobs ----

  void run_load(size_t index, Storage st, std::shared_ptr<Event> after) {
    Page& pg = pages[index];
    optim::StateStore& store = store_of(pg);
    const int64_t numel = pg.param.numel(), chunk = chunk_of(pg);
    std::string failed;
    try {
      store.will_acquire(pg.slot, 0, std::min(numel, chunk));
      for_each_chunk(pg, [&](int64_t begin, int64_t end, size_t at, size_t bytes) {
        if (end < numel) store.will_acquire(pg.slot, end, std::min(numel, end + chunk));
        const std::vector<Tensor> parts = store.acquire(pg.slot, begin, end);
        copy(static_cast<char*>(st->device_bytes()) + at, parts[0].data_ptr(), bytes,
             begin == 0 ? after.get() : nullptr);
        store.release(pg.slot, begin, end, /*modified=*/false);
      });
    } catch (const std::exception& e) {
      failed = e.what();
    }
    std::lock_guard<std::mutex> lk(mu);
    if (failed.empty()) {
      pg.where = Where::Device;
      pg.synced_version = st->version();
      st->mark_resident(true);
      (pg.gradient ? stats.gradient_bytes_in : stats.weight_bytes_in) += pg.nbytes;
    } else {
      pg.where = Where::Home;
      st->release_device_bytes();
      if (failure.empty())
        failure = "loading the " + name_of(pg) + " from " + store.describe() + ": " + failed;
    }
    cv.notify_all();
  }

  void run_write(size_t index, Storage st, uint64_t version, std::shared_ptr<Event> after) {
    Page& pg = pages[index];
    optim::StateStore& store = store_of(pg);
    std::string failed;
    try {
      for_each_chunk(pg, [&](int64_t begin, int64_t end, size_t at, size_t bytes) {
        const std::vector<Tensor> parts = store.acquire_for_write(pg.slot, begin, end);
        copy(parts[0].data_ptr(), static_cast<const char*>(st->device_bytes()) + at, bytes,
             begin == 0 ? after.get() : nullptr);
        store.release(pg.slot, begin, end, /*modified=*/true);
      });
    } catch (const std::exception& e) {
      failed = e.what();
    }
    std::lock_guard<std::mutex> lk(mu);
    writing_bytes -= pg.nbytes;
    if (!failed.empty()) {
      // The device copy is the only one: it stays, and the failure is reported at the next touch.
      pg.where = Where::Device;
      st->mark_resident(true);
      if (failure.empty()) failure = "writing the " + name_of(pg) + " to " + store.describe() + ": " + failed;
    } else {
      pg.home_valid = true;
      pg.synced_version = version;
      (pg.gradient ? stats.gradient_bytes_out : stats.weight_bytes_out) += pg.nbytes;
      if (pg.keep_after_write) {
        pg.where = Where::Device;
        st->mark_resident(true);
      } else {
        pg.where = Where::Home;
        st->release_device_bytes();
      }
    }
    cv.notify_all();
  }

  // A weight still on the CPU (a model not yet moved to `device`): its bytes go to its store, and
  // the parameter becomes a device storage without memory, at home.
  void place_from_host(Page& pg) {
    Tensor& p = pg.param;
    optim::StateStore& store = store_of(pg);
    for_each_chunk(pg, [&](int64_t begin, int64_t end, size_t at, size_t bytes) {
      const std::vector<Tensor> parts = store.acquire_for_write(pg.slot, begin, end);
      std::memcpy(parts[0].data_ptr(), static_cast<const char*>(p.data_ptr()) + at, bytes);
      store.release(pg.slot, begin, end, /*modified=*/true);
    });
    auto st = std::make_shared<StorageImpl>(pg.nbytes, device, &backend.allocator(device.index),
                                            MemoryCategory::Parameter);
    st->release_device_bytes();
    nn::set_data(p, Tensor::from_storage(st, p.shape(), p.strides(), 0, p.dtype()));
    pg.where = Where::Home;
    pg.home_valid = true;
    pg.synced_version = st->version();
    stats.weight_bytes_out += pg.nbytes;
  }

  // ---- under mu ----

  // The page whose current storage is `s` (with that storage), or none.
  std::optional<std::pair<size_t, Storage>> page_holding(const StorageImpl& s) {
    auto it = by_id.find(s.id());
    if (it == by_id.end()) return std::nullopt;
    Storage st = pages[it->second].storage.lock();
    if (st == nullptr || st.get() != &s) return std::nullopt;
    return std::make_pair(it->second, std::move(st));
  }

  void start_load(size_t index, const Storage& st) {
    Page& pg = pages[index];
    st->allocate_device_bytes();
    pg.where = Where::Loading;
    std::shared_ptr<Event> after(backend.record_compute(device.index));
    loads.push([this, index, st, after] { run_load(index, st, after); });
  }

  void start_write(size_t index, const Storage& st, std::unique_lock<std::mutex>& lk) {
    Page& pg = pages[index];
    // Device memory leaves only once its write ends: writes under way are held to a window, so a
    // slow store costs time, not device memory.
    if (writing_bytes > 0 && writing_bytes + pg.nbytes > write_window) {
      const auto t0 = Clock::now();
      cv.wait(lk, [&] { return writing_bytes == 0 || writing_bytes + pg.nbytes <= write_window; });
      stats.wait_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
    }
    writing_bytes += pg.nbytes;
    st->mark_resident(false);  // a touch from now on waits for the write
    pg.where = Where::Writing;
    pg.keep_after_write = false;
    std::shared_ptr<Event> after(backend.record_compute(device.index));
    stores.push([this, index, st, version = st->version(), after] { run_write(index, st, version, after); });
  }

  void throw_if_failed() const {
    if (!failure.empty()) throw IoError("parameter pager: " + failure);
  }

  // Makes page `index` (whose storage is `st`) resident, waiting as needed.
  void make_resident(size_t index, const Storage& st, std::unique_lock<std::mutex>& lk) {
    Page& pg = pages[index];
    const auto t0 = Clock::now();
    bool waited = false;
    for (;;) {
      throw_if_failed();
      if (pg.where == Where::Device) break;
      if (pg.where == Where::Home) {
        ++stats.demand_loads;
        start_load(index, st);
      } else if (pg.where == Where::Writing) {
        pg.keep_after_write = true;
      }
      waited = true;
      cv.wait(lk);
    }
    if (waited) stats.wait_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
  }

  void page_out(size_t index, const Storage& st, std::unique_lock<std::mutex>& lk) {
    Page& pg = pages[index];
    while (pg.where == Where::Loading) cv.wait(lk);               // let it land, then decide
    if (pg.where == Where::Writing) pg.keep_after_write = false;  // released after being wanted
    if (pg.where != Where::Device) return;
    if (pg.home_valid && st->version() == pg.synced_version) {
      st->release_device_bytes();  // home has these bytes already
      pg.where = Where::Home;
    } else {
      start_write(index, st, lk);
    }
  }

  // Page `index` is wanted soon: a load starts, or a write under way keeps the device copy.
  void want(size_t index) {
    Page& pg = pages[index];
    if (pg.where == Where::Writing) {
      pg.keep_after_write = true;
    } else if (pg.where == Where::Home) {
      if (Storage st = pg.storage.lock()) start_load(index, st);
    }
  }

  void request(int block) {
    if (block < 0 || size_t(block) >= block_weights.size()) return;
    for (size_t index : block_weights[size_t(block)]) want(index);
  }

  void release(int block, std::unique_lock<std::mutex>& lk) {
    if (block < 0 || size_t(block) >= block_weights.size()) return;
    for (size_t index : block_weights[size_t(block)])
      if (Storage st = pages[index].storage.lock()) page_out(index, st, lk);
  }

  void request_ahead(int block, int direction) {
    for (size_t k = 1; k <= s.prefetch_blocks; ++k) request(block + direction * int(k));
  }

  // A gradient page's storage is the parameter's current .grad(): a new one (after zero_grad)
  // replaces the old, which comes back to its device first if something still holds it.
  bool adopt_gradient(size_t index, const Storage& st, std::unique_lock<std::mutex>& lk) {
    Page& pg = pages[index];
    if (pg.id == st->id()) return true;
    if (st->pager() != nullptr) return false;  // paged by someone else
    if (Storage old = pg.storage.lock()) {
      make_resident(index, old, lk);
      old->set_pager(nullptr);
    }
    by_id.erase(pg.id);
    st->set_pager(self);
    pg.storage = st;
    pg.id = st->id();
    by_id[pg.id] = index;
    pg.where = Where::Device;
    pg.home_valid = false;
    return true;
  }

  void on_gradient(size_t index) {
    const Tensor& g = pages[index].param.grad();
    if (!pageable(g) || g.dtype() != pages[index].param.dtype()) return;
    const Storage st = g.storage();
    std::unique_lock<std::mutex> lk(mu);
    if (adopt_gradient(index, st, lk)) page_out(index, st, lk);
  }
};

ParamPager::ParamPager(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) { impl_->self = this; }

std::shared_ptr<ParamPager> ParamPager::create(const nn::Module& model, Device device,
                                               ParamPagerSettings settings) {
  STRATA_CHECK(settings.weights == StatePlacement::Device || settings.weight_store != nullptr, ValueError,
               "parameter pager: weights placed in ", optim::state_placement_name(settings.weights),
               " need a store to live in");
  STRATA_CHECK(settings.gradients == StatePlacement::Device || settings.gradient_store != nullptr, ValueError,
               "parameter pager: gradients placed in ", optim::state_placement_name(settings.gradients),
               " need a store to live in");
  STRATA_CHECK(settings.weight_store == nullptr || settings.weight_store != settings.gradient_store,
               ValueError, "parameter pager: weights and gradients need a store each");
  std::shared_ptr<ParamPager> pager(new ParamPager(std::make_unique<Impl>(device, std::move(settings))));
  Impl& m = *pager->impl_;
  const bool weights = m.s.weights != StatePlacement::Device, grads = m.s.gradients != StatePlacement::Device;

  // Each parameter belongs to its innermost block.
  nn::PlannerBlocks blocks = nn::planner_blocks(model);
  const std::unordered_map<const TensorImpl*, size_t>& block_of_param = blocks.block_of;
  m.block_paths = std::move(blocks.paths);
  for (size_t b = 0; b < m.block_paths.size(); ++b) m.block_index.emplace(m.block_paths[b], b);
  m.block_weights.resize(m.block_paths.size());

  std::unordered_map<uint64_t, int> storage_users;
  const auto named = model.named_parameters();
  for (const auto& [name, p] : named) ++storage_users[p.storage()->id()];
  for (const auto& [name, p] : named) {
    auto it = block_of_param.find(p.impl());
    if (it == block_of_param.end() || !pageable(p) || storage_users[p.storage()->id()] != 1) continue;
    if (!weights && !(grads && p.requires_grad())) continue;
    STRATA_CHECK(p.device() == device || p.device().is_cpu(), DeviceError, "parameter pager: parameter ",
                 name, " is on ", p.device().str(),
                 "; page a model on its device, or on the CPU before it moves there");
    const size_t slot = m.params++;
    m.param_bytes += p.nbytes();
    if (weights) {
      Page pg;
      pg.slot = slot;
      pg.block = it->second;
      pg.param = p;
      pg.nbytes = p.nbytes();
      m.s.weight_store->add(slot, 1, p.numel(), p.dtype());
      m.block_weights[pg.block].push_back(m.pages.size());
      m.pages.push_back(std::move(pg));
    }
    if (grads && p.requires_grad()) {
      Page pg;
      pg.gradient = true;
      pg.slot = slot;
      pg.block = it->second;
      pg.param = p;
      pg.nbytes = p.nbytes();
      m.s.gradient_store->add(slot, 1, p.numel(), p.dtype());
      m.pages.push_back(std::move(pg));
    }
  }
  // Writes under way hold at most one block's weights (or gradients, when only they are paged).
  std::vector<uint64_t> block_bytes(m.block_paths.size(), 0);
  for (const Page& pg : m.pages)
    if (pg.gradient != weights) block_bytes[pg.block] += pg.nbytes;
  for (uint64_t b : block_bytes) m.write_window = std::max(m.write_window, b);
  // Hooks and storages only once the page list is final (jobs and hooks keep indices).
  std::weak_ptr<ParamPager> weak = pager;
  for (size_t i = 0; i < m.pages.size(); ++i) {
    Page& pg = m.pages[i];
    if (pg.gradient) {
      pg.param.register_post_accumulate_grad_hook([weak, i](const Tensor&) {
        if (auto p = weak.lock()) p->impl_->on_gradient(i);
      });
      continue;
    }
    if (pg.param.device() != device) m.place_from_host(pg);  // straight home: never all on the device
    const Storage& st = pg.param.storage();
    st->set_pager(pager.get());
    pg.storage = st;
    pg.id = st->id();
    m.by_id[pg.id] = i;
  }
  {
    std::unique_lock<std::mutex> lk(m.mu);
    for (size_t i = 0; i < m.pages.size(); ++i)
      if (!m.pages[i].gradient && m.pages[i].where == Where::Device)
        m.page_out(i, m.pages[i].param.storage(), lk);
  }
  pager->end_step();
  return pager;
}

ParamPager::~ParamPager() {
  Impl& m = *impl_;
  try {
    std::unique_lock<std::mutex> lk(m.mu);
    m.failure.clear();  // what failed was reported; bring back what can come back
    for (size_t i = 0; i < m.pages.size(); ++i)
      if (Storage st = m.pages[i].storage.lock()) {
        m.make_resident(i, st, lk);
        st->set_pager(nullptr);
      }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata: parameter pager: %s\n", e.what());
  }
  m.loads.wait_idle();
  m.stores.wait_idle();
}

std::shared_ptr<autograd::SavePolicy> ParamPager::wrap(std::shared_ptr<autograd::SavePolicy> inner) {
  // The pager is told of every scope; what is saved stays the inner policy's.
  return std::make_shared<autograd::ScopeNotifyingPolicy>(
      std::move(inner), [pager = shared_from_this()](ScopeEvent event, Phase phase, const std::string& path) {
        pager->on_scope(event, phase, path);
      });
}

void ParamPager::on_scope(ScopeEvent event, Phase phase, const std::string& path) {
  Impl& m = *impl_;
  std::unique_lock<std::mutex> lk(m.mu);
  if (phase == Phase::Backward) {
    if (event != ScopeEvent::Enter) return;
    const int b = m.block_of(path);
    if (!m.in_backward) {
      m.in_backward = true;
      m.backward_block = -1;
      if (b < 0) m.request_ahead(int(m.block_paths.size()), -1);  // the last blocks come first
    }
    if (b == m.backward_block) return;
    m.release(m.backward_block, lk);
    m.backward_block = b;
    if (b >= 0) {
      m.request(b);
      m.request_ahead(b, -1);
    }
    return;
  }
  auto it = m.block_index.find(path);
  if (it == m.block_index.end()) return;
  const int b = int(it->second);
  if (phase == Phase::Recompute) {
    if (event == ScopeEvent::Enter) {
      m.request(b);
      m.request_ahead(b, -1);
    }
    return;
  }
  if (event == ScopeEvent::Enter) {
    m.in_backward = false;
    m.request(b);
    m.request_ahead(b, +1);
  } else {
    m.release(b, lk);
  }
}

void ParamPager::fault_in(StorageImpl& s) {
  Impl& m = *impl_;
  std::unique_lock<std::mutex> lk(m.mu);
  const auto page = m.page_holding(s);
  STRATA_CHECK(page.has_value(), DeviceError, "parameter pager: storage ", s.id(),
               " is away from its device and no page holds it");
  m.make_resident(page->first, page->second, lk);
}

void ParamPager::page_out(StorageImpl& s) {
  Impl& m = *impl_;
  std::unique_lock<std::mutex> lk(m.mu);
  if (const auto page = m.page_holding(s)) m.page_out(page->first, page->second, lk);
}

void ParamPager::prefetch(StorageImpl& s) {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lk(m.mu);
  if (const auto page = m.page_holding(s)) m.want(page->first);
}

void ParamPager::end_step() {
  Impl& m = *impl_;
  {
    std::unique_lock<std::mutex> lk(m.mu);
    m.in_backward = false;
    m.backward_block = -1;
    for (size_t i = 0; i < m.pages.size(); ++i)
      if (Storage st = m.pages[i].storage.lock()) m.page_out(i, st, lk);
  }
  m.stores.wait_idle();
  if (m.s.weight_store) m.s.weight_store->flush();
  if (m.s.gradient_store) m.s.gradient_store->flush();
  std::lock_guard<std::mutex> lk(m.mu);
  m.throw_if_failed();
}

size_t ParamPager::blocks() const { return impl_->block_paths.size(); }

size_t ParamPager::paged_parameters() const { return impl_->params; }

uint64_t ParamPager::paged_bytes() const { return impl_->param_bytes; }

const ParamPagerSettings& ParamPager::settings() const { return impl_->s; }

PagerStats ParamPager::stats() const {
  std::lock_guard<std::mutex> lk(impl_->mu);
  return impl_->stats;
}

std::string ParamPager::describe() const {
  const ParamPagerSettings& s = impl_->s;
  return std::string("weights ") + optim::state_placement_name(s.weights) + ", gradients " +
         optim::state_placement_name(s.gradients) + ": " + std::to_string(blocks()) +
         (blocks() == 1 ? " block, " : " blocks, ") + std::to_string(paged_parameters()) +
         (paged_parameters() == 1 ? " parameter, " : " parameters, ") + format_bytes(double(paged_bytes()));
}

}  // namespace strata::memory
