// The chain DP against brute force (every combination) on random small chains, on a hand-checked
// three-block case, and on the boundary cases (nothing fits, everything fits).
#include <gtest/gtest.h>

#include <random>

#include "strata/core/error.h"
#include "strata/memory/planner/chain_solver.h"

using namespace strata;
using namespace strata::memory::planner;

namespace {

constexpr uint64_t MiB = uint64_t(1) << 20;

ChainBlock block(const std::string& path, std::vector<BlockOption> options) { return ChainBlock{path, std::move(options)}; }

// A random chain of 1 to 6 blocks, each with 1 to `max_options` options (the first free, sizes
// not multiples of the unit), a base, and a budget between 0.2x and 1.3x of keep-all + 50 MiB
// over it. Where `max_group` > 0, every option past the first joins prefix group 0..max_group.
ChainProblem random_chain(std::mt19937& rng, int max_options, int max_group) {
  std::uniform_int_distribution<int> nblocks(1, 6), nopts(1, max_options), mib(0, 120), centis(0, 300),
      group(0, max_group);
  ChainProblem p;
  const int L = nblocks(rng);
  uint64_t keep_all = 0;
  for (int j = 0; j < L; ++j) {
    ChainBlock b;
    b.path = std::string("b").append(std::to_string(j));
    const int K = nopts(rng);
    for (int k = 0; k < K; ++k) {
      BlockOption o;
      o.name = std::string("o").append(std::to_string(k));
      o.held_bytes = uint64_t(mib(rng)) * MiB + uint64_t(mib(rng)) * 1000;
      o.peak_bytes = o.held_bytes + uint64_t(mib(rng)) * MiB;
      o.extra_seconds = k == 0 ? 0.0 : centis(rng) / 100.0;
      if (max_group > 0) o.prefix_group = k == 0 ? 0 : group(rng);
      b.options.push_back(o);
    }
    keep_all += b.options[0].held_bytes;
    p.blocks.push_back(b);
  }
  p.base_bytes = uint64_t(mib(rng)) * MiB;
  p.budget_bytes = p.base_bytes + uint64_t(std::uniform_real_distribution<double>(0.2, 1.3)(rng) *
                                           double(keep_all + 50 * MiB));
  return p;
}

// solve_chain(p), checked against the brute force: the same feasibility and, where feasible,
// the same extra seconds and a peak within the budget.
ChainSolution solve_like_brute_force(const ChainProblem& p) {
  const ChainSolution dp = solve_chain(p), bf = brute_force_chain(p);
  EXPECT_EQ(dp.feasible, bf.feasible);
  if (dp.feasible && bf.feasible) {
    EXPECT_NEAR(dp.extra_seconds, bf.extra_seconds, 1e-9);
    EXPECT_LE(dp.predicted_peak, p.budget_bytes);
  }
  return dp;
}

}  // namespace

TEST(ChainSolver, HandCheckedThreeBlocks) {
  // keep: holds 100, backward peak 100, free. recompute: holds 10 (its input), peak 110, +1 s.
  auto b = [](const char* name) {
    return block(name, {{"keep", 100 * MiB, 100 * MiB, 0.0}, {"recompute", 10 * MiB, 110 * MiB, 1.0}});
  };
  ChainProblem p;
  p.blocks = {b("h.0"), b("h.1"), b("h.2")};
  p.base_bytes = 50 * MiB;
  p.unit_bytes = MiB;
  // Solves for a budget of `budget` MiB: feasible, with this choice, extra time and peak (MiB).
  auto expect_solution = [&](uint64_t budget, const std::vector<int>& choice, double extra, uint64_t peak) {
    SCOPED_TRACE(budget);
    p.budget_bytes = budget * MiB;
    const ChainSolution s = solve_chain(p);
    ASSERT_TRUE(s.feasible);
    EXPECT_EQ(s.choice, choice);
    EXPECT_EQ(s.extra_seconds, extra);
    EXPECT_EQ(s.predicted_peak, peak * MiB);
  };
  expect_solution(350, {0, 0, 0}, 0.0, 350);  // keep-all: 50 + 300 = 350 fits
  // 260: keep-all no longer fits. Recomputing h.0 gives 50 + 10 + 100 + 100 = 260 (block 2's
  // backward: 50 + 110 + 100 = 260): one recompute is enough, and it must be the first block
  // (recomputing h.2 instead peaks at 50 + 200 + 110 = 360).
  expect_solution(260, {1, 0, 0}, 1.0, 260);
  // 170: h.0 and h.1 recompute, h.2 keeps (its backward: 50 + 10 + 10 + 100 = 170); recomputing
  // all three would peak higher (50 + 20 + 110 = 180).
  expect_solution(170, {1, 1, 0}, 2.0, 170);
  // 165: block 2's backward needs 50 + held(h.0) + held(h.1) + 100, at least 170: nothing fits.
  p.budget_bytes = 165 * MiB;
  EXPECT_FALSE(solve_like_brute_force(p).feasible);
  p.budget_bytes = 40 * MiB;  // below the base
  EXPECT_FALSE(solve_chain(p).feasible);
}

TEST(ChainSolver, MatchesBruteForceOnRandomChains) {
  std::mt19937 rng(7);
  int feasible = 0, infeasible = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const ChainProblem p = random_chain(rng, 4, 0);
    const int L = int(p.blocks.size());
    SCOPED_TRACE(trial);
    const ChainSolution dp = solve_like_brute_force(p);
    if (!dp.feasible) {
      ++infeasible;
      continue;
    }
    ++feasible;
    double t = 0;
    for (int j = 0; j < L; ++j) t += p.blocks[size_t(j)].options[size_t(dp.choice[size_t(j)])].extra_seconds;
    EXPECT_NEAR(t, dp.extra_seconds, 1e-9) << "the choices add up to the reported time";
  }
  EXPECT_GT(feasible, 100);
  EXPECT_GT(infeasible, 20);
}

TEST(ChainSolver, SplitsHugeBudgetsInto4096UnitsAndRefusesEmptyBlocks) {
  ChainProblem p;
  for (int j = 0; j < 48; ++j)
    p.blocks.push_back(block("h." + std::to_string(j), {{"keep", 2000 * MiB, 2500 * MiB, 0.0},
                                                        {"selective", 900 * MiB, 2500 * MiB, 0.02},
                                                        {"recompute", 40 * MiB, 2600 * MiB, 0.1},
                                                        {"host", 60 * MiB, 4500 * MiB, 0.01},
                                                        {"nvme", 60 * MiB, 4500 * MiB, 0.03}}));
  p.base_bytes = 25'000 * MiB;
  p.budget_bytes = 80'000 * MiB;
  ChainSolution s = solve_chain(p);
  ASSERT_TRUE(s.feasible);
  EXPECT_EQ(s.unit_bytes, (p.budget_bytes + 4095) / 4096) << "the budget in 4096 units";
  EXPECT_LE(s.predicted_peak, p.budget_bytes);
  p.blocks[3].options.clear();
  EXPECT_THROW(solve_chain(p), ValueError);
}

TEST(ChainSolver, PrefixGroupsAreOnlyChosenAfterBlocksOfTheSameGroup) {
  // Three identical blocks: keep (holds 100), offload-a (group 1, holds 0), offload-b (group 2,
  // holds 0, cheaper). Offloads must form a prefix of one group: b on h.0 and h.1 with h.2 kept is
  // allowed; b on h.2 alone is not.
  auto b = [](const char* name) {
    return block(name, {{"keep", 100 * MiB, 100 * MiB, 0.0},
                        {"offload-a", 0, 100 * MiB, 1.0, 1},
                        {"offload-b", 0, 100 * MiB, 0.5, 2}});
  };
  ChainProblem p;
  p.blocks = {b("h.0"), b("h.1"), b("h.2")};
  p.unit_bytes = MiB;
  p.budget_bytes = 200 * MiB;  // one block offloaded: it must be h.0
  ChainSolution s = solve_chain(p);
  ASSERT_TRUE(s.feasible);
  EXPECT_EQ(s.choice, (std::vector<int>{2, 0, 0}));
  EXPECT_DOUBLE_EQ(s.extra_seconds, 0.5);
  p.budget_bytes = 100 * MiB;  // two: h.0 and h.1, both of group 2
  s = solve_chain(p);
  ASSERT_TRUE(s.feasible);
  EXPECT_EQ(s.choice, (std::vector<int>{2, 2, 0}));
  // Group 2 may not follow group 1: with a-only on h.0, h.1 cannot take b.
  p.blocks[0].options.erase(p.blocks[0].options.begin() + 2);
  s = solve_chain(p);
  ASSERT_TRUE(s.feasible);
  EXPECT_EQ(s.choice, (std::vector<int>{1, 1, 0}));
  EXPECT_DOUBLE_EQ(s.extra_seconds, 2.0);
  p.blocks[0].options.resize(1);  // h.0 can only keep: no prefix can start, nothing fits
  EXPECT_FALSE(solve_like_brute_force(p).feasible);
}

TEST(ChainSolver, PrefixGroupsMatchBruteForceOnRandomChains) {
  std::mt19937 rng(19);
  int feasible = 0, with_groups = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const ChainProblem p = random_chain(rng, 5, 2);
    const int L = int(p.blocks.size());
    SCOPED_TRACE(trial);
    const ChainSolution dp = solve_like_brute_force(p);
    if (!dp.feasible) continue;
    ++feasible;
    int open = -1;
    bool grouped = false;
    for (int j = 0; j < L; ++j) {
      const int g = p.blocks[size_t(j)].options[size_t(dp.choice[size_t(j)])].prefix_group;
      EXPECT_TRUE(g == 0 || open == -1 || open == g) << "trial " << trial << ": block " << j << " breaks its prefix";
      grouped = grouped || g != 0;
      open = g;
    }
    with_groups += grouped;
  }
  EXPECT_GT(feasible, 100);
  EXPECT_GT(with_groups, 30) << "the random chains exercise the groups";
}
