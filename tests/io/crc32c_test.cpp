#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "strata/core/crc32c.h"

using strata::crc32c;

// Check values from RFC 3720 (iSCSI), appendix B.4, and the usual "123456789" check.
TEST(Crc32c, MatchesPublishedCheckValues) {
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(crc32c("", 0), 0u);
  std::vector<uint8_t> zeros(32, 0), ones(32, 0xFF), up(32), down(32);
  std::iota(up.begin(), up.end(), uint8_t(0));
  for (int i = 0; i < 32; ++i) down[size_t(i)] = uint8_t(31 - i);
  EXPECT_EQ(crc32c(zeros.data(), 32), 0x8A9136AAu);
  EXPECT_EQ(crc32c(ones.data(), 32), 0x62A8AB43u);
  EXPECT_EQ(crc32c(up.data(), 32), 0x46DD794Eu);
  EXPECT_EQ(crc32c(down.data(), 32), 0x113FDB5Cu);
}

TEST(Crc32c, IncrementalEqualsOneShotAtAnySplitAndAlignment) {
  std::vector<uint8_t> buf(1000);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = uint8_t(i * 131 + 7);
  for (size_t start : {0, 1, 3, 7}) {
    const uint8_t* p = buf.data() + start;
    const size_t n = 900;
    const uint32_t whole = crc32c(p, n);
    for (size_t split : {size_t(0), size_t(1), size_t(5), size_t(8), size_t(13), size_t(450), n})
      EXPECT_EQ(crc32c(p + split, n - split, crc32c(p, split)), whole) << "start " << start << " split " << split;
  }
  // Byte-wise reference (the bit-at-a-time definition) on an odd length.
  auto reference = [](const uint8_t* p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; ++i) {
      c ^= p[i];
      for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    }
    return ~c;
  };
  EXPECT_EQ(crc32c(buf.data() + 1, 997), reference(buf.data() + 1, 997));
}

// Bit-at-a-time definition of CRC-32C, against which the fast paths are checked.
static uint32_t crc32c_bitwise(const unsigned char* p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
  }
  return ~c;
}

TEST(Crc32c, MatchesTheBitwiseDefinitionAtEveryLengthAndAlignment) {
  std::vector<unsigned char> buf(4096 + 64);
  uint32_t x = 12345;
  for (auto& b : buf) b = static_cast<unsigned char>((x = x * 1664525u + 1013904223u) >> 24);
  for (size_t start : {0, 1, 3, 7}) {
    for (size_t n : {0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000, 4096}) {
      EXPECT_EQ(crc32c(buf.data() + start, n), crc32c_bitwise(buf.data() + start, n))
          << "start " << start << " n " << n;
    }
  }
}

// Long buffers run as three interleaved chains joined by table multiplies: around and across
// the three-lane boundary (3 x 8 KiB), continuing from a non-zero CRC, at odd starts.
TEST(Crc32c, InterleavedChainsMatchTheBitwiseDefinitionOnLongBuffers) {
  std::vector<unsigned char> buf(2 * 24576 + 4096);
  uint32_t x = 4242;
  for (auto& b : buf) b = static_cast<unsigned char>((x = x * 1664525u + 1013904223u) >> 24);
  for (size_t start : {0, 1, 5}) {
    for (size_t n : {24575, 24576, 24577, 24576 + 8, 2 * 24576 + 13, 2 * 24576 + 4000}) {
      ASSERT_LE(start + n, buf.size());
      EXPECT_EQ(crc32c(buf.data() + start, n), crc32c_bitwise(buf.data() + start, n)) << "start " << start << " n " << n;
      const size_t head = 1000;
      EXPECT_EQ(crc32c(buf.data() + start + head, n - head, crc32c(buf.data() + start, head)),
                crc32c_bitwise(buf.data() + start, n))
          << "continued, start " << start << " n " << n;
    }
  }
}

// crc(A || B) from crc(A), crc(B) and |B|: every split of an odd-length buffer, including empty
// halves, and a length past 2^16 so several powers of x are combined.
TEST(Crc32c, CombineEqualsTheCrcOfTheConcatenation) {
  std::vector<unsigned char> buf(70001);
  uint32_t x = 777;
  for (auto& b : buf) b = static_cast<unsigned char>((x = x * 1664525u + 1013904223u) >> 24);
  const uint32_t whole = crc32c(buf.data(), buf.size());
  for (size_t split : {size_t(0), size_t(1), size_t(4095), size_t(4096), size_t(65536), size_t(69999), buf.size()}) {
    const uint32_t a = crc32c(buf.data(), split), b = crc32c(buf.data() + split, buf.size() - split);
    EXPECT_EQ(strata::crc32c_combine(a, b, buf.size() - split), whole) << "split " << split;
  }
}

// How a GPU checksums a chunk: CRCs of fixed-size segments computed independently, folded on the
// host. Exact for whole and ragged last segments.
TEST(Crc32c, FromSegmentsEqualsTheWholeCrc) {
  std::vector<unsigned char> buf(3 * 4096 + 777);
  uint32_t x = 99;
  for (auto& b : buf) b = static_cast<unsigned char>((x = x * 1664525u + 1013904223u) >> 24);
  for (size_t total : {size_t(1), size_t(4096), size_t(8192), size_t(8193), buf.size()}) {
    for (size_t seg : {size_t(512), size_t(4096)}) {
      std::vector<uint32_t> crcs;
      for (size_t at = 0; at < total; at += seg) crcs.push_back(crc32c(buf.data() + at, std::min(seg, total - at)));
      EXPECT_EQ(strata::crc32c_from_segments(crcs.data(), seg, total), crc32c(buf.data(), total))
          << "total " << total << " segment " << seg;
    }
  }
}
