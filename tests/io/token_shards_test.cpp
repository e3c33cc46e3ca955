#include "strata/io/text/token_shards.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

using namespace strata;
using namespace strata::io;

namespace {
std::string temp_dir() {
  auto d = std::filesystem::temp_directory_path() / ("strata_io_" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return d.string();
}
std::vector<int32_t> iota_tokens(int n, int start = 0) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[size_t(i)] = (start + i) % 60000;
  return v;
}
}  // namespace

TEST(TokenShard, WriteThenReadRoundTrips) {
  std::string p = temp_dir() + "/a.bin";
  write_token_shard(p, iota_tokens(1000, 7));
  auto s = TokenShard::open(p);
  ASSERT_EQ(s->num_tokens(), 1000);
  EXPECT_EQ(s->tokens()[0], 7);
  EXPECT_EQ(s->tokens()[999], 1006);
  EXPECT_EQ(std::filesystem::file_size(p), 1024u + 2000u);
}

// A whole shard into a tensor: i64 [N] holding every token, 65535 included (unsigned).
TEST(TokenShard, AWholeShardReadsIntoATensor) {
  std::string p = temp_dir() + "/whole.bin";
  std::vector<int32_t> tokens = iota_tokens(1000, 7);
  tokens.back() = 65535;
  write_token_shard(p, tokens);
  const Tensor t = read_token_shard(p);
  EXPECT_EQ(t.dtype(), DType::i64);
  EXPECT_EQ(t.shape(), (Shape{1000}));
  const std::vector<int64_t> v = t.to_vector<int64_t>();
  EXPECT_EQ(v[0], 7);
  EXPECT_EQ(v[998], 1005);
  EXPECT_EQ(v[999], 65535);
  EXPECT_THROW(read_token_shard(temp_dir() + "/missing.bin"), IoError);
}

TEST(TokenShard, TruncatedOrCorruptFilesGetErrorsNamingTheFile) {
  std::string dir = temp_dir();
  std::string p = dir + "/t.bin";
  write_token_shard(p, iota_tokens(100));
  std::filesystem::resize_file(p, 1024 + 150);
  try {
    TokenShard::open(p);
    FAIL();
  } catch (const IoError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find(p), std::string::npos) << m;
    EXPECT_NE(m.find("truncated"), std::string::npos) << m;
  }
  std::string q = dir + "/m.bin";
  write_token_shard(q, iota_tokens(10));
  {
    std::fstream f(q, std::ios::in | std::ios::out | std::ios::binary);
    int32_t bad = 1234;
    f.write(reinterpret_cast<char*>(&bad), 4);
  }
  EXPECT_THROW(TokenShard::open(q), IoError);
  std::string r = dir + "/short.bin";
  std::ofstream(r) << "tiny";
  EXPECT_THROW(TokenShard::open(r), IoError);
  EXPECT_THROW(TokenShard::open(dir + "/missing.bin"), IoError);
  // A directory given as a shard says so (mmap used to fail with "No such device").
  std::filesystem::create_directories(dir + "/a_dir.bin");
  try {
    TokenShard::open(dir + "/a_dir.bin");
    FAIL() << "a directory was opened as a shard";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("not a regular file (a directory)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(write_token_shard(dir + "/big.bin", {70000}), ValueError);
}

TEST(TokenLoader, SequentialBatchesAreContiguousAndTargetsShiftByOne) {
  std::string p = temp_dir() + "/seq.bin";
  write_token_shard(p, iota_tokens(1 + 4 * 8 * 3));
  TokenLoader loader({p}, {.batch = 4, .seq_len = 8});
  Tensor x, y;
  loader.next(&x, &y);
  ASSERT_EQ(x.shape(), (Shape{4, 8}));
  std::vector<double> xv = x.to_double_vector(), yv = y.to_double_vector();
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(xv[size_t(i)], i);
    EXPECT_EQ(yv[size_t(i)], i + 1);
  }
  loader.next(&x, &y);
  EXPECT_EQ(x.to_double_vector()[0], 32);
  loader.next(&x, &y);
  loader.next(&x, &y);  // wraps to the next epoch
  EXPECT_EQ(x.to_double_vector()[0], 0);
  EXPECT_EQ(loader.cursor().epoch, 1);
}

// A shard truncated while the loader has it mapped: the read that reaches past the new end is an
// IoError naming the file and the offset, not a SIGBUS that ends the process.
TEST(TokenLoader, AShardThatShrinksUnderItsMappingIsAnErrorNamingTheFile) {
  std::string p = temp_dir() + "/shrinks.bin";
  write_token_shard(p, iota_tokens(1 + 64 * 2000));
  TokenLoader loader({p}, {.batch = 2, .seq_len = 64});
  Tensor x, y;
  loader.next(&x, &y);
  std::filesystem::resize_file(p, 4096);  // what a rewrite in place leaves for a moment
  loader.set_cursor({.epoch = 0, .shard = 0, .sample = 1000});
  try {
    loader.next(&x, &y);
    ADD_FAILURE() << "read tokens past the end of a truncated shard";
  } catch (const IoError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(p), std::string::npos) << m;
    EXPECT_NE(m.find("shrank while mapped"), std::string::npos) << m;
  }
}

TEST(TokenLoader, RanksReadDisjointBatches) {
  std::string p = temp_dir() + "/ranks.bin";
  write_token_shard(p, iota_tokens(1 + 2 * 16 * 6));
  std::set<double> seen;
  for (int r = 0; r < 3; ++r) {
    TokenLoader loader({p}, {.batch = 2, .seq_len = 16, .rank = r, .world_size = 3});
    for (int k = 0; k < 2; ++k) {
      Tensor x, y;
      loader.next(&x, &y);
      for (double v : x.to_double_vector()) EXPECT_TRUE(seen.insert(v).second) << "token " << v << " read twice";
    }
  }
  EXPECT_EQ(seen.size(), 2u * 16 * 6);
}

TEST(TokenLoader, ShuffledOrderIsSeededAndResumesFromACursor) {
  std::string dir = temp_dir();
  std::vector<std::string> paths = {dir + "/s0.bin", dir + "/s1.bin"};
  write_token_shard(paths[0], iota_tokens(1 + 8 * 40, 0));
  write_token_shard(paths[1], iota_tokens(1 + 8 * 40, 5000));
  TokenLoaderOptions o{.batch = 3, .seq_len = 8, .shuffle = true, .seed = 11};
  TokenLoader a(paths, o), b(paths, o);
  std::vector<std::vector<double>> first;
  DataCursor mid;
  for (int k = 0; k < 40; ++k) {
    Tensor x, y;
    a.next(&x, &y);
    first.push_back(x.to_double_vector());
    if (k == 17) mid = a.cursor();
  }
  // Not the sequential order.
  EXPECT_NE(first[0][0], 0);
  b.set_cursor(mid);
  for (int k = 18; k < 40; ++k) {
    Tensor x, y;
    b.next(&x, &y);
    EXPECT_EQ(x.to_double_vector(), first[size_t(k)]) << "batch " << k;
  }
  TokenLoaderOptions o2 = o;
  o2.seed = 12;
  TokenLoader c(paths, o2);
  Tensor x, y;
  c.next(&x, &y);
  EXPECT_NE(x.to_double_vector(), first[0]);
}

// A position past the end of its shard (a corrupt or foreign checkpoint) is refused, naming the
// shard; the end itself is a position the loader makes.
TEST(TokenLoader, ACursorPastItsShardIsRefusedNamingTheShard) {
  std::string dir = temp_dir();
  std::vector<std::string> paths = {dir + "/c0.bin", dir + "/c1.bin"};
  write_token_shard(paths[0], iota_tokens(1 + 8 * 40, 0));
  write_token_shard(paths[1], iota_tokens(1 + 8 * 20, 5000));
  TokenLoader l(paths, {.batch = 3, .seq_len = 8});
  l.set_cursor({.epoch = 0, .shard = 1, .sample = 20});
  try {
    l.set_cursor({.epoch = 0, .shard = 1, .sample = 999999999999});
    FAIL() << "a cursor past the shard's end was accepted";
  } catch (const ValueError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("c1.bin"), std::string::npos) << m;
    EXPECT_NE(m.find("20 samples"), std::string::npos) << m;
  }
  EXPECT_THROW(l.set_cursor({.epoch = 0, .shard = 1, .sample = 21}), ValueError);
}

// Tokens a model cannot take fail when the loader opens the shards (not when a batch holding one
// is drawn, many steps in), naming the shard and the offset; without a limit nothing is checked.
TEST(TokenLoader, TokensAtOrAboveTheVocabularyAreRefusedWhenTheShardOpens) {
  std::string dir = temp_dir();
  std::vector<std::string> paths = {dir + "/v0.bin", dir + "/v1.bin"};
  write_token_shard(paths[0], iota_tokens(1 + 8 * 40, 0));  // 0 .. 320
  std::vector<int32_t> bytes(1 + 8 * 40, 7);
  bytes[100] = 65535;
  write_token_shard(paths[1], bytes);
  EXPECT_NO_THROW(TokenLoader(paths, {.batch = 3, .seq_len = 8}));
  try {
    TokenLoader l({paths[1]}, {.batch = 3, .seq_len = 8, .token_limit = 256});
    FAIL() << "token 65535 was accepted for a vocabulary of 256";
  } catch (const IoError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("v1.bin': token 65535 at position 100 (byte offset 1224)"), std::string::npos) << m;
  }
  EXPECT_THROW(TokenLoader({paths[0]}, {.batch = 3, .seq_len = 8, .token_limit = 256}), IoError);  // 256..320
  EXPECT_NO_THROW(TokenLoader({paths[0]}, {.batch = 3, .seq_len = 8, .token_limit = 321}));
}

TEST(TokenLoader, TooSmallShardIsRejected) {
  std::string p = temp_dir() + "/small.bin";
  write_token_shard(p, iota_tokens(10));
  EXPECT_THROW(TokenLoader({p}, {.batch = 4, .seq_len = 8}), IoError);
}
