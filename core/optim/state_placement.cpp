// Optimizer's placed state: parameters whose per-element state lives in a StateStore and whose
// updates run on the host a chunk at a time (the part of optimizer.h that concerns place_state).
#include <algorithm>
#include <cstring>

#include "core/optim/cpu_update.h"
#include "strata/autograd/grad_mode.h"
#include "strata/core/backend.h"
#include "strata/core/memory_stats.h"
#include "strata/core/storage.h"
#include "strata/optim/optimizer.h"

namespace strata::optim {

namespace {

// `t` in host memory the copy engines can reach quickly: itself on the CPU, else a copy in the
// device's host allocator (page-locked on CUDA).
Tensor host_copy(const Tensor& t) {
  if (t.device().is_cpu()) return t;
  Allocator& pinned = backend_for(t.device()).host_allocator();
  auto storage = std::make_shared<StorageImpl>(t.nbytes(), kCPU, &pinned, MemoryCategoryGuard::current());
  Tensor out = Tensor::from_storage(storage, t.shape(), contiguous_strides(t.shape()), 0, t.dtype());
  out.copy_(t);
  return out;
}

}  // namespace

std::vector<std::string> Optimizer::buffer_names(const OptimizerOptions&) const {
  throw NotImplementedError(std::string(name_) +
                            ": keeps its state beside its parameters only (no StateStore)");
}

void Optimizer::advance_scalars(TensorDict&) const {}

void Optimizer::update_host_chunk(const OptimizerOptions&, const TensorDict&, const HostChunk&) const {
  throw NotImplementedError(std::string(name_) + ": no host update for a StateStore");
}

const OptimizerOptions& Optimizer::options_of(size_t index) const {
  size_t first = 0;
  for (const ParamGroup& g : groups_) {
    if (index < first + g.params_.size()) return *g.options_;
    first += g.params_.size();
  }
  throw IndexError(std::string(name_) + ": no parameter " + std::to_string(index));
}

uint64_t Optimizer::state_bytes(const ParamFilter& which) const {
  uint64_t bytes = 0;
  size_t index = 0;
  for (const ParamGroup& g : groups_) {
    const size_t count = buffer_names(*g.options_).size();
    for (const Tensor& p : g.params_) {
      if (!which || which(index, p)) bytes += uint64_t(count) * p.nbytes();
      ++index;
    }
  }
  return bytes;
}

void Optimizer::place_state(std::shared_ptr<StateStore> store, const ParamFilter& which) {
  STRATA_CHECK(store != nullptr, ValueError, name_, ".place_state: no store");
  STRATA_CHECK(store_ == nullptr || store_ == store, ValueError, name_,
               ".place_state: the state is already in ", store_->describe(), "; an optimizer has one store");
  for (const ParamGroup& g : groups_) (void)buffer_names(*g.options_);  // throws where unsupported
  NoGradGuard no_grad;
  MemoryCategoryGuard category(MemoryCategory::OptimizerState);
  store_ = std::move(store);
  placed_.resize(state_.size(), false);
  const std::vector<Tensor> params = parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    if (placed_[i] || (which && !which(i, params[i]))) continue;
    const OptimizerOptions& options = options_of(i);
    const TensorDict had = state_[i];  // its buffers move into the store, its scalars stay
    placed_[i] = true;
    if (!had.empty()) load_placed(i, options, params[i], had);
  }
}

void Optimizer::flush_state() {
  if (store_) store_->flush();
}

void Optimizer::update_placed(size_t index, const OptimizerOptions& options, Tensor& p, const Tensor& g,
                              size_t next_index, int64_t next_numel) {
  StateStore& store = *store_;
  const bool first = !store.contains(index);
  {
    MemoryCategoryGuard category(MemoryCategory::OptimizerState);
    if (first) store.add(index, buffer_names(options).size(), p.numel(), p.dtype());
    advance_scalars(state_[index]);
  }
  const Tensor ph = host_copy(p), gh = host_copy(g);
  const int64_t n = p.numel(), chunk = store.chunk_for(n);
  const size_t esize = element_size(p.dtype());
  auto* param = static_cast<char*>(ph.data_ptr());
  const auto* grad = static_cast<const char*>(gh.data_ptr());
  store.will_acquire(index, 0, std::min(n, chunk));
  for (int64_t begin = 0; begin < n; begin += chunk) {
    const int64_t end = std::min(n, begin + chunk);
    if (end < n)
      store.will_acquire(index, end, std::min(n, end + chunk));
    else if (next_index != kNoParameter)
      store.will_acquire(next_index, 0, std::min(next_numel, store.chunk_for(next_numel)));
    const std::vector<Tensor> buffers = store.acquire(index, begin, end);
    HostChunk c;
    c.dtype = p.dtype();
    c.param = param + size_t(begin) * esize;
    c.grad = grad + size_t(begin) * esize;
    c.numel = end - begin;
    c.first = first;
    for (const Tensor& b : buffers) c.buffers.push_back(b.data_ptr());
    update_host_chunk(options, state_[index], c);
    store.release(index, begin, end, /*modified=*/true);
  }
  if (!p.device().is_cpu()) p.copy_(ph);
}

void Optimizer::add_placed_state(size_t index, const Tensor& param, TensorDict& out,
                                 TensorSources* sources) const {
  const std::string prefix = "state." + std::to_string(index) + ".";
  const std::vector<std::string> buffers = buffer_names(options_of(index));
  for (const std::string& n : state_names()) {
    if (const Tensor* t = state_[index].find(n)) {
      out.insert(prefix + n, t->detach().clone());
      continue;
    }
    const auto pos = size_t(std::find(buffers.begin(), buffers.end(), n) - buffers.begin());
    if (pos == buffers.size() || !store_->contains(index)) continue;
    if (sources != nullptr) {
      out.insert(prefix + n, Tensor());
      (*sources)[prefix + n] = TensorSource{param.dtype(), param.shape(), store_->chunk_for(param.numel()),
                                            [this, index, pos, numel = param.numel(), dtype = param.dtype()](
                                                int64_t begin, int64_t end, void* dst) {
                                              read_placed(index, pos, numel, dtype, begin, end, dst);
                                            }};
      continue;
    }
    Tensor whole = Tensor::empty(param.shape(), param.dtype(), kCPU);
    read_placed(index, pos, param.numel(), param.dtype(), 0, param.numel(), whole.data_ptr());
    out.insert(prefix + n, std::move(whole));
  }
}

void Optimizer::read_placed(size_t index, size_t buffer, int64_t numel, DType dtype, int64_t begin,
                            int64_t end, void* dst) const {
  const int64_t chunk = store_->chunk_for(numel);
  const size_t esize = element_size(dtype);
  STRATA_CHECK(begin >= 0 && begin <= end && end <= numel, ValueError, name_, ": elements [", begin, ", ",
               end, ") of parameter ", index, "'s ", numel);
  // Whole store chunks, of which [begin, end) takes its part.
  for (int64_t at = begin / chunk * chunk; at < end; at += chunk) {
    const int64_t stop = std::min(numel, at + chunk);
    const std::vector<Tensor> parts = store_->acquire(index, at, stop);
    const int64_t from = std::max(at, begin), to = std::min(stop, end);
    std::memcpy(static_cast<char*>(dst) + size_t(from - begin) * esize,
                static_cast<const char*>(parts[buffer].data_ptr()) + size_t(from - at) * esize,
                size_t(to - from) * esize);
    store_->release(index, at, stop, /*modified=*/false);
  }
}

void Optimizer::load_placed(size_t index, const OptimizerOptions& options, const Tensor& param,
                            const TensorDict& state) {
  const std::vector<std::string> buffers = buffer_names(options);
  store_->remove(index);
  state_[index].clear();
  if (state.empty()) return;
  for (const std::string& n : state_names())
    if (std::find(buffers.begin(), buffers.end(), n) == buffers.end())
      if (const Tensor* t = state.find(n)) {
        // A scalar: "step" is an f64 CPU scalar, as load_state_dict makes it for the device path.
        Tensor dst =
            n == "step" ? Tensor::empty({}, DType::f64, kCPU) : Tensor::empty(t->shape(), t->dtype(), kCPU);
        dst.copy_(n == "step" ? t->reshape({}) : *t);
        state_[index].insert(n, std::move(dst));
      }
  std::vector<Tensor> sources;  // contiguous CPU copies, in buffer_names() order
  for (const std::string& n : buffers) {
    const Tensor* t = state.find(n);
    STRATA_CHECK(t != nullptr, ValueError, name_, ": the state of parameter ", index, " has no '", n, "'");
    Tensor src = Tensor::empty(param.shape(), param.dtype(), kCPU);
    src.copy_(t->reshape(param.shape()));
    sources.push_back(std::move(src));
  }
  store_->add(index, buffers.size(), param.numel(), param.dtype());
  const int64_t total = param.numel(), chunk = store_->chunk_for(total);
  const size_t esize = element_size(param.dtype());
  for (int64_t begin = 0; begin < total; begin += chunk) {
    const int64_t end = std::min(total, begin + chunk);
    const std::vector<Tensor> parts = store_->acquire(index, begin, end);
    for (size_t b = 0; b < buffers.size(); ++b)
      std::memcpy(parts[b].data_ptr(),
                  static_cast<const char*>(sources[b].data_ptr()) + size_t(begin) * esize,
                  size_t(end - begin) * esize);
    store_->release(index, begin, end, /*modified=*/true);
  }
}

}  // namespace strata::optim
