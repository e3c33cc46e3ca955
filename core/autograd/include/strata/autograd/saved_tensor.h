// SavedTensor, SaveInfo and the SavePolicy interface: the one way backward reads tensors.
//
// Backward formulas never capture tensors. A node stores SavedTensor members; constructing
// one calls the thread's current SavePolicy::pack, and backward calls unpack(). The tensor
// cache (memory/) implements SavePolicy; the default KeepAll policy just holds the tensor.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "strata/core/generator.h"
#include "strata/autograd/scope.h"
#include "strata/core/tensor.h"

namespace strata::autograd {

class Node;

// Everything a policy or the planner may want to know about a saved tensor.
struct SaveInfo {
  const char* op = "";        // op that saves it ("matmul", "layer_norm", ...)
  std::string scope;          // module path at save time ("h.3.attn")
  std::string block;          // innermost planner block path
  size_t bytes = 0;           // bytes of the view (not the whole storage)
  bool is_parameter = false;  // parameters and their views are never offloaded
  bool is_output = false;     // the op's own output (e.g. tanh's result)
  uint32_t slot = 0;          // which of the op's saved tensors
  RngState rng{};             // for ops with randomness (dropout replay)
  uint64_t storage_id = 0;
  // The recompute recipe: the node that produced the tensor, when it can make it again from its
  // own saved tensors (Node::can_recompute); null otherwise and for a node's own outputs.
  std::shared_ptr<Node> producer;
  // The saved tensor's stable key, "<scope>#<n>:<op>" (save_key): the name a plan, a step trace
  // and the cache's statistics give it. Set by SavedTensor for the tensors a cache may move:
  // saved in forward, not a parameter or a view of one, not inside a recompute segment's
  // forward. Empty for every other save, which policies keep as it is.
  std::string key;
  bool cacheable() const { return !key.empty(); }
};

// The one definition of the key: `n` counts the forward saves in `scope` before this one since
// the step began (restart_save_keys), so the same tensor gets the same key in every step.
std::string save_key(const std::string& scope, uint32_t n, const char* op);
// Starts the per-scope count of this thread's forward saves afresh. The first forward save after
// a backward pass ran on this thread does it by itself (a new step or micro-batch); a cache or a
// tracer calls it where its step begins.
void restart_save_keys();
// Saves made while one is alive get no key (a recompute segment's forward, whose saves are
// placeholders the segment keeps: no cache sees them).
class SaveKeysOffGuard {
 public:
  SaveKeysOffGuard();
  ~SaveKeysOffGuard();
  SaveKeysOffGuard(const SaveKeysOffGuard&) = delete;
  SaveKeysOffGuard& operator=(const SaveKeysOffGuard&) = delete;
};
namespace detail {
// Called by the engine when a backward pass starts: the next forward save restarts the keys.
void note_backward_ran();
}  // namespace detail

// What a policy returns from pack: either the tensor itself, or a handle it understands.
struct Packed {
  Tensor tensor;                 // set when the policy keeps the tensor resident
  std::shared_ptr<void> handle;  // policy-private state otherwise
};

enum class ScopeEvent : unsigned char { Enter, Exit };

class SavePolicy {
 public:
  virtual ~SavePolicy() = default;
  virtual Packed pack(const Tensor& t, const SaveInfo& info) = 0;
  // May wait for a store, load, or recompute.
  virtual Tensor unpack(Packed& p, const SaveInfo& info) = 0;
  // Module enter/exit in forward, backward or recompute (prefetch hooks here).
  virtual void on_scope(ScopeEvent, Phase, const std::string& path) {}
  // Asked when a planner block is about to run its forward with grad mode on: true runs it as
  // a recompute segment (autograd/checkpoint.h) that saves only its inputs and RNG state.
  virtual bool wants_segment(const std::string& block_path) { return false; }
  // Told about each tensor a segment's recompute saves (kept by the segment itself), so a policy
  // can learn what a block saves without keeping it (the budget planner's profiling step).
  virtual void observe_recompute(const Tensor& t, const SaveInfo& info) {}
  // Ops with a faster, hungrier variant ask this before choosing it: true asks for the lean
  // variant, the one that saves least (e.g. the fused LM head saving only the row log-sum-exp and
  // recomputing its logits in backward, instead of saving dx and dW).
  virtual bool prefers_lean(const char* op) { return false; }
};

// The default policy: keep every saved tensor resident, zero overhead.
class KeepAllPolicy final : public SavePolicy {
 public:
  Packed pack(const Tensor& t, const SaveInfo&) override { return Packed{t, nullptr}; }
  Tensor unpack(Packed& p, const SaveInfo&) override { return p.tensor; }
};

// The calling thread's policy (innermost SavePolicyGuard, else KeepAll).
SavePolicy& current_save_policy();

// Installs a policy for the current thread, RAII; the policy must outlive the graphs that
// saved through it (SavedTensor holds a shared_ptr to it).
class SavePolicyGuard {
 public:
  explicit SavePolicyGuard(std::shared_ptr<SavePolicy> policy);
  ~SavePolicyGuard();
  SavePolicyGuard(const SavePolicyGuard&) = delete;
  SavePolicyGuard& operator=(const SavePolicyGuard&) = delete;

 private:
  std::shared_ptr<SavePolicy> prev_;
};
std::shared_ptr<SavePolicy> current_save_policy_ptr();

class SavedTensor {
 public:
  SavedTensor() = default;
  // Packs `t` (undefined tensors are saved as undefined). `info.op` names the op for errors.
  SavedTensor(const Tensor& t, SaveInfo info);
  SavedTensor(SavedTensor&& other) noexcept;
  SavedTensor& operator=(SavedTensor&& other) noexcept;
  SavedTensor(const SavedTensor&) = delete;
  SavedTensor& operator=(const SavedTensor&) = delete;
  ~SavedTensor() { release(); }

  bool defined() const { return defined_; }
  // Returns the saved tensor; throws AutogradError if it was modified in place since it was
  // saved, or if it was already released (backward ran without retain_graph).
  Tensor unpack() const;
  void release();
  const SaveInfo& info() const { return info_; }

 private:
  bool defined_ = false;
  bool released_ = false;
  uint64_t saved_version_ = 0;
  // The saved storage's version counter (not the storage: the policy decides where data lives).
  std::shared_ptr<std::atomic<uint64_t>> version_;
  SaveInfo info_;
  std::shared_ptr<SavePolicy> policy_;
  mutable Packed packed_;
  // The saved storage, for the SavedActivation accounting only (does not keep it alive).
  std::weak_ptr<StorageImpl> storage_;
};

}  // namespace strata::autograd
