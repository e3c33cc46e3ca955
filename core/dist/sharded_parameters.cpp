#include "strata/dist/sharded_parameters.h"

#include <cstdio>

#include "strata/autograd/grad_mode.h"
#include "strata/autograd/scope_notifying_policy.h"
#include "strata/core/backend.h"
#include "strata/core/error.h"
#include "strata/core/factory.h"
#include "strata/core/memory_stats.h"

namespace strata::dist {

namespace {

// Copies `bytes` between device memory of `device` (either side may be host memory), waiting.
void copy_bytes(void* dst, const void* src, size_t bytes, Device device) {
  if (bytes == 0) return;
  Backend& be = backend_for(device);
  const std::unique_ptr<Event> after = be.record_compute(device.index);
  const std::unique_ptr<Event> done = be.copy_bytes_async(dst, src, bytes, device.index, after.get());
  if (done) done->synchronize();
}

}  // namespace

ShardedParameters::ShardedParameters(const DistributedDataParallel& ddp)
    : group_(const_cast<ProcessGroup&>(ddp.group())) {
  STRATA_CHECK(ddp.shards_gradients(), ValueError,
               "ShardedParameters: ZeRO-3 needs a DistributedDataParallel built with shard_gradients");
  const int W = group_.size(), rank = group_.rank();
  NoGradGuard no_grad;
  MemoryCategoryGuard category(MemoryCategory::Parameter);
  for (const Tensor& p : ddp.parameters()) {
    const Storage& st = p.storage();
    STRATA_CHECK(p.is_contiguous() && p.storage_offset() == 0 && st->nbytes() == p.nbytes(),
                 NotImplementedError, "ShardedParameters: parameter ", p.str(),
                 " does not own its storage whole");
    STRATA_CHECK(index_.emplace(st.get(), params_.size()).second, ValueError, "ShardedParameters: parameter ",
                 p.str(), " shares its storage with another");
    Param q;
    q.tensor = p;
    q.storage = st;
    q.span = shard_span(p.numel(), rank, W, ddp.shard_alignment());
    shards_.push_back(p.view({-1}).narrow(0, q.span.begin, q.span.len).clone());
    params_.push_back(std::move(q));
  }
  for (Param& q : params_) {
    q.storage->set_pager(this);
    q.storage->release_device_bytes();
  }
}

ShardedParameters::~ShardedParameters() {
  try {
    gather_all();
    for (Param& q : params_) q.storage->set_pager(nullptr);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ShardedParameters: bringing the parameters back failed: %s\n", e.what());
  }
}

void ShardedParameters::gather(Param& p) {
  const int W = group_.size();
  const int64_t n = p.tensor.numel(), chunk = p.span.chunk;
  const size_t esize = element_size(p.tensor.dtype());
  const TensorOptions options = TensorOptions(p.tensor.dtype()).device(p.tensor.device());
  MemoryCategoryGuard category(MemoryCategory::Temporary);
  const Tensor& mine = shards_[size_t(&p - params_.data())];
  Tensor send = mine;
  if (mine.numel() < chunk) {
    send = strata::zeros({chunk}, options);
    if (mine.numel() > 0) send.narrow(0, 0, mine.numel()).copy_(mine);
  }
  const Tensor all = strata::empty({chunk * W}, options);
  if (chunk > 0) group_.all_gather(all, send)->wait();
  ++gathers_;
  p.storage->allocate_device_bytes();
  copy_bytes(p.storage->device_bytes(), all.data_ptr(), size_t(n) * esize, p.tensor.device());
  p.storage->mark_resident(true);
  p.whole = true;
  p.version_at = p.storage->version();
  if (!scopes_.empty()) scopes_.back().push_back(size_t(&p - params_.data()));
}

void ShardedParameters::drop(Param& p, bool write_back) {
  if (!p.whole) return;
  if (write_back && p.storage->version() != p.version_at && p.span.len > 0) {
    const size_t esize = element_size(p.tensor.dtype());
    const Tensor& mine = shards_[size_t(&p - params_.data())];
    copy_bytes(mine.data_ptr(),
               static_cast<const char*>(p.storage->device_bytes()) + size_t(p.span.begin) * esize,
               size_t(p.span.len) * esize, p.tensor.device());
  }
  p.storage->release_device_bytes();
  p.whole = false;
}

void ShardedParameters::fault_in(StorageImpl& s) {
  std::lock_guard<std::recursive_mutex> lk(mu_);
  const auto at = index_.find(&s);
  STRATA_CHECK(at != index_.end(), ValueError, "ShardedParameters: storage ", s.id(),
               " is not a parameter's");
  Param& p = params_[at->second];
  if (!p.whole) gather(p);
}

void ShardedParameters::page_out(StorageImpl& s) {
  std::lock_guard<std::recursive_mutex> lk(mu_);
  const auto at = index_.find(&s);
  if (at != index_.end()) drop(params_[at->second], /*write_back=*/true);
}

void ShardedParameters::gather_all() {
  std::lock_guard<std::recursive_mutex> lk(mu_);
  for (Param& p : params_)
    if (!p.whole) gather(p);
}

void ShardedParameters::release_all() {
  std::lock_guard<std::recursive_mutex> lk(mu_);
  for (Param& p : params_) drop(p, /*write_back=*/false);
  for (auto& scope : scopes_) scope.clear();
}

void ShardedParameters::on_scope(autograd::ScopeEvent event) {
  std::lock_guard<std::recursive_mutex> lk(mu_);
  if (event == autograd::ScopeEvent::Enter) {
    scopes_.emplace_back();
    return;
  }
  if (scopes_.empty()) return;
  for (size_t i : scopes_.back()) drop(params_[i], /*write_back=*/true);
  scopes_.pop_back();
}

std::shared_ptr<autograd::SavePolicy> ShardedParameters::wrap(std::shared_ptr<autograd::SavePolicy> inner) {
  return std::make_shared<autograd::ScopeNotifyingPolicy>(
      std::move(inner), [params = shared_from_this()](autograd::ScopeEvent event, autograd::Phase,
                                                      const std::string&) { params->on_scope(event); });
}

size_t ShardedParameters::gathered() const {
  std::lock_guard<std::recursive_mutex> lk(mu_);
  size_t n = 0;
  for (const Param& p : params_) n += p.whole;
  return n;
}

int64_t ShardedParameters::gathers() const {
  std::lock_guard<std::recursive_mutex> lk(mu_);
  return gathers_;
}

}  // namespace strata::dist
