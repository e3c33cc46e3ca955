// The tensor cache's block index: saves grouped by planner block in forward order, segments,
// and the prefetch that loads a block's stores ahead of backward reaching it.
#include <algorithm>
#include <cstring>

#include "memory/tensor_cache_impl.h"

namespace strata::memory {

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

void TensorCache::grow_spill_arena(uint64_t bytes) {
  STRATA_CHECK(impl_->tiers.nvme != nullptr, ValueError, "TensorCache::grow_spill_arena: no NVMe tier");
  impl_->tiers.nvme->grow(bytes);
}

uint64_t TensorCache::spill_arena_capacity() const {
  return impl_->tiers.nvme ? impl_->tiers.nvme->extents().capacity() : 0;
}

void TensorCache::set_policy(std::shared_ptr<CachePolicy> policy) {
  impl_->policy = policy ? std::move(policy) : make_keep_all_policy();
  std::lock_guard<std::mutex> lk(impl_->index_mu);
  impl_->checking_policy = true;  // checked against its own first step
  impl_->seen = SeenSaves{};
}

StepProfile TensorCache::last_profile() const {
  std::lock_guard<std::mutex> lk(impl_->index_mu);
  return impl_->last_profile;
}

}  // namespace strata::memory
