#include "strata/memory/planner/planner.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>

#include "strata/core/error.h"
#include "strata/memory/planner/cost_model.h"

namespace strata::memory::planner {

namespace {

// What the options of block b are made of.
struct BlockFigures {
  uint64_t saved = 0;         // every tensor it saves that backward reads
  uint64_t inputs = 0;        // ... of which its inputs (what a segment keeps)
  uint64_t recomputable = 0;  // ... of which ops' outputs that op-level recompute can make again
  uint64_t cheap = 0;         // ... of which the cheapest to make again (see cheapest_recomputes)
  uint64_t workspace = 0;     // the largest op workspace in its forward and backward
  double forward = 0, backward = 0, recompute_ops = 0, cheap_ops = 0;
};

// The block whose op made tensor x (-1: outside every block, or before the step).
int32_t producer_block(const StepTrace& t, const TraceTensor& x) {
  return x.producer >= 0 ? t.ops[size_t(x.producer)].block : -1;
}

// Whether block-selective recompute drops tensor x (a cheap op's output, made again in backward).
// A block input counts when an op of an earlier block made it from tensors that block saves (the
// post-LN transformer's layer norm output, which the next block's projection saves): sim_plan_for
// keeps it where either block re-runs as a segment (a segment restarts from its inputs).
bool selective_drops(const StepTrace& t, const TraceTensor& x) {
  if (!x.op_recomputable) return false;
  if (!x.block_input) return true;
  const int32_t pb = producer_block(t, x);
  return pb >= 0 && pb < x.block;
}

// Whether op kind `kind` is GEMM-like (its output takes a matrix product to make again).
bool gemm_like(const std::string& kind) {
  const std::string c = op_class(kind);
  return c == "matmul" || c == "attention" || c == "conv2d";
}

// Per tensor: op-level recomputable by an op that is not GEMM-like, at a cost per byte within
// twice the lowest of the trace's (elementwise ops' and norms' outputs, memory-bound), as opposed
// to outputs that take a GEMM to make again (which, at large sizes, can cost less than twice a
// GELU's per byte: BERT-large's intermediate projection): the "selective-cheap" options recompute
// only these.
std::vector<char> cheapest_recomputes(const StepTrace& t) {
  // Tiny outputs (a norm's statistics) do not set the scale.
  uint64_t largest = 0;
  for (const TraceTensor& x : t.tensors)
    if (selective_drops(t, x)) largest = std::max(largest, x.bytes);
  const uint64_t sizable = std::min<uint64_t>(uint64_t(1) << 20, largest / 4);
  double lowest = 0;
  for (const TraceTensor& x : t.tensors)
    if (selective_drops(t, x) && x.bytes >= sizable) {
      const double c = x.recompute_seconds / double(x.bytes);
      if (lowest == 0 || c < lowest) lowest = c;
    }
  std::vector<char> cheap(t.tensors.size(), 0);
  for (size_t k = 0; k < t.tensors.size(); ++k) {
    const TraceTensor& x = t.tensors[k];
    cheap[k] = selective_drops(t, x) && !gemm_like(t.ops[size_t(x.producer)].kind) &&
               (lowest == 0 || x.recompute_seconds / double(std::max<uint64_t>(x.bytes, 1)) <= 2 * lowest);
  }
  return cheap;
}

std::vector<BlockFigures> figures(const StepTrace& t) {
  std::vector<BlockFigures> f(t.blocks.size());
  const std::vector<char> cheap = cheapest_recomputes(t);
  for (size_t k = 0; k < t.tensors.size(); ++k) {
    const TraceTensor& x = t.tensors[k];
    if (x.block < 0 || x.first_backward_use < 0) continue;
    BlockFigures& b = f[size_t(x.block)];
    b.saved += x.bytes;
    if (x.block_input) b.inputs += x.bytes;
    if (selective_drops(t, x)) {
      b.recomputable += x.bytes;
      b.recompute_ops += x.recompute_seconds;
      if (cheap[k]) {
        b.cheap += x.bytes;
        b.cheap_ops += x.recompute_seconds;
      }
    }
  }
  for (const TraceOp& o : t.ops) {
    if (o.block < 0) continue;
    BlockFigures& b = f[size_t(o.block)];
    b.workspace = std::max(b.workspace, o.temp_bytes);
    (o.phase == TracePhase::Forward ? b.forward : b.backward) += o.seconds;
  }
  return f;
}

// One way of offloading a prefix of blocks (a tier, with or without selective recompute): a
// prefix group of the chain DP.
enum class Selective { None, All, Cheap };

struct OffloadVariant {
  std::string name;
  Selective selective;
  int group;
  double load_rate, load_latency, store_rate;
  std::vector<uint64_t> held;  // per block: bytes still in memory when forward ends
  std::vector<double> stall;   // per block: backward's wait for its load (see load_stalls)
};

// What selective recompute leaves out of a block's offload, and what it costs.
uint64_t kept_out(const BlockFigures& b, Selective s) {
  return s == Selective::All ? b.recomputable : s == Selective::Cheap ? b.cheap : 0;
}
double recompute_cost(const BlockFigures& b, Selective s) {
  return s == Selective::All ? b.recompute_ops : s == Selective::Cheap ? b.cheap_ops : 0.0;
}

// Per block: the bytes an offloaded block still holds when forward ends, when it and every block
// before it store their tensors through one channel, first in first out, each store starting when
// its producer finishes (G10: stores as early as possible) and the memory freed when it completes.
std::vector<uint64_t> held_at_forward_end(const StepTrace& t, Selective selective, double rate, double latency) {
  const std::vector<char> cheap = cheapest_recomputes(t);
  std::vector<double> end_of(t.ops.size(), 0.0);
  double clock = 0, forward_end = 0;
  for (size_t i = 0; i < t.ops.size(); ++i) {
    clock += t.ops[i].seconds;
    end_of[i] = clock;
    if (t.ops[i].phase == TracePhase::Forward) forward_end = clock;
  }
  std::vector<std::vector<const TraceTensor*>> by_block(t.blocks.size());
  for (size_t k = 0; k < t.tensors.size(); ++k) {
    const TraceTensor& x = t.tensors[k];
    const bool dropped = selective == Selective::All ? selective_drops(t, x) : selective == Selective::Cheap && cheap[k];
    if (x.block >= 0 && x.first_backward_use >= 0 && !dropped) by_block[size_t(x.block)].push_back(&x);
  }
  std::vector<uint64_t> held(t.blocks.size(), 0);
  double channel = 0;
  for (size_t b = 0; b < t.blocks.size(); ++b) {
    auto& xs = by_block[b];
    std::stable_sort(xs.begin(), xs.end(), [](const TraceTensor* a, const TraceTensor* c) { return a->producer < c->producer; });
    for (const TraceTensor* x : xs) {
      channel = std::max(channel, end_of[size_t(x->producer)]) + latency + double(x->bytes) / rate;
      if (channel > forward_end) held[b] += x->bytes;
    }
  }
  return held;
}

// Per block: how long backward waits for its load when blocks 0..K-1 are offloaded, K being the
// blocks whose stores the forward pass can finish (the prefix the DP is likely to pick). Loads
// share one channel, first in first out, in the order backward needs them: block b's is issued
// when backward enters block b + depth (the last ones when backward starts), and each wait delays
// everything after it. The backward times are the trace's, without recompute, so waits are
// overestimated where segments re-run; blocks beyond K are charged their load alone.
std::vector<double> load_stalls(const StepTrace& t, const std::vector<BlockFigures>& f, const OffloadVariant& v,
                                size_t depth) {
  const size_t L = t.blocks.size();
  std::vector<double> stall(L, 0.0);
  if (L == 0) return stall;
  std::vector<double> enter(L + 1, 0.0);  // from backward's start, when backward enters block b
  {
    double clock = 0;
    std::vector<double> start(t.ops.size(), 0.0);
    bool started = false;
    for (size_t i = 0; i < t.ops.size(); ++i) {
      if (t.ops[i].phase == TracePhase::Backward) started = true;
      start[i] = clock;
      if (started) clock += t.ops[i].seconds;
    }
    for (size_t b = 0; b < L; ++b)
      enter[b] = t.blocks[b].first_backward_op >= 0 ? start[size_t(t.blocks[b].first_backward_op)] : clock;
  }
  auto bytes_of = [&](size_t b) { return double(f[b].saved - kept_out(f[b], v.selective)); };
  size_t K = 0;
  while (K < L && v.held[K] == 0) ++K;
  K = std::min(L, K + 1);
  double channel = 0, shift = 0;
  for (size_t b = K; b-- > 0;) {
    const double issue = (b + depth < L ? enter[b + depth] : 0.0) + shift;
    const double end = std::max(issue, channel) + v.load_latency + bytes_of(b) / v.load_rate;
    channel = end;
    const double need = enter[b] + shift;
    if (end > need) {
      stall[b] = end - need;
      shift += stall[b];
    }
  }
  for (size_t b = K; b < L; ++b) {
    double window = 0;
    for (size_t i = 1; i <= depth && b + i < L; ++i) window += f[b + i].backward;
    stall[b] = std::max(0.0, bytes_of(b) / v.load_rate + v.load_latency - window);
  }
  return stall;
}

uint64_t outside_bytes(const StepTrace& t) {
  uint64_t s = 0;
  for (const TraceTensor& x : t.tensors)
    if (x.block < 0 && x.first_backward_use >= 0) s += x.bytes;
  return s;
}

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

// SSDTrain's adaptive offloading: blocks go to the fastest offload tier in forward order while its
// write bandwidth keeps up with the forward pass (the store of blocks 0..i done within the forward
// of blocks 0..i+1); the last block is kept.
SimPlan ssdtrain_plan(const StepTrace& t, const HardwareProfile& hw, const std::vector<BlockFigures>& f) {
  SimPlan p = SimPlan::keep_all(t);
  const bool nvme = !hw.drives.empty();
  const double bw = nvme ? hw.nvme_write_bytes_per_second() : hw.to_host_bytes_per_second();
  if (bw <= 0) return p;
  double stored = 0, forward = 0;
  std::vector<bool> off(t.blocks.size(), false);
  for (size_t i = 0; i + 1 < t.blocks.size(); ++i) {
    stored += double(f[i].saved) / bw;
    forward += f[i].forward;
    if (stored > forward + f[i + 1].forward) break;
    off[i] = true;
  }
  for (size_t k = 0; k < t.tensors.size(); ++k) {
    const TraceTensor& x = t.tensors[k];
    if (x.block >= 0 && off[size_t(x.block)]) p.tensors[k] = nvme ? CacheAction::Nvme : CacheAction::Host;
  }
  return p;
}

}  // namespace

uint64_t budgeted_peak(const SimResult& r, const PlannerOptions& options, const HardwareProfile& hw) {
  if (!options.activations_only) return r.step_peak;
  return hw.gpu ? r.activation_peak : r.activation_and_pool_peak;
}

ChainProblem chain_problem(const StepTrace& t, const HardwareProfile& hw, uint64_t budget, const PlannerOptions& o,
                           size_t prefetch_blocks, bool prefix_offload) {
  const size_t k = std::max<size_t>(prefetch_blocks, 1);
  const std::vector<BlockFigures> f = figures(t);
  ChainProblem p;
  p.budget_bytes = budget;
  p.base_bytes = outside_bytes(t) + (o.activations_only ? 0 : t.resident_bytes);
  // On a CPU the host pool is the same RAM: offloading there saves nothing.
  const bool host = o.allow_host && hw.gpu && hw.to_host_bytes_per_second() > 0 && hw.from_host_bytes_per_second() > 0;
  const bool nvme = o.allow_nvme && !hw.drives.empty();
  std::vector<double> forward_after(f.size() + 1, 0.0);  // forward time of the blocks after b
  for (size_t b = f.size(); b-- > 0;) forward_after[b] = forward_after[b + 1] + (b + 1 < f.size() ? f[b + 1].forward : 0.0);
  std::vector<OffloadVariant> variants;
  // A cheaper selective level only where some block has recomputable outputs of both kinds.
  bool cheap_differs = false;
  for (const BlockFigures& x : f) cheap_differs = cheap_differs || (x.cheap > 0 && x.cheap < x.recomputable);
  // On a CPU the I/O threads' copies and checksums bound each transfer and take compute time.
  const bool io_cpu = !hw.gpu && hw.io_cpu_bytes_per_second.set();
  const double io_rate = io_cpu ? hw.io_cpu_bytes_per_second.value : 0.0;
  const double io_steal = io_cpu ? hw.io_compute_steal.value * 2.0 / io_rate : 0.0;  // per byte, out and back
  auto add_variant = [&](const std::string& tier, double store_rate, double store_latency, double load_rate,
                         double load_latency) {
    if (io_cpu) {
      store_rate = std::min(store_rate, io_rate);
      load_rate = std::min(load_rate, io_rate);
    }
    for (Selective sel : {Selective::None, Selective::All, Selective::Cheap}) {
      if (sel != Selective::None && !o.allow_selective) continue;
      if (sel == Selective::Cheap && !cheap_differs) continue;
      const std::string name = sel == Selective::None  ? tier
                               : sel == Selective::All ? "selective+" + tier
                                                       : "selective-cheap+" + tier;
      OffloadVariant v{name, sel, prefix_offload ? int(variants.size()) + 1 : 0,
                       load_rate, load_latency, store_rate, {}, {}};
      v.held = held_at_forward_end(t, sel, store_rate, store_latency);
      v.stall = load_stalls(t, f, v, k);
      variants.push_back(std::move(v));
    }
  };
  if (host)
    add_variant("host", hw.to_host_bytes_per_second(), hw.gpu ? hw.link_latency_seconds.value : 0,
                hw.from_host_bytes_per_second(), hw.gpu ? hw.link_latency_seconds.value : 0);
  if (nvme) {
    double load = hw.nvme_read_bytes_per_second(), store = hw.nvme_write_bytes_per_second();
    if (hw.gpu) {
      load = std::min(load, hw.host_to_device_bytes_per_second.value);
      store = std::min(store, hw.device_to_host_bytes_per_second.value);
    }
    const double link = hw.gpu ? hw.link_latency_seconds.value : 0;
    add_variant("nvme", store, hw.nvme_write_latency_seconds() + link, load, hw.nvme_read_latency_seconds() + link);
  }
  for (size_t b = 0; b < t.blocks.size(); ++b) {
    const BlockFigures& x = f[b];
    const uint64_t work = o.activations_only ? 0 : x.workspace;
    ChainBlock cb;
    cb.path = t.blocks[b].path;
    cb.options.push_back({"keep", x.saved, x.saved + work, 0.0});
    if (o.allow_selective && x.recomputable > 0)
      cb.options.push_back({"selective", x.saved - x.recomputable, x.saved + work, x.recompute_ops});
    if (o.allow_selective && x.cheap > 0 && x.cheap < x.recomputable)
      cb.options.push_back({"selective-cheap", x.saved - x.cheap, x.saved + work, x.cheap_ops});
    if (o.allow_recompute) cb.options.push_back({"recompute", x.inputs, x.saved + work, x.forward});
    // Offloaded: in backward the block is back in memory while the k blocks before it are being
    // prefetched; its extra time is its wait for its load (load_stalls). What it holds at the peak
    // (forward's end) is what the shared store channel has not finished by then, with every block
    // before it offloaded the same way.
    // Without prefix groups (prefix_offload false) every block is judged alone, as if it had the
    // channels to itself: optimistic where many blocks offload (the simulator and the repair
    // loop correct it), but it reaches plans that offload later, smaller blocks (ResNet).
    double window = 0;
    for (size_t i = 1; i <= k && b + i < f.size(); ++i) window += f[b + i].backward;
    for (OffloadVariant& v : variants) {
      const uint64_t bytes = x.saved - kept_out(x, v.selective);
      // What the k blocks before it bring back: what they offloaded (their selective drops are
      // made again in their own backward, not loaded).
      uint64_t ahead = 0;
      for (size_t i = 1; i <= k && i <= b; ++i) ahead += f[b - i].saved - kept_out(f[b - i], v.selective);
      uint64_t held = v.held[b];
      double stall = v.stall[b];
      if (!prefix_offload) {
        const double store = double(bytes) / v.store_rate;
        held = store <= forward_after[b] ? 0 : uint64_t(double(bytes) * (1.0 - forward_after[b] / store));
        stall = std::max(0.0, double(bytes) / v.load_rate + v.load_latency - window);
      }
      cb.options.push_back({v.name, held, x.saved + ahead + work,
                            recompute_cost(x, v.selective) + stall + io_steal * double(bytes), v.group});
    }
    p.blocks.push_back(std::move(cb));
  }
  return p;
}

SimPlan sim_plan_for(const StepTrace& t, const ChainProblem& problem, const std::vector<int>& choice,
                     size_t prefetch_blocks) {
  STRATA_CHECK(choice.size() == t.blocks.size() && problem.blocks.size() == t.blocks.size(), ValueError,
               "sim_plan_for: ", choice.size(), " choices for ", t.blocks.size(), " blocks");
  SimPlan p = SimPlan::keep_all(t);
  p.prefetch_blocks = std::max<size_t>(prefetch_blocks, 1);
  std::vector<std::string> what(t.blocks.size());
  for (size_t b = 0; b < t.blocks.size(); ++b) {
    what[b] = problem.blocks[b].options.at(size_t(choice[b])).name;
    p.segments[b] = what[b] == "recompute";
  }
  const std::vector<char> cheap = cheapest_recomputes(t);
  auto ends_with = [](const std::string& w, const char* tail) {
    const size_t n = std::char_traits<char>::length(tail);
    return w.size() >= n && w.compare(w.size() - n, n, tail) == 0;
  };
  for (size_t k = 0; k < t.tensors.size(); ++k) {
    const TraceTensor& x = t.tensors[k];
    if (x.block < 0) continue;
    const std::string& w = what[size_t(x.block)];
    bool sel = w.rfind("selective-cheap", 0) == 0 ? bool(cheap[k])
                                                  : w.rfind("selective", 0) == 0 && selective_drops(t, x);
    if (sel && x.block_input && p.segments[size_t(producer_block(t, x))]) sel = false;
    if (w == "host" || ends_with(w, "+host")) p.tensors[k] = CacheAction::Host;
    if (w == "nvme" || ends_with(w, "+nvme")) p.tensors[k] = CacheAction::Nvme;
    if (sel) p.tensors[k] = CacheAction::Recompute;
  }
  return p;
}

Plan cache_plan_for(const StepTrace& t, const SimPlan& sp) {
  Plan plan;
  plan.prefetch_blocks = sp.prefetch_blocks;
  for (size_t b = 0; b < t.blocks.size(); ++b) {
    CacheAction a = sp.segments[b] ? CacheAction::Recompute : CacheAction::Keep;
    if (!sp.segments[b]) {
      for (size_t k = 0; k < t.tensors.size(); ++k)
        if (t.tensors[k].block == int32_t(b) && (sp.tensors[k] == CacheAction::Host || sp.tensors[k] == CacheAction::Nvme))
          a = sp.tensors[k];
    }
    plan.blocks[t.blocks[b].path] = a;
  }
  for (size_t k = 0; k < t.tensors.size(); ++k) {
    const TraceTensor& x = t.tensors[k];
    const bool seg = x.block >= 0 && sp.segments[size_t(x.block)];
    if (seg) continue;
    CacheAction block_action = x.block >= 0 ? plan.blocks[t.blocks[size_t(x.block)].path] : CacheAction::Keep;
    if (sp.tensors[k] != block_action) plan.tensors[x.key] = sp.tensors[k];
  }
  return plan;
}

PlannerResult plan_step(const StepTrace& t, const HardwareProfile& hw, uint64_t budget, const PlannerOptions& o) {
  t.validate();
  auto t0 = std::chrono::steady_clock::now();
  PlannerResult res;
  res.plan = refine_tensors("strata", t, hw, budget, o, solve("strata", t, hw, budget, o));

  const std::vector<BlockFigures> f = figures(t);
  res.baselines.push_back(evaluate("keep-all", t, SimPlan::keep_all(t), hw, budget, o));
  SimPlan all = SimPlan::keep_all(t);
  all.segments.assign(t.blocks.size(), true);
  res.baselines.push_back(evaluate("recompute-all", t, std::move(all), hw, budget, o));
  // Megatron-style: only the memory-bound outputs (GELU, layer norm), never a GEMM's.
  SimPlan sel = SimPlan::keep_all(t);
  const std::vector<char> cheap = cheapest_recomputes(t);
  for (size_t k = 0; k < t.tensors.size(); ++k)
    if (cheap[k]) sel.tensors[k] = CacheAction::Recompute;
  res.baselines.push_back(evaluate("selective", t, std::move(sel), hw, budget, o));
  PlannerOptions only_recompute = o;
  only_recompute.allow_host = only_recompute.allow_nvme = false;
  only_recompute.local_search_rounds = 1;
  res.baselines.push_back(solve("rockmate", t, hw, budget, only_recompute));
  res.baselines.push_back(evaluate("ssdtrain", t, ssdtrain_plan(t, hw, f), hw, budget, o));
  PlannerOptions only_swap = o;
  only_swap.allow_recompute = only_swap.allow_selective = false;
  only_swap.local_search_rounds = 1;
  res.baselines.push_back(solve("swap", t, hw, budget, only_swap));

  // The plan space holds the baselines, but the local search may not reach them: a baseline that
  // holds the budget and beats the solver's plan is taken as it is.
  for (const PolicyResult& b : res.baselines) {
    if (!b.fits) continue;
    if (!res.plan.fits || b.predicted.step_seconds < res.plan.predicted.step_seconds - 1e-12) {
      res.plan = b;
      res.plan.name = "strata";
    }
  }
  res.solve_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // The chosen plans again, with their activation curves and block summaries.
  for (PolicyResult* p : [&] {
         std::vector<PolicyResult*> v{&res.plan};
         for (auto& b : res.baselines) v.push_back(&b);
         return v;
       }()) {
    p->predicted = simulate(t, p->plan, hw, /*curve=*/true);
    p->block_summary = summarize(t, p->plan);
  }
  const double keep_time = res.baselines[0].predicted.step_seconds;
  char buf[512];
  if (res.plan.fits) {
    std::snprintf(buf, sizeof buf, "budget %.1f MB held: %s, predicted step %.4g s (%+.1f%% over keep-all), peak %.1f MB",
                  double(budget) / 1e6, res.plan.block_summary.c_str(), res.plan.predicted.step_seconds,
                  100.0 * (res.plan.predicted.step_seconds / keep_time - 1.0),
                  double(budgeted_peak(res.plan.predicted, o, hw)) / 1e6);
  } else {
    uint64_t lowest = budgeted_peak(res.plan.predicted, o, hw);
    std::string who = "strata";
    for (const auto& b : res.baselines)
      if (budgeted_peak(b.predicted, o, hw) < lowest) {
        lowest = budgeted_peak(b.predicted, o, hw);
        who = b.name;
      }
    std::snprintf(buf, sizeof buf, "budget %.1f MB cannot be met: the lowest predicted peak is %.1f MB (%s)",
                  double(budget) / 1e6, double(lowest) / 1e6, who.c_str());
  }
  res.explanation = buf;
  return res;
}

}  // namespace strata::memory::planner
