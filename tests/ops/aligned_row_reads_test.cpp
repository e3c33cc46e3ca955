// The lane-to-word mapping of the zero-copy row gather (ops/common/aligned_row_reads.h), checked
// on the CPU for every offset of a row in a 128-byte line, many row sizes, every word size and
// several team sizes: every byte of a row is read exactly once, every step but the first starts on
// a line boundary, each lane always reads the same offset of a line, and a row costs exactly the
// lines it spans, where the naive mapping costs up to twice as many.
#include "ops/common/aligned_row_reads.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

using namespace strata::common;

namespace {

// Row sizes to try for words of `w` bytes: small ones, ones around a line and PyTorch-Direct's
// misaligned sizes 2048..2076 (Wu, arXiv 2412.04747, section 4.5).
std::vector<int64_t> row_sizes(int w) {
  std::vector<int64_t> sizes;
  for (int64_t words = 1; words <= 80; ++words) sizes.push_back(words * w);
  for (int64_t bytes : {124, 128, 132, 252, 256, 260, 400, 404, 1020, 1024, 1028})
    if (bytes % w == 0) sizes.push_back(bytes);
  for (int64_t bytes = 2048; bytes <= 2076; bytes += 4)
    if (bytes % w == 0) sizes.push_back(bytes);
  sizes.push_back(4096 + 3 * w);
  return sizes;
}

// Team sizes to try: multiples of a line's lanes up to 256, plus the kernel's own choice.
std::vector<int> team_sizes(int w, int64_t row_bytes) {
  std::set<int> teams{row_team_threads(w, row_bytes)};
  for (int t = int(kHostLineBytes) / w; t <= 256; t *= 2) teams.insert(t);
  return {teams.begin(), teams.end()};
}

// The distinct 128-byte lines each step of `plan` touches, summed over the steps: the requests a
// team sends for one row.
int64_t requests(const RowReadPlan& plan, uint64_t address, int w) {
  int64_t total = 0;
  for (int64_t j = 0; j < plan.steps; ++j) {
    std::set<uint64_t> lines;
    for (int lane = 0; lane < plan.threads; ++lane) {
      const int64_t k = row_read_word(plan, lane, j);
      if (k >= 0) lines.insert((address + uint64_t(k) * uint64_t(w)) / uint64_t(kHostLineBytes));
    }
    total += int64_t(lines.size());
  }
  return total;
}

int64_t lines_spanned(uint64_t address, int64_t row_bytes) {
  return int64_t((address + uint64_t(row_bytes) - 1) / uint64_t(kHostLineBytes) -
                 address / uint64_t(kHostLineBytes)) +
         1;
}

}  // namespace

TEST(AlignedRowReads, EveryByteOfEveryRowIsReadOnceAndLaterStepsStartOnLineBoundaries) {
  int64_t checked = 0;
  for (int w : {1, 2, 4, 8, 16}) {
    for (int64_t bytes : row_sizes(w)) {
      for (int threads : team_sizes(w, bytes)) {
        for (uint64_t offset = 0; offset < uint64_t(kHostLineBytes); offset += uint64_t(w)) {
          const uint64_t address = 0x7f0000001000ull + 7 * uint64_t(kHostLineBytes) + offset;
          SCOPED_TRACE("w=" + std::to_string(w) + " row bytes=" + std::to_string(bytes) +
                       " threads=" + std::to_string(threads) + " offset=" + std::to_string(offset));
          const RowReadPlan plan = aligned_row_plan(address, bytes, w, threads);
          ASSERT_EQ(plan.words * w, bytes);
          std::vector<int> reads(size_t(plan.words), 0);
          for (int64_t j = 0; j < plan.steps; ++j) {
            int64_t first = -1;
            int first_lane = -1;
            for (int lane = 0; lane < threads; ++lane) {
              const int64_t k = row_read_word(plan, lane, j);
              if (k < 0) continue;
              ASSERT_LT(k, plan.words);
              ++reads[size_t(k)];
              const uint64_t at = address + uint64_t(k) * uint64_t(w);
              // Lane l reads byte (l * w) mod 128 of a line: a step's loads coalesce into whole lines.
              ASSERT_EQ(at % uint64_t(kHostLineBytes),
                        uint64_t(lane) * uint64_t(w) % uint64_t(kHostLineBytes));
              if (first < 0) first = k, first_lane = lane;
              ASSERT_EQ(k - first, lane - first_lane);  // a step reads one run of consecutive words
            }
            ASSERT_GE(first, 0) << "step " << j << " reads nothing";
            if (j > 0) {
              ASSERT_EQ((address + uint64_t(first) * uint64_t(w)) % uint64_t(kHostLineBytes), 0u)
                  << "step " << j << " starts inside a line";
            } else {
              ASSERT_EQ(first, 0);  // step 0 starts with the head: the row's first word
            }
          }
          for (size_t k = 0; k < reads.size(); ++k) ASSERT_EQ(reads[k], 1) << "word " << k;
          ASSERT_EQ(requests(plan, address, w), lines_spanned(address, bytes));
          ++checked;

          const RowReadPlan naive = naive_row_plan(bytes, w, threads);
          std::vector<int> naive_reads(size_t(naive.words), 0);
          for (int64_t j = 0; j < naive.steps; ++j)
            for (int lane = 0; lane < threads; ++lane)
              if (const int64_t k = row_read_word(naive, lane, j); k >= 0) ++naive_reads[size_t(k)];
          for (size_t k = 0; k < naive_reads.size(); ++k) ASSERT_EQ(naive_reads[k], 1) << "naive word " << k;
          ASSERT_GE(requests(naive, address, w), requests(plan, address, w));
        }
      }
    }
  }
  EXPECT_GT(checked, 50000);
}

TEST(AlignedRowReads, MisalignedRowsCostHalfTheRequestsOfTheNaiveMapping) {
  // PyTorch-Direct's microbenchmark sizes: 2052-byte rows of f32 (513 features), one warp per row.
  const int w = 4, threads = 32;
  const int64_t bytes = 2052;
  int64_t aligned = 0, naive = 0;
  for (int64_t id = 0; id < 64; ++id) {
    const uint64_t address = 0x10000 + uint64_t(id * bytes);
    aligned += requests(aligned_row_plan(address, bytes, w, threads), address, w);
    naive += requests(naive_row_plan(bytes, w, threads), address, w);
  }
  // 17 steps of 128 bytes: straddling two lines at each misaligned step, one line when aligned.
  EXPECT_EQ(aligned, 64 * 17);
  EXPECT_GT(naive, aligned * 3 / 2);
  EXPECT_LE(naive, 2 * aligned);
}

TEST(AlignedRowReads, WordAndTeamSizesFitTheRowsAndTheLines) {
  EXPECT_EQ(row_word_bytes(0x1000, 0x200000, 2052), 4);  // 513 f32
  EXPECT_EQ(row_word_bytes(0x1000, 0x200000, 400), 16);  // 100 f32
  EXPECT_EQ(row_word_bytes(0x1004, 0x200000, 400), 4);   // a source 4 bytes into a page
  EXPECT_EQ(row_word_bytes(0x1000, 0x200008, 4096), 8);
  EXPECT_EQ(row_word_bytes(0x1000, 0x200000, 13), 1);
  EXPECT_EQ(row_word_bytes(0x1000, 0x200000, 6), 2);
  for (int w : {1, 2, 4, 8, 16})
    for (int64_t bytes : {int64_t(w), int64_t(64), int64_t(200), int64_t(2052), int64_t(100000)}) {
      const int t = row_team_threads(w, bytes);
      EXPECT_EQ(t & (t - 1), 0) << t;                    // a power of two: teams tile a block
      EXPECT_EQ(t % (int(kHostLineBytes) / w), 0) << t;  // whole lines per step
      EXPECT_LE(t, std::max(32, int(kHostLineBytes) / w)) << t;
    }
  EXPECT_EQ(row_team_threads(4, 2052), 32);
  EXPECT_EQ(row_team_threads(16, 64), 16);  // a 64-byte row spans at most two lines of 8 lanes
}
