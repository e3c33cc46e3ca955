// SpmmChunks, the edge-balanced split the CUDA SpMM runs: replayed on the CPU over skewed graphs
// (hub rows crossing many chunks, empty rows, offsets not starting at 0, chunk sizes from 1 edge to
// more than E), it writes
// every row exactly once with the sequential CSR sum, and no chunk walks more than C edges.
#include "ops/common/spmm_chunks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace strata {
namespace {

using common::SpmmChunks;

// Offsets of R rows: a few hubs, many short rows, some empty.
std::vector<int64_t> skewed_offsets(int64_t R, uint32_t seed, int64_t base = 0) {
  std::mt19937 rng(seed);
  std::vector<int64_t> off{base};
  for (int64_t r = 0; r < R; ++r) {
    const uint32_t u = rng() % 100;
    const int64_t deg = u < 20   ? 0
                        : u < 90 ? int64_t(rng() % 6)
                        : u < 98 ? int64_t(rng() % 80)
                                 : int64_t(500 + rng() % 3000);
    off.push_back(off.back() + deg);
  }
  return off;
}

TEST(SpmmChunks, ReplayedOnTheCpuEveryRowGetsTheSequentialSumOnce) {
  for (uint32_t seed : {1u, 2u, 3u})
    for (int64_t R : {1, 7, 300})
      for (int64_t C : {1, 3, 64, 256, 100000}) {
        const int64_t base = seed == 3 ? 1000 : 0;  // a slice of a larger CSR: off[0] > 0
        const std::vector<int64_t> off = skewed_offsets(R, seed, base);
        const int64_t E = off.back(), F = 3;
        std::vector<double> x(size_t(E * F));
        for (size_t i = 0; i < x.size(); ++i) x[i] = double((i * 37 + seed) % 11) - 5.0;  // exact sums
        std::vector<double> want(size_t(R * F), 0.0);
        for (int64_t r = 0; r < R; ++r)
          for (int64_t k = off[size_t(r)]; k < off[size_t(r + 1)]; ++k)
            for (int64_t f = 0; f < F; ++f) want[size_t(r * F + f)] += x[size_t(k * F + f)];
        const SpmmChunks ch{off.data(), R, C};
        std::vector<double> out(size_t(R * F), -1e300),
            partial(size_t(std::max<int64_t>(ch.chunks(), 1) * 2 * F), 0.0);
        std::vector<int> writes(size_t(R * F), 0);
        for (int64_t c = 0; c < ch.chunks(); ++c) {
          int64_t walked = 0;
          for (int64_t f = 0; f < F; ++f)
            ch.walk<double>(
                c,
                [&](int64_t k) {
                  walked += f == 0;
                  return x[size_t(k * F + f)];
                },
                [&](int64_t r, double s) { out[size_t(r * F + f)] = s, ++writes[size_t(r * F + f)]; },
                [&](int64_t r, int slot, double s) {
                  ASSERT_TRUE(ch.crosses(r)) << "a piece of row " << r << " that lies in one chunk";
                  partial[size_t((c * 2 + slot) * F + f)] = s;
                });
          ASSERT_LE(walked, C);
        }
        for (int64_t r = 0; r < R; ++r)
          for (int64_t f = 0; f < F; ++f) {
            const bool empty = off[size_t(r + 1)] == off[size_t(r)];
            if (empty || ch.crosses(r)) {
              out[size_t(r * F + f)] = empty ? 0.0 : ch.gather<double>(r, [&](int64_t c, int slot) {
                return partial[size_t((c * 2 + slot) * F + f)];
              });
              ++writes[size_t(r * F + f)];
            }
          }
        for (size_t i = 0; i < out.size(); ++i) {
          ASSERT_EQ(writes[i], 1) << "row " << i / size_t(F) << " R=" << R << " C=" << C << " seed=" << seed;
          ASSERT_EQ(out[i], want[i]) << "row " << i / size_t(F) << " R=" << R << " C=" << C
                                     << " seed=" << seed;
        }
      }
}

// The segment softmax the CUDA kernels run on the same chunks: per-row maxima folded by chunk and
// fixed up, the sums of exp(x - max) likewise, then every edge normalized by its row's; equal to
// the sequential softmax of each row (hub rows over many chunks included).
TEST(SpmmChunks, ReplayedSegmentSoftmaxMatchesTheSequentialOne) {
  for (int64_t C : {1, 5, 256}) {
    const std::vector<int64_t> off = skewed_offsets(200, 9);
    const int64_t R = 200, E = off.back();
    std::vector<double> x(static_cast<size_t>(E));
    for (size_t k = 0; k < x.size(); ++k) x[k] = std::sin(double(k) * 0.37) * 4.0;
    const SpmmChunks ch{off.data(), R, C};
    std::vector<double> m(static_cast<size_t>(R)), sum(static_cast<size_t>(R)),
        part(static_cast<size_t>(std::max<int64_t>(ch.chunks(), 1) * 2)), y(static_cast<size_t>(E));
    const double ninf = -std::numeric_limits<double>::infinity();
    auto fold = [&](std::vector<double>& rows, double init, auto value, auto combine) {
      for (int64_t c = 0; c < ch.chunks(); ++c)
        ch.walk_fold<double>(
            c, init, value, combine, [&](int64_t r, double a) { rows[size_t(r)] = a; },
            [&](int64_t, int slot, double a) { part[size_t(c * 2 + slot)] = a; });
      for (int64_t r = 0; r < R; ++r)
        if (ch.crosses(r))
          rows[size_t(r)] = ch.gather_fold<double>(
              r, init, [&](int64_t c, int slot) { return part[size_t(c * 2 + slot)]; }, combine);
    };
    fold(
        m, ninf, [&](int64_t k, int64_t) { return x[size_t(k)]; },
        [](double a, double v) { return v > a ? v : a; });
    fold(
        sum, 0.0, [&](int64_t k, int64_t r) { return std::exp(x[size_t(k)] - m[size_t(r)]); },
        [](double a, double v) { return a + v; });
    for (int64_t c = 0; c < ch.chunks(); ++c)
      ch.for_each_edge(c, [&](int64_t k, int64_t r) {
        y[size_t(k)] = std::exp(x[size_t(k)] - m[size_t(r)]) / sum[size_t(r)];
      });
    for (int64_t r = 0; r < R; ++r) {
      double mx = ninf, s = 0;
      for (int64_t k = off[size_t(r)]; k < off[size_t(r + 1)]; ++k) mx = std::max(mx, x[size_t(k)]);
      for (int64_t k = off[size_t(r)]; k < off[size_t(r + 1)]; ++k) s += std::exp(x[size_t(k)] - mx);
      for (int64_t k = off[size_t(r)]; k < off[size_t(r + 1)]; ++k)
        ASSERT_NEAR(y[size_t(k)], std::exp(x[size_t(k)] - mx) / s, 1e-12)
            << "row " << r << " edge " << k << " C=" << C;
    }
  }
}

TEST(SpmmChunks, RowOfEdgeSkipsEmptyRows) {
  const std::vector<int64_t> off{0, 5, 5, 5, 9, 9};
  const SpmmChunks ch{off.data(), 5, 4};
  EXPECT_EQ(ch.row_of_edge(0), 0);
  EXPECT_EQ(ch.row_of_edge(4), 0);
  EXPECT_EQ(ch.row_of_edge(5), 3);
  EXPECT_EQ(ch.row_of_edge(8), 3);
  EXPECT_EQ(ch.chunks(), 3);
  EXPECT_TRUE(ch.crosses(0));   // edges 0..4: chunks 0 and 1
  EXPECT_TRUE(ch.crosses(3));   // edges 5..8: chunks 1 and 2
  EXPECT_FALSE(ch.crosses(1));  // empty
  EXPECT_EQ(ch.slot(0, 1), 0);  // chunk 1 starts at edge 4, which row 0 holds
  EXPECT_EQ(ch.slot(3, 1), 1);  // ... and ends inside row 3, which goes on into chunk 2
  EXPECT_EQ(ch.slot(3, 2), 0);
}

}  // namespace
}  // namespace strata
