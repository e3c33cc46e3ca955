#include "strata/memory/planner/chain_solver.h"

#include <algorithm>
#include <limits>

#include "strata/core/error.h"

namespace strata::memory::planner {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr uint64_t kMaxUnits = uint64_t(1) << 12;  // table width: the budget in at most 4096 units

uint64_t pick_unit(const ChainProblem& p) {
  if (p.unit_bytes) return p.unit_bytes;
  return std::max<uint64_t>(4096, (p.budget_bytes + kMaxUnits - 1) / kMaxUnits);
}

uint64_t units(uint64_t bytes, uint64_t unit) { return (bytes + unit - 1) / unit; }

void check(const ChainProblem& p) {
  for (const auto& b : p.blocks)
    STRATA_CHECK(!b.options.empty(), ValueError, "solve_chain: block '", b.path, "' has no options");
}

// The peak of one assignment, with held bytes rounded up to units.
uint64_t peak_of(const ChainProblem& p, const std::vector<int>& choice, uint64_t unit) {
  uint64_t prefix = 0, peak = p.base_bytes;
  for (size_t j = 0; j < p.blocks.size(); ++j) {
    const BlockOption& o = p.blocks[j].options[size_t(choice[j])];
    peak = std::max(peak, p.base_bytes + prefix * unit + o.peak_bytes);
    prefix += units(o.held_bytes, unit);
  }
  return std::max(peak, p.base_bytes + prefix * unit);
}

}  // namespace

ChainSolution solve_chain(const ChainProblem& p) {
  check(p);
  ChainSolution sol;
  sol.unit_bytes = pick_unit(p);
  const uint64_t unit = sol.unit_bytes;
  if (p.base_bytes > p.budget_bytes) return sol;
  const uint64_t room = (p.budget_bytes - p.base_bytes) / unit;  // units the held prefix may reach
  const size_t width = size_t(room) + 1;
  const size_t L = p.blocks.size();
  // best[m]: least extra time over blocks 0..j-1 whose held prefix is m units.
  std::vector<double> best(width, kInf), next(width);
  best[0] = 0;
  STRATA_CHECK(std::all_of(p.blocks.begin(), p.blocks.end(), [](const ChainBlock& b) { return b.options.size() < 255; }),
               ValueError, "solve_chain: at most 254 options per block");
  // arg[j][m]: the option of block j that reached prefix m (the previous prefix follows from it).
  std::vector<std::vector<uint8_t>> arg(L, std::vector<uint8_t>(width, 255));
  for (size_t j = 0; j < L; ++j) {
    std::fill(next.begin(), next.end(), kInf);
    const auto& opts = p.blocks[j].options;
    for (size_t m = 0; m < width; ++m) {
      if (best[m] == kInf) continue;
      for (size_t k = 0; k < opts.size(); ++k) {
        const BlockOption& o = opts[k];
        if (p.base_bytes + uint64_t(m) * unit + o.peak_bytes > p.budget_bytes) continue;
        const uint64_t m2 = m + units(o.held_bytes, unit);
        if (m2 > room) continue;
        const double v = best[m] + o.extra_seconds;
        if (v < next[m2]) {
          next[m2] = v;
          arg[j][m2] = uint8_t(k);
        }
      }
    }
    best.swap(next);
  }
  size_t end = width;
  for (size_t m = 0; m < width; ++m)
    if (best[m] < kInf && (end == width || best[m] < best[end])) end = m;
  if (end == width) return sol;
  sol.feasible = true;
  sol.extra_seconds = best[end];
  sol.choice.assign(L, 0);
  size_t m = end;
  for (size_t j = L; j-- > 0;) {
    sol.choice[j] = arg[j][m];
    m -= units(p.blocks[j].options[size_t(sol.choice[j])].held_bytes, unit);
  }
  sol.predicted_peak = peak_of(p, sol.choice, unit);
  return sol;
}

ChainSolution brute_force_chain(const ChainProblem& p) {
  check(p);
  ChainSolution sol;
  sol.unit_bytes = pick_unit(p);
  const size_t L = p.blocks.size();
  std::vector<int> c(L, 0);
  double best = kInf;
  for (;;) {
    uint64_t peak = peak_of(p, c, sol.unit_bytes);
    if (peak <= p.budget_bytes) {
      double t = 0;
      for (size_t j = 0; j < L; ++j) t += p.blocks[j].options[size_t(c[j])].extra_seconds;
      if (t < best) {
        best = t;
        sol.feasible = true;
        sol.choice = c;
        sol.extra_seconds = t;
        sol.predicted_peak = peak;
      }
    }
    size_t j = 0;
    while (j < L && ++c[j] == int(p.blocks[j].options.size())) c[j++] = 0;
    if (j == L) break;
  }
  return sol;
}

}  // namespace strata::memory::planner
