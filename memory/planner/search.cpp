// The planner's search: the chain DP over block options, repaired and locally improved with the
// simulator as judge, then refined tensor by tensor.
#include "memory/planner/search.h"

#include <algorithm>
#include <map>

#include "memory/planner/block_options.h"
#include "strata/core/error.h"

namespace strata::memory::planner {

std::string summarize(const StepTrace& t, const SimPlan& p) {
  std::map<std::string, int> n;
  for (size_t b = 0; b < t.blocks.size(); ++b) {
    std::string what = p.segments[b] ? "recompute" : "keep";
    if (!p.segments[b]) {
      for (size_t k = 0; k < t.tensors.size(); ++k) {
        if (t.tensors[k].block != int32_t(b)) continue;
        CacheAction a = p.tensors[k];
        if (a == CacheAction::Host) what = "host";
        if (a == CacheAction::Nvme) what = "nvme";
        if (a == CacheAction::Recompute && what == "keep") what = "selective";
      }
      bool sel = false;
      for (size_t k = 0; k < t.tensors.size(); ++k)
        if (t.tensors[k].block == int32_t(b) && p.tensors[k] == CacheAction::Recompute) sel = true;
      if (sel && (what == "host" || what == "nvme")) what = "selective+" + what;
    }
    ++n[what];
  }
  std::string s;
  for (const auto& [name, count] : n) s += (s.empty() ? "" : ", ") + name + " x" + std::to_string(count);
  return s;
}

PolicyResult evaluate(const std::string& name, const StepTrace& t, SimPlan plan, const HardwareProfile& hw,
                      uint64_t budget, const PlannerOptions& o) {
  PolicyResult r;
  r.name = name;
  r.predicted = simulate(t, plan, hw, /*curve=*/false);
  r.fits = budgeted_peak(r.predicted, o, hw) <= budget;
  r.plan = std::move(plan);
  return r;
}

namespace {

// DP, then re-solves with a tighter DP budget while the simulator finds the plan above the
// budget, then local search over single-block changes judged by the simulator.
PolicyResult solve_at(const std::string& name, const StepTrace& t, const HardwareProfile& hw, uint64_t budget,
                      const PlannerOptions& o, size_t depth, bool prefix_offload, bool local_search) {
  ChainProblem problem = chain_problem(t, hw, budget, o, depth, prefix_offload);
  PolicyResult best;
  best.name = name;
  std::vector<int> choice;
  // The repair: while the simulator finds the DP's plan above the budget, lower the DP's budget by
  // what the simulator found beyond the DP's own prediction (its peak model misses, e.g., loads
  // arriving early), at least by the excess; once some DP budget fits, bisect between it and the
  // lowest one that did not, keeping the fastest plan that fits.
  uint64_t dp_budget = budget, fit = 0, too_high = 0;  // DP budgets that fit / did not (0: none yet)
  for (int round = 0; round <= o.repair_rounds; ++round) {
    problem.budget_bytes = dp_budget;
    ChainSolution sol = solve_chain(problem);
    if (!sol.feasible) break;
    PolicyResult r = evaluate(name, t, sim_plan_for(t, problem, sol.choice, depth), hw, budget, o);
    const uint64_t sim_peak = budgeted_peak(r.predicted, o, hw);
    if (r.fits) {
      if (fit == 0 || r.predicted.step_seconds < best.predicted.step_seconds) {
        best = std::move(r);
        choice = sol.choice;
      }
      fit = std::max(fit, dp_budget);
      if (too_high == 0) break;  // it fits at the full budget
    } else {
      if (fit == 0) {
        best = std::move(r);
        choice = sol.choice;
      }
      too_high = too_high == 0 ? dp_budget : std::min(too_high, dp_budget);
    }
    uint64_t next = 0;
    if (fit > 0) {
      if (too_high <= fit + 2 * sol.unit_bytes) break;
      next = fit + (too_high - fit) / 2;
    } else {
      const uint64_t over = sim_peak - budget;
      const uint64_t gap = sim_peak > sol.predicted_peak ? sim_peak - sol.predicted_peak : 0;
      if (over + sol.unit_bytes >= dp_budget) break;
      next = budget > gap + sol.unit_bytes ? budget - gap - sol.unit_bytes : 0;
      next = std::min(next, dp_budget - over - sol.unit_bytes);
      if (next == 0) break;
    }
    dp_budget = next;
  }
  if (choice.empty()) {
    // No DP solution: start from the option that holds least in every block (the local search
    // below then moves towards the lowest peak the simulator finds, which the explanation quotes).
    choice.assign(problem.blocks.size(), 0);
    for (size_t j = 0; j < problem.blocks.size(); ++j) {
      const auto& opts = problem.blocks[j].options;
      for (size_t k = 1; k < opts.size(); ++k)
        if (opts[k].held_bytes < opts[size_t(choice[j])].held_bytes) choice[j] = int(k);
    }
    best = evaluate(name, t, sim_plan_for(t, problem, choice, depth), hw, budget, o);
  }
  for (int round = 0; local_search && round < o.local_search_rounds; ++round) {
    bool improved = false;
    for (size_t j = 0; j < problem.blocks.size(); ++j) {
      for (size_t k = 0; k < problem.blocks[j].options.size(); ++k) {
        if (int(k) == choice[j]) continue;
        std::vector<int> c = choice;
        c[j] = int(k);
        PolicyResult r = evaluate(name, t, sim_plan_for(t, problem, c, depth), hw, budget, o);
        const bool better = r.fits && (!best.fits || r.predicted.step_seconds < best.predicted.step_seconds - 1e-12);
        const bool closer = !best.fits && !r.fits && budgeted_peak(r.predicted, o, hw) < budgeted_peak(best.predicted, o, hw);
        if (better || closer) {
          best = std::move(r);
          choice = std::move(c);
          improved = true;
        }
      }
    }
    if (!improved) break;
  }
  return best;
}

}  // namespace

// The best plan over the prefetch depths (only depth 1 when nothing can be offloaded).
PolicyResult solve(const std::string& name, const StepTrace& t, const HardwareProfile& hw, uint64_t budget,
                   const PlannerOptions& o) {
  const bool offload = (o.allow_host && hw.to_host_bytes_per_second() > 0) || (o.allow_nvme && !hw.drives.empty());
  std::vector<size_t> depths = offload ? o.prefetch_depths : std::vector<size_t>{1};
  if (depths.empty()) depths = {1};
  // The DP and its repair at every depth; the simulator-driven local search (most of the planner's
  // time) at the best one only.
  // Both views of offloading (prefix groups, blocks alone) when there is anything to offload: the
  // DP and its repair at every depth, then the simulator-driven local search (most of the
  // planner's time) from the best of those starts only.
  auto better = [&](const PolicyResult& r, const PolicyResult& than) {
    return (r.fits && (!than.fits || r.predicted.step_seconds < than.predicted.step_seconds)) ||
           (!r.fits && !than.fits && budgeted_peak(r.predicted, o, hw) < budgeted_peak(than.predicted, o, hw));
  };
  PolicyResult best;
  size_t best_depth = depths.front();
  bool best_prefix = true, have = false;
  for (size_t d : depths) {
    for (bool prefix : {true, false}) {
      if (!prefix && !offload) continue;
      PolicyResult r = solve_at(name, t, hw, budget, o, d, prefix, /*local_search=*/false);
      if (!have || better(r, best)) {
        best = std::move(r);
        best_depth = d;
        best_prefix = prefix;
        have = true;
      }
    }
  }
  // The local search starts from that plan and accepts only improvements.
  if (o.local_search_rounds > 0) best = solve_at(name, t, hw, budget, o, best_depth, best_prefix, /*local_search=*/true);
  return best;
}

// Per-tensor refinement after the block-level search (the options drop all of a block's
// recomputable outputs, or its cheap ones, or none): trade a dropped output that is dear to make
// again for a kept (or offloaded) one that is cheaper per byte and at least as large, and keep a
// dropped one outright where the budget has room, each change judged by the simulator.
PolicyResult refine_tensors(const std::string& name, const StepTrace& t, const HardwareProfile& hw, uint64_t budget,
                            const PlannerOptions& o, PolicyResult best) {
  if (!best.fits || o.refine_rounds <= 0 || !o.allow_selective) return best;
  // What a tensor of block b does when it is not dropped: kept, or the block's offload tier.
  std::vector<CacheAction> base(t.blocks.size(), CacheAction::Keep);
  for (size_t k = 0; k < t.tensors.size(); ++k) {
    const TraceTensor& x = t.tensors[k];
    const CacheAction a = best.plan.tensors[k];
    if (x.block >= 0 && (a == CacheAction::Host || a == CacheAction::Nvme)) base[size_t(x.block)] = a;
  }
  std::vector<size_t> cand;
  for (size_t k = 0; k < t.tensors.size(); ++k) {
    const TraceTensor& x = t.tensors[k];
    if (x.block < 0 || x.first_backward_use < 0 || best.plan.segments[size_t(x.block)] || !selective_drops(t, x)) continue;
    if (x.block_input && best.plan.segments[size_t(producer_block(t, x))]) continue;
    cand.push_back(k);
  }
  auto per_byte = [&](size_t k) { return t.tensors[k].recompute_seconds / double(std::max<uint64_t>(t.tensors[k].bytes, 1)); };
  auto accept = [&](SimPlan p) {
    PolicyResult r = evaluate(name, t, std::move(p), hw, budget, o);
    if (!r.fits || r.predicted.step_seconds >= best.predicted.step_seconds - 1e-12) return false;
    best = std::move(r);
    return true;
  };
  for (int round = 0; round < o.refine_rounds; ++round) {
    std::vector<size_t> dropped, kept;
    for (size_t k : cand) {
      const CacheAction a = best.plan.tensors[k];
      if (a == CacheAction::Recompute) dropped.push_back(k);
      else if (a == base[size_t(t.tensors[k].block)]) kept.push_back(k);
    }
    std::sort(dropped.begin(), dropped.end(), [&](size_t a, size_t b) { return per_byte(a) > per_byte(b); });
    std::sort(kept.begin(), kept.end(), [&](size_t a, size_t b) { return per_byte(a) < per_byte(b); });
    std::vector<char> moved(t.tensors.size(), 0);
    bool improved = false;
    for (size_t xd : dropped) {
      const CacheAction back = base[size_t(t.tensors[xd].block)];
      // Kept outright only where the budget has room for it (a kept output spans forward's end).
      if (budgeted_peak(best.predicted, o, hw) + t.tensors[xd].bytes <= budget) {
        SimPlan undrop = best.plan;
        undrop.tensors[xd] = back;
        if (accept(std::move(undrop))) {
          moved[xd] = 1;
          improved = true;
          continue;
        }
      }
      int tries = 0;
      for (size_t yk : kept) {
        if (moved[yk] || per_byte(yk) >= per_byte(xd)) break;
        if (t.tensors[yk].bytes < t.tensors[xd].bytes) continue;
        if (++tries > o.refine_tries) break;
        SimPlan p = best.plan;
        p.tensors[xd] = back;
        p.tensors[yk] = CacheAction::Recompute;
        if (accept(std::move(p))) {
          moved[xd] = moved[yk] = 1;
          improved = true;
          break;
        }
      }
    }
    if (!improved) break;
  }
  return best;
}

}  // namespace strata::memory::planner
