// Plan: the tensor cache's per-block and per-tensor decisions, as a CachePolicy, saved and
// loaded as protobuf text; and the greedy budget solver that makes one from a profiled step
// (the planner issue replaces the solver behind the same Plan).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "strata/memory/cache_policy.h"

namespace strata::memory {

struct Plan {
  std::map<std::string, CacheAction> blocks;   // Recompute: the block runs as a segment
  std::map<std::string, CacheAction> tensors;  // by key; overrides the block's action
  CacheAction outside_blocks = CacheAction::Keep;
  // Blocks loaded ahead when backward enters a block (0: the cache's own setting).
  size_t prefetch_blocks = 0;
  uint64_t budget_bytes = 0;
  uint64_t predicted_step_peak = 0;
  uint64_t predicted_activation_peak = 0;
  std::string solver;
  std::string note;
};

std::string plan_to_text(const Plan& plan);
// Throws ValueError naming `origin` and the parser's line and column.
Plan plan_from_text(const std::string& text, const std::string& origin = "<plan>");
void save_plan(const Plan& plan, const std::string& path);  // atomically (temp + rename)
Plan load_plan(const std::string& path);                    // IoError / ValueError naming it

std::shared_ptr<CachePolicy> make_plan_policy(Plan plan);

}  // namespace strata::memory
