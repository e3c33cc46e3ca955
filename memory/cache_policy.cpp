#include "strata/memory/cache_policy.h"

#include <algorithm>
#include <cctype>
#include <mutex>
#include <set>

#include "strata/core/error.h"

namespace strata::memory {

const char* cache_action_name(CacheAction a) {
  switch (a) {
    case CacheAction::Keep: return "keep";
    case CacheAction::Recompute: return "recompute";
    case CacheAction::Host: return "host";
    case CacheAction::Nvme: return "nvme";
  }
  return "?";
}

CacheAction parse_cache_action(std::string_view text) {
  if (text == "keep") return CacheAction::Keep;
  if (text == "recompute") return CacheAction::Recompute;
  if (text == "host") return CacheAction::Host;
  if (text == "nvme") return CacheAction::Nvme;
  STRATA_CHECK(false, ValueError, "cache policy: unknown action '", std::string(text),
               "' (expected keep, recompute, host or nvme)");
  return CacheAction::Keep;
}

bool glob_match(std::string_view p, std::string_view t) {
  // Iterative matcher with one backtracking point for the last '*'.
  size_t pi = 0, ti = 0, star = std::string_view::npos, mark = 0;
  while (ti < t.size()) {
    if (pi < p.size() && (p[pi] == '?' || p[pi] == t[ti])) {
      ++pi;
      ++ti;
    } else if (pi < p.size() && p[pi] == '*') {
      star = pi++;
      mark = ti;
    } else if (star != std::string_view::npos) {
      pi = star + 1;
      ti = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

namespace {

class KeepAllCachePolicy final : public CachePolicy {
 public:
  std::string name() const override { return "keep"; }
  CacheAction decide(const SaveRequest&) override { return CacheAction::Keep; }
  bool prefers_lean(const autograd::SaveInfo&) override { return false; }
};

bool in_last_blocks(const SaveRequest& r, size_t keep_last) {
  return keep_last > 0 && r.groups_last_step > 0 && r.group + keep_last >= r.groups_last_step;
}

class RuleCachePolicy final : public CachePolicy {
 public:
  RuleCachePolicy(std::vector<CacheRule> rules, size_t keep_last, std::string name)
      : rules_(std::move(rules)), keep_last_(keep_last), name_(std::move(name)) {}
  std::string name() const override { return name_; }
  CacheAction decide(const SaveRequest& r) override {
    const autograd::SaveInfo& info = *r.info;
    for (const CacheRule& rule : rules_) {
      if (rule.op != "*" && rule.op != info.op) continue;
      if (r.storage_bytes < rule.min_bytes) continue;
      if (!glob_match(rule.scope_glob, info.scope)) continue;
      if (rule.action != CacheAction::Keep && in_last_blocks(r, keep_last_)) return CacheAction::Keep;
      return rule.action;
    }
    return CacheAction::Keep;
  }
  // The first rule for this op and scope says whether what the op saves may leave memory; the
  // lean variant's saved bytes are not known yet, so size limits do not exclude a rule.
  bool prefers_lean(const autograd::SaveInfo& where) override {
    for (const CacheRule& rule : rules_) {
      if (rule.op != "*" && rule.op != where.op) continue;
      if (!glob_match(rule.scope_glob, where.scope)) continue;
      return rule.action != CacheAction::Keep;
    }
    return false;
  }
  bool recompute_block(const std::string& path) override {
    for (const CacheRule& rule : rules_) {
      if (rule.op != "*" || rule.min_bytes != 0) continue;
      if (!glob_match(rule.scope_glob, path)) continue;
      return rule.action == CacheAction::Recompute;
    }
    return false;
  }
  // A rule names something when its glob matches a saved tensor's scope (with its op, when it
  // names one) or a block's path (for a block rule); size limits are not names.
  std::vector<std::string> unmatched(const SeenSaves& seen) const override {
    std::vector<std::string> out;
    for (const CacheRule& rule : rules_) {
      bool hit = false;
      for (const auto& [scope, op] : seen.scope_ops)
        hit = hit || ((rule.op == "*" || rule.op == op) && glob_match(rule.scope_glob, scope));
      if (rule.op == "*")
        for (const std::string& block : seen.blocks) hit = hit || glob_match(rule.scope_glob, block);
      if (!hit)
        out.push_back("'" + rule.scope_glob + (rule.op == "*" ? "" : "@" + rule.op) +
                      "' (no saved tensor's scope" + (rule.op == "*" ? " nor block" : " with that op") + ")");
    }
    return out;
  }

 private:
  std::vector<CacheRule> rules_;
  size_t keep_last_;
  std::string name_;
};

class AdaptiveCachePolicy final : public CachePolicy {
 public:
  explicit AdaptiveCachePolicy(CacheAction tier) : tier_(tier) {}
  std::string name() const override {
    return std::string("adaptive:") + cache_action_name(tier_);
  }
  CacheAction decide(const SaveRequest& r) override {
    if (r.info->block.empty()) return CacheAction::Keep;
    std::lock_guard<std::mutex> lk(mu_);
    return keep_.count(r.info->block) ? CacheAction::Keep : tier_;
  }
  // Outside blocks everything is kept, so the faster variant's extra saved bytes stay too.
  bool prefers_lean(const autograd::SaveInfo& where) override { return !where.block.empty(); }
  void on_step_end(const StepProfile& p) override {
    if (solved_ || p.write_bytes_per_second <= 0) return;
    std::vector<const GroupProfile*> blocks;
    for (const auto& g : p.groups)
      if (!g.block.empty()) blocks.push_back(&g);
    if (blocks.empty()) return;
    double f_total = 0;
    for (auto* g : blocks) f_total += g->forward_seconds;
    // B_req(i) = (sum_{j<i} S_j + 2 S_i) / (sum_j F_j + 2 sum_{j>i} F_j): the bytes that must
    // move before backward reaches block i, over the time until then (backward ~ 2x forward).
    size_t last = SIZE_MAX;
    double s_before = 0;
    for (size_t i = 0; i < blocks.size(); ++i) {
      double f_after = 0;
      for (size_t j = i + 1; j < blocks.size(); ++j) f_after += blocks[j]->forward_seconds;
      double need = (s_before + 2.0 * double(blocks[i]->bytes)) / (f_total + 2.0 * f_after);
      if (need <= p.write_bytes_per_second) last = i;
      s_before += double(blocks[i]->bytes);
    }
    std::lock_guard<std::mutex> lk(mu_);
    keep_.clear();
    for (size_t i = (last == SIZE_MAX ? 0 : last + 1); i < blocks.size(); ++i) keep_.insert(blocks[i]->block);
    solved_ = true;
  }

 private:
  CacheAction tier_;
  std::mutex mu_;
  std::set<std::string> keep_;
  bool solved_ = false;
};

std::string trim(std::string_view s) {
  size_t a = 0, b = s.size();
  while (a < b && (s[a] == ' ' || s[a] == '\t')) ++a;
  while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t')) --b;
  return std::string(s.substr(a, b - a));
}

size_t parse_bytes(const std::string& text, const std::string& spec) {
  STRATA_CHECK(!text.empty() && std::isdigit(static_cast<unsigned char>(text[0])), ValueError,
               "cache policy '", spec, "': bad size '", text,
               "' (a non-negative number of bytes, K, M or G)");
  size_t pos = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(text, &pos);
  } catch (...) {
    STRATA_CHECK(false, ValueError, "cache policy '", spec, "': bad size '", text, "'");
  }
  std::string unit = text.substr(pos);
  if (unit.empty() || unit == "B") return size_t(v);
  if (unit == "K" || unit == "KiB") return size_t(v) << 10;
  if (unit == "M" || unit == "MiB") return size_t(v) << 20;
  if (unit == "G" || unit == "GiB") return size_t(v) << 30;
  STRATA_CHECK(false, ValueError, "cache policy '", spec, "': bad size unit '", unit, "'");
  return 0;
}

}  // namespace

std::shared_ptr<CachePolicy> make_keep_all_policy() { return std::make_shared<KeepAllCachePolicy>(); }

std::shared_ptr<CachePolicy> make_rule_policy(std::vector<CacheRule> rules, size_t keep_last_blocks) {
  return std::make_shared<RuleCachePolicy>(std::move(rules), keep_last_blocks, "rules");
}

std::shared_ptr<CachePolicy> make_adaptive_policy(CacheAction tier) {
  STRATA_CHECK(tier == CacheAction::Host || tier == CacheAction::Nvme, ValueError,
               "adaptive cache policy: the tier must be host or nvme, not ", cache_action_name(tier));
  return std::make_shared<AdaptiveCachePolicy>(tier);
}

std::shared_ptr<CachePolicy> parse_cache_policy(const std::string& spec, size_t keep_last) {
  std::string s = trim(spec);
  if (s.empty() || s == "keep") return make_keep_all_policy();
  if (s == "recompute") {  // every block is a segment; what is saved between blocks is kept
    struct EveryBlock final : CachePolicy {
      std::string name() const override { return "recompute"; }
      CacheAction decide(const SaveRequest&) override { return CacheAction::Keep; }
      bool recompute_block(const std::string&) override { return true; }
    };
    return std::make_shared<EveryBlock>();
  }
  if (s == "host" || s == "nvme") {
    // Every tensor saved inside a block; tensors outside blocks (embeddings, loss head) stay.
    CacheRule r{"*", "*", 0, parse_cache_action(s)};
    auto p = std::make_shared<RuleCachePolicy>(std::vector<CacheRule>{r}, keep_last, s);
    struct BlocksOnly final : CachePolicy {
      std::shared_ptr<CachePolicy> inner;
      std::string name() const override { return inner->name(); }
      CacheAction decide(const SaveRequest& q) override {
        return q.info->block.empty() ? CacheAction::Keep : inner->decide(q);
      }
      bool prefers_lean(const autograd::SaveInfo& where) override { return !where.block.empty(); }
    };
    auto b = std::make_shared<BlocksOnly>();
    b->inner = p;
    return b;
  }
  if (s == "adaptive" || s == "adaptive:nvme") return make_adaptive_policy(CacheAction::Nvme);
  if (s == "adaptive:host") return make_adaptive_policy(CacheAction::Host);
  const std::string prefix = "rules:";
  STRATA_CHECK(s.rfind(prefix, 0) == 0, ValueError, "cache policy: unknown spec '", spec,
               "' (expected keep, recompute, host, nvme, adaptive[:host], or rules:<glob>=<action>;...)");
  std::vector<CacheRule> rules;
  std::string body = s.substr(prefix.size());
  size_t start = 0;
  while (start <= body.size()) {
    size_t end = body.find(';', start);
    if (end == std::string::npos) end = body.size();
    std::string item = trim(std::string_view(body).substr(start, end - start));
    start = end + 1;
    if (item.empty()) continue;
    size_t eq = item.rfind('=');
    STRATA_CHECK(eq != std::string::npos && eq > 0, ValueError, "cache policy '", spec,
                 "': rule '", item, "' is not <glob>[@op][>=bytes]=<action>");
    CacheRule rule;
    rule.action = parse_cache_action(trim(std::string_view(item).substr(eq + 1)));
    std::string lhs = item.substr(0, eq);
    if (!lhs.empty() && lhs.back() == '>') {  // "glob>=bytes=action" splits at the last '='
      STRATA_CHECK(false, ValueError, "cache policy '", spec, "': rule '", item, "' is malformed");
    }
    size_t ge = lhs.find(">=");
    if (ge != std::string::npos) {
      rule.min_bytes = parse_bytes(trim(lhs.substr(ge + 2)), spec);
      lhs = lhs.substr(0, ge);
    }
    size_t at = lhs.find('@');
    if (at != std::string::npos) {
      rule.op = trim(lhs.substr(at + 1));
      lhs = lhs.substr(0, at);
      STRATA_CHECK(!rule.op.empty(), ValueError, "cache policy '", spec, "': rule '", item,
                   "' has an empty op after '@'");
    }
    rule.scope_glob = trim(lhs);
    STRATA_CHECK(!rule.scope_glob.empty(), ValueError, "cache policy '", spec, "': rule '", item,
                 "' has an empty scope glob");
    rules.push_back(std::move(rule));
    if (end == body.size()) break;
  }
  STRATA_CHECK(!rules.empty(), ValueError, "cache policy '", spec, "' has no rules");
  return std::make_shared<RuleCachePolicy>(std::move(rules), keep_last, "rules");
}

}  // namespace strata::memory
