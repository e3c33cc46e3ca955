#include "strata/autograd/saved_tensor.h"

#include <unordered_map>

#include "strata/autograd/node.h"
#include "strata/autograd/scope.h"

namespace strata::autograd {

namespace {
std::shared_ptr<SavePolicy>& keep_all() {
  static auto* p = new std::shared_ptr<SavePolicy>(std::make_shared<KeepAllPolicy>());
  return *p;
}
thread_local std::shared_ptr<SavePolicy> tl_policy;

// The per-scope count of this thread's forward saves in the current step (save_key's n).
struct SaveKeyCounter {
  std::unordered_map<std::string, uint32_t> next;
  bool backward_ran = false;  // since the count started: the next forward save restarts it
  int off = 0;                // SaveKeysOffGuard depth
};
thread_local SaveKeyCounter tl_keys;

// The key of a tensor saved now, or "" when no cache may move it (SaveInfo::key).
std::string next_save_key(const SaveInfo& info) {
  if (info.is_parameter || current_phase() != Phase::Forward || tl_keys.off > 0) return {};
  if (tl_keys.backward_ran) restart_save_keys();
  return save_key(info.scope, tl_keys.next[info.scope]++, info.op);
}
}  // namespace

std::string save_key(const std::string& scope, uint32_t n, const char* op) {
  return scope + "#" + std::to_string(n) + ":" + op;
}

void restart_save_keys() {
  tl_keys.next.clear();
  tl_keys.backward_ran = false;
}

SaveKeysOffGuard::SaveKeysOffGuard() { ++tl_keys.off; }
SaveKeysOffGuard::~SaveKeysOffGuard() { --tl_keys.off; }

void detail::note_backward_ran() { tl_keys.backward_ran = true; }

std::shared_ptr<SavePolicy> current_save_policy_ptr() { return tl_policy ? tl_policy : keep_all(); }
SavePolicy& current_save_policy() { return tl_policy ? *tl_policy : *keep_all(); }

SavePolicyGuard::SavePolicyGuard(std::shared_ptr<SavePolicy> policy) : prev_(std::move(tl_policy)) {
  tl_policy = std::move(policy);
}
SavePolicyGuard::~SavePolicyGuard() { tl_policy = std::move(prev_); }

SavedTensor::SavedTensor(const Tensor& t, SaveInfo info) : info_(std::move(info)) {
  if (!t.defined()) return;
  defined_ = true;
  version_ = t.storage()->version_counter();
  saved_version_ = t.version();
  info_.bytes = t.nbytes();
  info_.is_parameter = info_.is_parameter || t.is_parameter() || t.storage()->holds_parameter();
  info_.storage_id = t.storage()->id();
  if (info_.scope.empty()) info_.scope = current_scope_path();
  if (info_.block.empty()) info_.block = current_block_path();
  storage_ = t.storage();
  if (!info_.is_output && t.grad_fn() && t.grad_fn()->can_recompute(t.output_nr()))
    info_.producer = t.grad_fn();
  info_.key = next_save_key(info_);
  if (!info_.is_parameter) t.storage()->acquire_saved();
  policy_ = current_save_policy_ptr();
  // Saved without autograd metadata: a node holding its own output must not form a cycle.
  packed_ = policy_->pack(t.detach(), info_);
}

Tensor SavedTensor::unpack() const {
  if (!defined_) return Tensor();
  STRATA_CHECK(!released_, AutogradError, info_.op,
               ": backward through the graph a second time (saved tensors were released; "
               "pass retain_graph=true to the first backward)");
  uint64_t now = version_->load(std::memory_order_relaxed);
  STRATA_CHECK(now == saved_version_, AutogradError, info_.op,
               ": a tensor saved for backward (scope '", info_.scope,
               "') was modified in place after it was saved (version ", saved_version_, " -> ",
               now, ")");
  return policy_->unpack(packed_, info_);
}

SavedTensor::SavedTensor(SavedTensor&& o) noexcept { *this = std::move(o); }

SavedTensor& SavedTensor::operator=(SavedTensor&& o) noexcept {
  if (this == &o) return *this;
  release();
  defined_ = o.defined_;
  released_ = o.released_;
  saved_version_ = o.saved_version_;
  version_ = std::move(o.version_);
  info_ = std::move(o.info_);
  policy_ = std::move(o.policy_);
  packed_ = std::move(o.packed_);
  storage_ = std::move(o.storage_);
  o.defined_ = false;
  return *this;
}

void SavedTensor::release() {
  if (!defined_ || released_) return;
  released_ = true;
  if (!info_.is_parameter)
    if (auto s = storage_.lock()) s->release_saved();
  packed_ = Packed{};
  policy_.reset();
  info_.producer.reset();
}

}  // namespace strata::autograd
