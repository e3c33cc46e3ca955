#include "strata/io/text/tokenizer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "strata/core/error.h"

using namespace strata;
using namespace strata::io;

TEST(ByteTokenizer, RoundTripsAnyBytes) {
  ByteTokenizer t;
  std::string s = "h\xc3\xa9llo\n\x01\xff";
  std::vector<int32_t> ids = t.encode(s);
  EXPECT_EQ(ids.size(), s.size());
  EXPECT_EQ(ids.back(), 255);
  EXPECT_EQ(t.decode(ids), s);
  EXPECT_THROW(t.decode({300}), ValueError);
}

TEST(Gpt2Pretokenize, SplitsLikeGpt2Regex) {
  using V = std::vector<std::string>;
  EXPECT_EQ(gpt2_pretokenize("Hello world"), (V{"Hello", " world"}));
  EXPECT_EQ(gpt2_pretokenize("don't stop"), (V{"don", "'t", " stop"}));
  EXPECT_EQ(gpt2_pretokenize("a  b"), (V{"a", " ", " b"}));
  EXPECT_EQ(gpt2_pretokenize("x=42!\n\nok  "), (V{"x", "=", "42", "!", "\n", "\n", "ok", "  "}));
  EXPECT_EQ(gpt2_pretokenize(" 's"), (V{" '", "s"}));
}

namespace {
// A tiny byte-level BPE (Ġ is the mapped space); merge ranks decide "Ġl" before "lo".
struct TinyBpe {
  std::string dir = (std::filesystem::temp_directory_path() / ("strata_bpe_" + std::to_string(::getpid()))).string();
  TinyBpe() {
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/vocab.json") << R"({"l": 0, "o": 1, "w": 2, "e": 3, "r": 4, "\u0120": 5, "lo": 6,
        "low": 7, "\u0120l": 8, "\u0120lo": 9, "\u0120low": 10, "<|endoftext|>": 11})";
    std::ofstream(dir + "/merges.txt") << "#version: 0.2\n\u0120 l\nl o\n\u0120l o\nlo w\n\u0120lo w\n";
  }
};
}  // namespace

TEST(Gpt2Tokenizer, AppliesMergesByRankAndRoundTrips) {
  TinyBpe f;
  auto t = Gpt2Tokenizer::from_files(f.dir + "/vocab.json", f.dir + "/merges.txt");
  EXPECT_EQ(t->vocab_size(), 12);
  EXPECT_EQ(t->eot_token(), 11);
  std::vector<int32_t> ids = t->encode("low lower");
  EXPECT_EQ(ids, (std::vector<int32_t>{7, 10, 3, 4}));
  EXPECT_EQ(t->decode(ids), "low lower");
  EXPECT_EQ(t->decode({11}), "<|endoftext|>");
  EXPECT_THROW(t->encode("z"), ValueError);
}

TEST(Gpt2Tokenizer, MalformedFilesNameTheFileAndLine) {
  TinyBpe f;
  std::ofstream(f.dir + "/bad_merges.txt") << "#version: 0.2\nl o\nthree symbols here\n";
  try {
    Gpt2Tokenizer::from_files(f.dir + "/vocab.json", f.dir + "/bad_merges.txt");
    FAIL();
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("line 3"), std::string::npos) << e.what();
  }
  std::ofstream(f.dir + "/bad.json") << "{not json";
  EXPECT_THROW(Gpt2Tokenizer::from_files(f.dir + "/bad.json", f.dir + "/merges.txt"), IoError);
}
