// Which word of a gathered row each lane of a team reads: PyTorch-Direct's alignment of zero-copy
// reads to the 128-byte lines of host memory (Wu, arXiv 2412.04747, section 4.4.5).
//
// A GPU reading page-locked host memory sends at most one 128-byte line per PCIe request, and the
// loads of one warp instruction merge only within a line. A row of R bytes gathered by id starts at
// base + id * R, which lies anywhere in a line unless R is a multiple of 128. The naive mapping
// (PyTorch's indexing kernel: lane l reads word j * T + l at step j) then straddles a line boundary
// at every step, so each step sends one request more than the lines it covers.
//
// The aligned mapping shifts the lanes by the row's offset in its first line,
// s = (address mod 128) / w words: at step j, lane l reads word j * T + l - s of the row. Lane l
// therefore always reads byte (l * w) mod 128 of a line; at step 0 the lanes below s idle and the
// lanes from s on read the unaligned head (the rest of the first line), and every later step reads
// whole lines starting on a line boundary (the last one up to the row's end). A row then costs
// exactly the lines it spans. PyTorch-Direct also wraps the idle lanes of step 0 around to the
// row's end; that saves at most one step but adds a line fragment to step 0, so it is left out.
//
// Words are w bytes, a power of two up to 16 dividing the row size and both row addresses
// (row_word_bytes); a team is T lanes, a multiple of 128 / w (row_team_threads picks one). The
// functions run on the host and on the device, so the CPU tests check the mapping the kernel uses
// (ops/cuda/cuda_feature_gather.cu).
#pragma once

#include <cstdint>

#include "strata/core/host_device.h"

namespace strata::common {

inline constexpr int64_t kHostLineBytes = 128;  // a GPU's request to host memory, at most
inline constexpr int kMaxRowWordBytes = 16;

// One row's reads by one team.
struct RowReadPlan {
  int64_t shift = 0;  // words from the start of the row's first line to the row (0: naive)
  int64_t words = 0;  // words in the row
  int64_t steps = 0;  // steps the team takes: ceil((shift + words) / threads)
  int threads = 0;    // lanes in the team
};

// The largest power of two up to 16 dividing `row_bytes` and both base addresses (rows are at
// base + k * row_bytes on both sides, so every row start is then a multiple of it too).
STRATA_HD int row_word_bytes(uint64_t src_base, uint64_t dst_base, int64_t row_bytes) {
  const uint64_t all = src_base | dst_base | uint64_t(row_bytes) | uint64_t(kMaxRowWordBytes);
  return int(all & (~all + 1));  // lowest set bit
}

// Lanes per team for words of `word_bytes` and rows of `row_bytes`: the lanes of one line
// (128 / w) times a power of two, growing up to a warp while one step covers less than a row can
// span, so that small rows do not leave most of a warp idle. Always a power of two.
STRATA_HD int row_team_threads(int word_bytes, int64_t row_bytes) {
  int threads = int(kHostLineBytes) / word_bytes;
  while (threads < 32 && int64_t(threads) * word_bytes < row_bytes + kHostLineBytes) threads *= 2;
  return threads;
}

// The aligned plan of a row starting at `row_address` (only its offset in a line matters).
STRATA_HD RowReadPlan aligned_row_plan(uint64_t row_address, int64_t row_bytes, int word_bytes, int threads) {
  RowReadPlan p;
  p.shift = int64_t(row_address % uint64_t(kHostLineBytes)) / word_bytes;
  p.words = row_bytes / word_bytes;
  p.threads = threads;
  p.steps = p.words == 0 ? 0 : (p.shift + p.words + threads - 1) / threads;
  return p;
}

// The naive plan: lane l reads word j * T + l, wherever the row starts.
STRATA_HD RowReadPlan naive_row_plan(int64_t row_bytes, int word_bytes, int threads) {
  return aligned_row_plan(0, row_bytes, word_bytes, threads);
}

// The word of the row that lane `lane` reads at step `step`, or -1 when it reads none.
STRATA_HD int64_t row_read_word(const RowReadPlan& p, int lane, int64_t step) {
  const int64_t k = step * p.threads + lane - p.shift;
  return k >= 0 && k < p.words ? k : -1;
}

}  // namespace strata::common
