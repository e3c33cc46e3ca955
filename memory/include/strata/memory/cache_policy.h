// CacheAction (keep / recompute / host / NVMe) and CachePolicy: who decides, per saved tensor,
// what the TensorCache does with it. Built-in policies: keep-all, rules, SSDTrain's adaptive
// offloading; specs like "nvme", "recompute", "rules:h.*.mlp*=host;*=keep" parse into them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "strata/autograd/saved_tensor.h"

namespace strata::memory {

enum class CacheAction : uint8_t { Keep, Recompute, Host, Nvme };
const char* cache_action_name(CacheAction a);
// "keep", "recompute", "host", "nvme"; throws ValueError naming `text` otherwise.
CacheAction parse_cache_action(std::string_view text);

// What a model's step saved, for checking a policy's entries against it: the planner blocks,
// the (scope, op) of every save a cache could move, and their keys.
struct SeenSaves {
  std::set<std::string> blocks;
  std::set<std::pair<std::string, std::string>> scope_ops;
  std::set<std::string> keys;
};

// What a policy sees when a storage is saved for the first time in a step.
struct SaveRequest {
  const autograd::SaveInfo* info = nullptr;  // info->key: stable across steps, "<scope>#<n>:<op>"
  size_t storage_bytes = 0;     // the whole storage (views of one storage are stored once)
  size_t group = 0;             // forward index of the block it was saved in
  size_t groups_last_step = 0;  // blocks seen in the previous step (0 in the first step)
};

// One block's figures from a profiled step (for adaptive policies).
struct GroupProfile {
  std::string block;
  double forward_seconds = 0;  // time between the block's forward enter and exit
  uint64_t bytes = 0;          // storages saved in it, offloaded or kept (deduplicated)
  uint64_t input_bytes = 0;    // ... of which a recompute segment's inputs
  uint64_t recompute_bytes = 0;  // storages its recompute saved (when it ran as a segment)
  bool segment = false;
  // What the block would hold if it were kept: what it saved, or what its recompute saved.
  uint64_t keep_bytes() const { return segment ? recompute_bytes : bytes; }
};
struct StepProfile {
  std::vector<GroupProfile> groups;  // forward order
  double forward_seconds = 0;
  double write_bytes_per_second = 0;  // measured by the NVMe tier (0 when nothing was written)
};

class CachePolicy {
 public:
  virtual ~CachePolicy() = default;
  virtual std::string name() const = 0;
  // The action for a storage saved outside recompute segments. Parameters, recompute-phase
  // tensors and tensors under the cache's size threshold never reach the policy.
  virtual CacheAction decide(const SaveRequest& r) = 0;
  // Whether the block at `path` runs as a recompute segment (saving only its inputs).
  virtual bool recompute_block(const std::string& path) { return false; }
  // Asked by ops that have a faster variant saving more (the fused LM head computes dx and dW in
  // forward and saves them) before they choose: true asks for the lean variant (save little, redo
  // work in backward: op-level recompute inside the op). `where` names the op, scope and block.
  // The default: a policy that saves memory wants it; keep-all answers false, and policies that
  // keep what is saved outside blocks (host, nvme, adaptive) answer false there.
  virtual bool prefers_lean(const autograd::SaveInfo&) { return true; }
  // Blocks to load ahead when backward enters a block (0: the cache's own setting).
  virtual size_t prefetch_blocks() const { return 0; }
  // End of a step, with what it measured.
  virtual void on_step_end(const StepProfile&) {}
  // The entries of this policy (rules, a plan's blocks and tensors) that name nothing in `seen`,
  // the model's first step under it: each as "'<entry>' (<why>)". The cache refuses a policy
  // with any (a rule or plan written for another model, or mistyped, would otherwise do nothing).
  virtual std::vector<std::string> unmatched(const SeenSaves& seen) const { return {}; }
};

// One rule: a glob over the scope path (or the block path for segments), an op name ("*" for
// any), a minimum size, and the action. The first matching rule wins.
struct CacheRule {
  std::string scope_glob = "*";
  std::string op = "*";
  size_t min_bytes = 0;
  CacheAction action = CacheAction::Keep;
};

// Rules over scope, op and size. A `Recompute` rule with op "*" whose glob matches a block's path
// makes that block a segment; matching a saved tensor's scope, it asks for op-level recompute
// (the tensor is dropped and made again by its producer when it can, else kept).
// keep_last_blocks: SSDTrain's rule, the last blocks before the loss are kept (their tensors
// are needed first in backward).
std::shared_ptr<CachePolicy> make_rule_policy(std::vector<CacheRule> rules,
                                              size_t keep_last_blocks = 0);
std::shared_ptr<CachePolicy> make_keep_all_policy();

// SSDTrain's adaptive offloading: the first step offloads every block to `tier`; from its
// profile it finds the last block i with (sum_{j<i} S_j + 2 S_i) / (sum_j F_j + 2 sum_{j>i} F_j)
// <= write bandwidth and keeps the blocks after i from then on.
std::shared_ptr<CachePolicy> make_adaptive_policy(CacheAction tier = CacheAction::Nvme);

// Parses a policy spec:
//   keep | recompute | host | nvme | adaptive[:host]   (every block; the last `keep_last`
//   blocks kept for host/nvme), or rules:<glob>[@op][>=bytes]=<action>;...  e.g.
//   "rules:h.*.mlp*=nvme;h.*=recompute;*=keep". Throws ValueError naming the bad part.
std::shared_ptr<CachePolicy> parse_cache_policy(const std::string& spec, size_t keep_last = 1);

// Shell-style glob: '*' any run of characters (dots included), '?' one character.
bool glob_match(std::string_view pattern, std::string_view text);

}  // namespace strata::memory
