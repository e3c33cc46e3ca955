#include "strata/memory/plan.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "memory/plan.pb.h"
#include "strata/core/error.h"

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

CacheAction from_proto(int a) {
  switch (a) {
    case proto::RECOMPUTE: return CacheAction::Recompute;
    case proto::HOST: return CacheAction::Host;
    case proto::NVME: return CacheAction::Nvme;
    default: return CacheAction::Keep;
  }
}

class ErrorCollector final : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (first.empty())
      first = "line " + std::to_string(line + 1) + ", column " + std::to_string(column + 1) + ": " + message;
  }
  std::string first;
};

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
  size_t prefetch_blocks() const override { return plan_.prefetch_blocks; }
  bool recompute_block(const std::string& path) override {
    auto b = plan_.blocks.find(path);
    return b != plan_.blocks.end() && b->second == CacheAction::Recompute;
  }

 private:
  Plan plan_;
};

std::string gb(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f GB", double(bytes) / 1e9);
  return buf;
}

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
  google::protobuf::TextFormat::Parser parser;
  ErrorCollector errors;
  parser.RecordErrorsTo(&errors);
  STRATA_CHECK(parser.ParseFromString(text, &p), ValueError, "plan ", origin, ": ", errors.first);
  Plan plan;
  for (const auto& b : p.blocks()) plan.blocks[b.block()] = from_proto(b.action());
  for (const auto& t : p.tensors()) plan.tensors[t.key()] = from_proto(t.action());
  plan.outside_blocks = from_proto(p.outside_blocks());
  plan.budget_bytes = p.budget_bytes();
  plan.predicted_step_peak = p.predicted_step_peak();
  plan.predicted_activation_peak = p.predicted_activation_peak();
  plan.solver = p.solver();
  plan.note = p.note();
  plan.prefetch_blocks = p.prefetch_blocks();
  return plan;
}

void save_plan(const Plan& plan, const std::string& path) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    STRATA_CHECK(bool(f), IoError, "save_plan: cannot open '", tmp, "' for writing");
    f << plan_to_text(plan);
    f.flush();
    STRATA_CHECK(bool(f), IoError, "save_plan: writing '", tmp, "' failed");
  }
  STRATA_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, IoError, "save_plan: cannot rename '", tmp,
               "' to '", path, "'");
}

Plan load_plan(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  STRATA_CHECK(bool(f), IoError, "load_plan: cannot open '", path, "'");
  std::stringstream ss;
  ss << f.rdbuf();
  return plan_from_text(ss.str(), "'" + path + "'");
}

std::shared_ptr<CachePolicy> make_plan_policy(Plan plan) { return std::make_shared<PlanPolicy>(std::move(plan)); }

BudgetPlan plan_for_budget(const BudgetInputs& in, uint64_t budget) {
  const uint64_t other = in.step_peak > in.activation_peak ? in.step_peak - in.activation_peak : 0;
  uint64_t outside = 0;
  std::vector<const GroupProfile*> blocks;
  for (const auto& g : in.profile.groups) {
    if (g.block.empty())
      outside += g.bytes;
    else
      blocks.push_back(&g);
  }
  const size_t n = blocks.size();
  std::vector<CacheAction> act(n, CacheAction::Keep);
  // Resident saved bytes at the start of backward (where the activation peak is) plus the
  // largest transient backward then needs: one recomputed block, or the NVMe prefetch window.
  auto predict_activations = [&](const std::vector<CacheAction>& a) {
    uint64_t resident = outside, recompute_max = 0, nvme_max = 0;
    for (size_t i = 0; i < n; ++i) {
      const uint64_t k = blocks[i]->keep_bytes();
      switch (a[i]) {
        case CacheAction::Keep: resident += k; break;
        case CacheAction::Recompute:
          resident += blocks[i]->input_bytes;
          recompute_max = std::max(recompute_max, k);
          break;
        default: nvme_max = std::max(nvme_max, k); break;
      }
    }
    return resident + std::max<uint64_t>(recompute_max, uint64_t(in.prefetch_blocks + 1) * nvme_max);
  };
  const CacheAction offload = in.nvme ? CacheAction::Nvme : CacheAction::Recompute;
  const uint64_t target = uint64_t(double(budget) * (1.0 - in.margin));
  // The earliest blocks are held longest, so they go first; the last block (needed first in
  // backward) goes last.
  for (size_t i = 0; i < n && other + predict_activations(act) > target; ++i) act[i] = offload;
  if (other + predict_activations(act) > target && in.nvme) {
    std::vector<CacheAction> rec(n, CacheAction::Recompute);
    if (predict_activations(rec) < predict_activations(act)) act = rec;
  }
  BudgetPlan out;
  std::vector<CacheAction> all_offload(n, offload), all_recompute(n, CacheAction::Recompute);
  out.min_step_peak = other + std::min(predict_activations(all_offload), predict_activations(all_recompute));
  const uint64_t act_peak = predict_activations(act);
  out.feasible = other + act_peak <= target;
  Plan& p = out.plan;
  for (size_t i = 0; i < n; ++i) p.blocks[blocks[i]->block] = act[i];
  p.budget_bytes = budget;
  p.predicted_activation_peak = act_peak;
  p.predicted_step_peak = other + act_peak;
  p.solver = "greedy-budget";
  std::vector<CacheAction> keep(n, CacheAction::Keep);
  size_t moved = 0;
  for (auto a : act) moved += a != CacheAction::Keep;
  std::ostringstream why;
  if (out.feasible) {
    why << "budget " << gb(budget) << ": " << moved << " of " << n << " blocks to "
        << (moved && act[0] == CacheAction::Nvme ? "NVMe" : "recompute") << ", predicted step peak "
        << gb(p.predicted_step_peak) << " (keep-all " << gb(other + predict_activations(keep)) << ")";
  } else {
    why << "budget " << gb(budget) << " cannot be met: the lowest predicted step peak is "
        << gb(out.min_step_peak) << " (parameters, gradients, optimizer state and temporaries take "
        << gb(other) << ", activations saved outside blocks " << gb(outside)
        << "); a smaller batch or sequence, or an NVMe tier (--spill-dir), would help";
  }
  out.explanation = why.str();
  p.note = out.explanation;
  return out;
}

}  // namespace strata::memory
