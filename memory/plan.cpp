#include "strata/memory/plan.h"

#include <google/protobuf/text_format.h>

#include <algorithm>
#include <sstream>

#include "memory/plan.pb.h"
#include "memory/read_file.h"
#include "memory/text_message.h"
#include "strata/core/error.h"
#include "strata/core/output_path.h"

namespace strata::memory {

namespace {

proto::Action to_proto(CacheAction a) {
  switch (a) {
    case CacheAction::Keep: return proto::KEEP;
    case CacheAction::Recompute: return proto::RECOMPUTE;
    case CacheAction::Host: return proto::HOST;
    case CacheAction::Nvme: return proto::NVME;
  }
  return proto::KEEP;
}

// A plan's action; an unknown number (text format accepts `action: 7`) is an error naming `what`.
CacheAction from_proto(int a, const std::string& origin, const std::string& what) {
  switch (a) {
    case proto::KEEP: return CacheAction::Keep;
    case proto::RECOMPUTE: return CacheAction::Recompute;
    case proto::HOST: return CacheAction::Host;
    case proto::NVME: return CacheAction::Nvme;
  }
  throw ValueError(
      detail::concat("plan ", origin, ": ", what, " has action ", a, " (KEEP, RECOMPUTE, HOST or NVME)"));
}

class PlanPolicy final : public CachePolicy {
 public:
  explicit PlanPolicy(Plan p) : plan_(std::move(p)) {}
  std::string name() const override { return "plan" + (plan_.solver.empty() ? "" : ":" + plan_.solver); }
  CacheAction decide(const SaveRequest& r) override {
    auto t = plan_.tensors.find(r.info->key);
    if (t != plan_.tensors.end()) return t->second;
    if (r.info->block.empty()) return plan_.outside_blocks;
    auto b = plan_.blocks.find(r.info->block);
    if (b == plan_.blocks.end()) return CacheAction::Keep;
    // A Recompute block's own tensors never reach the policy (it runs as a segment); what does
    // is its inputs, which are kept.
    return b->second == CacheAction::Recompute ? CacheAction::Keep : b->second;
  }
  std::vector<std::string> unmatched(const SeenSaves& seen) const override {
    std::vector<std::string> out;
    for (const auto& [block, a] : plan_.blocks)
      if (!seen.blocks.count(block)) out.push_back("block '" + block + "' (no such block)");
    for (const auto& [key, a] : plan_.tensors)
      if (!seen.keys.count(key)) out.push_back("tensor '" + key + "' (no saved tensor has that key)");
    return out;
  }
  size_t prefetch_blocks() const override { return plan_.prefetch_blocks; }
  bool recompute_block(const std::string& path) override {
    auto b = plan_.blocks.find(path);
    return b != plan_.blocks.end() && b->second == CacheAction::Recompute;
  }

 private:
  Plan plan_;
};

}  // namespace

std::string plan_to_text(const Plan& plan) {
  proto::Plan p;
  for (const auto& [block, a] : plan.blocks) {
    auto* b = p.add_blocks();
    b->set_block(block);
    b->set_action(to_proto(a));
  }
  for (const auto& [key, a] : plan.tensors) {
    auto* t = p.add_tensors();
    t->set_key(key);
    t->set_action(to_proto(a));
  }
  p.set_outside_blocks(to_proto(plan.outside_blocks));
  p.set_budget_bytes(plan.budget_bytes);
  p.set_predicted_step_peak(plan.predicted_step_peak);
  p.set_predicted_activation_peak(plan.predicted_activation_peak);
  p.set_solver(plan.solver);
  p.set_note(plan.note);
  p.set_prefetch_blocks(uint32_t(plan.prefetch_blocks));
  std::string out;
  google::protobuf::TextFormat::PrintToString(p, &out);
  return out;
}

Plan plan_from_text(const std::string& text, const std::string& origin) {
  proto::Plan p;
  std::string error;
  STRATA_CHECK(parse_text_message(text, &p, &error), ValueError, "plan ", origin, ": ", error);
  Plan plan;
  for (const auto& b : p.blocks()) {
    const std::string what = "block '" + b.block() + "'";
    STRATA_CHECK(!plan.blocks.count(b.block()), ValueError, "plan ", origin, ": ", what, " appears twice");
    plan.blocks[b.block()] = from_proto(b.action(), origin, what);
  }
  for (const auto& t : p.tensors()) {
    const std::string what = "tensor '" + t.key() + "'";
    STRATA_CHECK(!plan.tensors.count(t.key()), ValueError, "plan ", origin, ": ", what, " appears twice");
    plan.tensors[t.key()] = from_proto(t.action(), origin, what);
  }
  plan.outside_blocks = from_proto(p.outside_blocks(), origin, "outside_blocks");
  plan.budget_bytes = p.budget_bytes();
  plan.predicted_step_peak = p.predicted_step_peak();
  plan.predicted_activation_peak = p.predicted_activation_peak();
  plan.solver = p.solver();
  plan.note = p.note();
  plan.prefetch_blocks = p.prefetch_blocks();
  return plan;
}

void save_plan(const Plan& plan, const std::string& path) {
  write_file_atomically(path, plan_to_text(plan), "save_plan");
}

Plan load_plan(const std::string& path) {
  return plan_from_text(read_whole_file(path, "load_plan"), "'" + path + "'");
}

std::shared_ptr<CachePolicy> make_plan_policy(Plan plan) { return std::make_shared<PlanPolicy>(std::move(plan)); }

}  // namespace strata::memory
