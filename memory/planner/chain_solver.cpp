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

int groups_of(const ChainProblem& p) {
  int g = 0;
  for (const auto& b : p.blocks)
    for (const auto& o : b.options) g = std::max(g, o.prefix_group);
  return g;
}

void check(const ChainProblem& p) {
  for (const auto& b : p.blocks) {
    STRATA_CHECK(!b.options.empty(), ValueError, "solve_chain: block '", b.path, "' has no options");
    STRATA_CHECK(b.options.size() < 255, ValueError, "solve_chain: block '", b.path, "' has ", b.options.size(),
                 " options, at most 254");
    for (const auto& o : b.options)
      STRATA_CHECK(o.prefix_group >= 0 && o.prefix_group < 255, ValueError, "solve_chain: option '", o.name,
                   "' of block '", b.path, "' has prefix group ", o.prefix_group, " (0..254)");
  }
}

// Whether every block choosing a group-g option comes after blocks that all chose group g.
bool prefixes_hold(const ChainProblem& p, const std::vector<int>& choice) {
  int open = -1;  // the group of the prefix so far (-1: no block yet), 0 once it has ended
  for (size_t j = 0; j < p.blocks.size(); ++j) {
    const int g = p.blocks[j].options[size_t(choice[j])].prefix_group;
    if (g != 0 && open != -1 && open != g) return false;
    open = g;
  }
  return true;
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
  const size_t S = size_t(groups_of(p)) + 1;  // state 0: free; g > 0: every block so far chose group g
  // best[s * width + m]: least extra time over blocks 0..j-1 in state s whose held prefix is m units.
  // Before block 0 every state is open (an empty prefix belongs to every group).
  std::vector<double> best(S * width, kInf), next(S * width);
  for (size_t s = 0; s < S; ++s) best[s * width] = 0;
  // arg[j][s * width + m]: the option of block j that reached (s, m); from[j][...]: the state before.
  std::vector<std::vector<uint8_t>> arg(L, std::vector<uint8_t>(S * width, 255)), from(L, std::vector<uint8_t>(S * width, 0));
  for (size_t j = 0; j < L; ++j) {
    std::fill(next.begin(), next.end(), kInf);
    const auto& opts = p.blocks[j].options;
    for (size_t s = 0; s < S; ++s) {
      // Option by option (those of group 0 and of this state's group), over the held prefixes
      // that leave room for its backward peak and its own held bytes: no test per state.
      for (size_t k = 0; k < opts.size(); ++k) {
        const BlockOption& o = opts[k];
        const size_t g = size_t(o.prefix_group);
        if (g != 0 && g != s) continue;
        if (p.base_bytes + o.peak_bytes > p.budget_bytes) continue;
        const uint64_t held = units(o.held_bytes, unit);
        if (held > room) continue;
        const uint64_t by_peak = (p.budget_bytes - p.base_bytes - o.peak_bytes) / unit;
        const size_t last = size_t(std::min<uint64_t>(room - held, by_peak));
        const double* in = &best[s * width];
        double* out = &next[g * width + size_t(held)];
        uint8_t* a = &arg[j][g * width + size_t(held)];
        uint8_t* f = &from[j][g * width + size_t(held)];
        for (size_t m = 0; m <= last; ++m) {
          const double v = in[m] + o.extra_seconds;
          if (v < out[m]) {
            out[m] = v;
            a[m] = uint8_t(k);
            f[m] = uint8_t(s);
          }
        }
      }
    }
    best.swap(next);
  }
  size_t end = best.size();
  for (size_t at = 0; at < best.size(); ++at)
    if (best[at] < kInf && (end == best.size() || best[at] < best[end])) end = at;
  if (end == best.size()) return sol;
  sol.feasible = true;
  sol.extra_seconds = best[end];
  sol.choice.assign(L, 0);
  size_t s = end / width, m = end % width;
  for (size_t j = L; j-- > 0;) {
    const size_t at = s * width + m;
    sol.choice[j] = arg[j][at];
    s = from[j][at];
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
    if (peak <= p.budget_bytes && prefixes_hold(p, c)) {
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
