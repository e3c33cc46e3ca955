#include "memory/tiers/nvme_tier.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <vector>

#include "strata/core/error.h"
#include "support/spill_room.h"

using namespace strata;
using namespace strata::memory;

namespace {

std::string spill_dir() { return strata::test::spill_dir("nvme"); }

std::vector<unsigned char> pattern(size_t n, unsigned seed) {
  std::vector<unsigned char> v(n);
  uint32_t x = seed;
  for (auto& b : v) b = static_cast<unsigned char>((x = x * 1664525u + 1013904223u) >> 24);
  return v;
}

struct Rig {
  NvmeTier tier;
  std::unique_ptr<IoChannel> ch;
  Rig(IoEngineKind backend, IoFaults faults = {}, size_t chunk = 16384)
      : tier(spill_dir(), size_t(1) << 20) {
    ch = tier.open_channel(backend, chunk, 3, faults, std::make_shared<FaultCounters>(), nullptr);
  }
};

}  // namespace

class NvmeTierBackends : public ::testing::TestWithParam<IoEngineKind> {};

// Odd sizes exercise the chunk split, the 4 KiB padding and the staging-buffer reuse.
TEST_P(NvmeTierBackends, RoundTripsOddSizesThroughTheStagingChunks) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  Rig rig(GetParam());
  for (size_t n : {size_t(1), size_t(4095), size_t(4096), size_t(16385), size_t(100000)}) {
    auto src = pattern(n, unsigned(n));
    auto off = rig.tier.extents().allocate(n);
    ASSERT_TRUE(off);
    std::vector<uint32_t> crcs;
    IoStatus w = rig.ch->write(src.data(), n, *off, crcs, nullptr);
    ASSERT_TRUE(w.ok) << w.what;
    EXPECT_EQ(crcs.size(), (n + 16383) / 16384);
    std::vector<unsigned char> back(n, 0);
    IoStatus r = rig.ch->read(back.data(), n, *off, crcs);
    ASSERT_TRUE(r.ok) << r.what;
    EXPECT_EQ(back, src) << n;
    rig.tier.extents().free(*off, n);
  }
  EXPECT_EQ(rig.tier.extents().used(), 0u);
}

// Page-aligned host memory goes to and from the file without the staging copy, whole blocks
// at a time; a ragged tail and unaligned memory still go through the staging buffers. Both give
// the same bytes and the same checksums.
TEST_P(NvmeTierBackends, AlignedHostMemoryMovesWithoutTheStagingCopy) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  Rig rig(GetParam());
  if (!rig.tier.direct()) GTEST_SKIP() << "the spill file system refuses O_DIRECT: everything is staged";
  const size_t n = 3 * 16384 + 5000;  // three whole chunks and a ragged tail
  auto src = pattern(n, 7);
  std::unique_ptr<unsigned char, decltype(&std::free)> aligned(
      static_cast<unsigned char*>(std::aligned_alloc(4096, (n + 2 * 4096 + 4095) / 4096 * 4096)),
      &std::free);  // aligned_alloc's size is a multiple of the alignment
  std::memcpy(aligned.get(), src.data(), n);
  auto off = rig.tier.extents().allocate(n);
  ASSERT_TRUE(off);
  std::vector<uint32_t> crcs;
  ASSERT_TRUE(rig.ch->write(aligned.get(), n, *off, crcs, nullptr).ok);
  EXPECT_EQ(rig.ch->zero_copy_chunks(), 3u) << "whole aligned chunks skip the staging buffers";
  std::vector<uint32_t> staged_crcs;
  auto off2 = rig.tier.extents().allocate(n);
  ASSERT_TRUE(off2);
  ASSERT_TRUE(rig.ch->write(src.data() + 0, n, *off2, staged_crcs, nullptr).ok);
  EXPECT_EQ(staged_crcs, crcs) << "the same checksums either way";
  const uint64_t before = rig.ch->zero_copy_chunks();
  unsigned char* into = aligned.get() + 4096;  // aligned, and distinct from the source bytes
  std::memset(into, 0, n);
  ASSERT_TRUE(rig.ch->read(into, n, *off2, crcs).ok);
  EXPECT_EQ(rig.ch->zero_copy_chunks() - before, 3u);
  EXPECT_EQ(std::memcmp(into, src.data(), n), 0);
  std::vector<unsigned char> back(n + 1);
  ASSERT_TRUE(rig.ch->read(back.data() + 1, n, *off, crcs).ok);  // unaligned: staged
  EXPECT_EQ(std::memcmp(back.data() + 1, src.data(), n), 0);
  rig.tier.extents().free(*off, n);
  rig.tier.extents().free(*off2, n);
}

INSTANTIATE_TEST_SUITE_P(Io, NvmeTierBackends, ::testing::Values(IoEngineKind::Auto, IoEngineKind::Threads),
                         [](const auto& info) { return info.param == IoEngineKind::Auto ? "Auto" : "Threads"; });

TEST(NvmeTier, UsesIoUringWhenItIsThereAndFallsBackWhenRefused) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  if (uring_compiled_in()) {
    Rig rig(IoEngineKind::Auto);
    EXPECT_STREQ(rig.ch->engine_name(), "io_uring");
  }
  IoFaults refuse;
  refuse.refuse_uring = true;
  NvmeTier tier(spill_dir(), 1 << 20);
  std::string why;
  auto ch = tier.open_channel(IoEngineKind::Auto, 8192, 2, refuse, std::make_shared<FaultCounters>(), &why);
  EXPECT_STREQ(ch->engine_name(), "threads");
  EXPECT_NE(why.find("io_uring unavailable"), std::string::npos) << why;
  EXPECT_THROW(tier.open_channel(IoEngineKind::Uring, 8192, 2, refuse, std::make_shared<FaultCounters>(), nullptr),
               IoError);
}

TEST(NvmeTier, TheSpillFileHasNoNameAndIsPrivate) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  const std::string dir = spill_dir() + "/private";
  std::filesystem::create_directories(dir);
  {
    NvmeTier tier(dir, 1 << 20);
    EXPECT_TRUE(std::filesystem::is_empty(dir)) << "the spill file must be unlinked";
    struct stat st {};
    ASSERT_EQ(::fstat(tier.fd(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    EXPECT_GE(uint64_t(st.st_size), uint64_t(1) << 20);  // fallocate'd up front
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir));
}

TEST(NvmeTier, AMissingDirectoryIsAnErrorNamingIt) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  try {
    NvmeTier tier("/nonexistent/strata/spill", 1 << 20);
    FAIL() << "no throw";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/strata/spill"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
  // A file where the directory should be says so (it used to say "does not exist").
  const std::string file = spill_dir() + "/not_a_dir";
  std::ofstream(file) << "x";
  try {
    NvmeTier tier(file, 1 << 20);
    FAIL() << "no throw";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("'" + file + "' is not a directory"), std::string::npos) << e.what();
  }
  std::filesystem::remove(file);
}

// Each injected fault surfaces as a failed status naming the cause and the file offset.
TEST(NvmeTier, InjectedFaultsAreReportedWithCauseAndOffset) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  const size_t n = 40000;  // 3 chunks of 16 KiB
  auto src = pattern(n, 7);
  struct Case {
    IoFault fault;
    bool on_read;
    const char* expect;
  };
  std::vector<Case> cases = {
      {{IoFault::Kind::NoSpace, 1, 1}, false, "ENOSPC"},
      {{IoFault::Kind::WriteError, 0, 1}, false, "EIO"},
      {{IoFault::Kind::ShortWrite, 2, 1}, false, "short transfer"},
      {{IoFault::Kind::ReadError, 0, 1}, true, "EIO"},
      {{IoFault::Kind::ShortRead, 1, 1}, true, "short transfer"},
      {{IoFault::Kind::Corrupt, 2, 1}, true, "checksum mismatch"},
  };
  for (const Case& c : cases) {
    IoFaults f;
    f.faults.push_back(c.fault);
    Rig rig(IoEngineKind::Auto, f);
    auto off = rig.tier.extents().allocate(n);
    ASSERT_TRUE(off);
    std::vector<uint32_t> crcs;
    IoStatus w = rig.ch->write(src.data(), n, *off, crcs, nullptr);
    if (!c.on_read) {
      ASSERT_FALSE(w.ok) << c.expect;
      EXPECT_NE(w.what.find(c.expect), std::string::npos) << w.what;
      EXPECT_EQ(w.file_offset, *off + c.fault.first * 16384);
      continue;
    }
    ASSERT_TRUE(w.ok) << w.what;
    std::vector<unsigned char> back(n);
    IoStatus r = rig.ch->read(back.data(), n, *off, crcs);
    ASSERT_FALSE(r.ok) << c.expect;
    EXPECT_NE(r.what.find(c.expect), std::string::npos) << r.what;
    EXPECT_EQ(r.file_offset, *off + c.fault.first * 16384);
    // The fault hit one request only: a second read succeeds.
    IoStatus again = rig.ch->read(back.data(), n, *off, crcs);
    ASSERT_TRUE(again.ok) << again.what;
    EXPECT_EQ(back, src);
  }
}

TEST(NvmeTier, AWriteStopsEarlyWhenCancelled) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  Rig rig(IoEngineKind::Auto);
  auto src = pattern(200000, 3);
  auto off = rig.tier.extents().allocate(src.size());
  std::atomic<bool> cancel{true};
  std::vector<uint32_t> crcs;
  IoStatus w = rig.ch->write(src.data(), src.size(), *off, crcs, &cancel);
  EXPECT_TRUE(w.ok);
  EXPECT_TRUE(w.cancelled);
}

// GPUDirect Storage is loaded at run time: without libcufile (no GPU driver installed) the engine is
// refused with the reason, never a link error or a crash.
TEST(NvmeTier, TheCuFileEngineSaysWhyItIsUnavailable) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  std::string why;
  if (cufile_available(&why)) GTEST_SKIP() << "libcufile present: this check is for machines without it";
  EXPECT_FALSE(why.empty());
  NvmeTier tier(spill_dir(), 1 << 20);
  try {
    make_cufile_engine(tier.fd(), {}, 2);
    FAIL() << "no throw";
  } catch (const IoEngineUnavailable& e) {
    EXPECT_EQ(std::string(e.what()), why);
  }
}
