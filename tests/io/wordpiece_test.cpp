#include "strata/io/text/wordpiece.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "strata/core/error.h"

using namespace strata;
using namespace strata::io;

namespace {

namespace fs = std::filesystem;
using Words = std::vector<std::string>;

const std::string kGoldens = std::string(STRATA_TEST_DATA_DIR) + "/goldens/wordpiece";

BasicTokenizerOptions lower(bool on, std::optional<bool> strip = std::nullopt) {
  BasicTokenizerOptions o;
  o.lowercase = on;
  o.strip_accents = strip;
  return o;
}

// A folder of this process, removed when the test ends.
struct ScratchDir {
  fs::path dir = fs::temp_directory_path() / ("strata_wordpiece_" + std::to_string(::getpid()));
  ScratchDir() { fs::create_directories(dir); }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name, std::ios::binary) << text;
    return (dir / name).string();
  }
};

std::unique_ptr<WordPieceTokenizer> tiny(bool lowercase = true) {
  WordPieceOptions o;
  o.basic.lowercase = lowercase;
  return WordPieceTokenizer::from_tokens(
      {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un",    "##aff", "##able", "run", "##ning", "##n",
       "a",     "##a",   ",",     "!",     "hello",  "world", "cafe",  "café",   "中",  "文",     "Hello"},
      o);
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const IoError& e) {
    return e.what();
  }
  return "(no IoError)";
}

}  // namespace

TEST(WordPieceParity, MatchesHuggingFaceTokenizersOnEveryFixtureLine) {
  std::ifstream f(kGoldens + "/wordpiece.json");
  ASSERT_TRUE(f.good()) << "missing fixture; tools/goldens/wordpiece_goldens.py writes it";
  const nlohmann::json j = nlohmann::json::parse(f);
  const auto& lines = j["lines"];
  ASSERT_GT(lines.size(), 90u);
  ASSERT_EQ(j["vocabularies"].size(), 2u);
  for (const auto& v : j["vocabularies"]) {
    WordPieceOptions o;
    o.basic.lowercase = v["do_lower_case"].get<bool>();
    auto tok = WordPieceTokenizer::from_vocab_file(kGoldens + "/" + v["vocab"].get<std::string>(), o);
    ASSERT_EQ(tok->vocab_size(), v["vocab_size"].get<int>());
    ASSERT_EQ(v["ids"].size(), lines.size());
    int unk_lines = 0;
    for (size_t i = 0; i < lines.size(); ++i) {
      const std::string line = lines[i].get<std::string>();
      const std::vector<int32_t> want = v["ids"][i].get<std::vector<int32_t>>();
      const std::vector<int32_t> got = tok->encode(line);
      unk_lines += std::count(want.begin(), want.end(), tok->unk_id()) > 0;
      EXPECT_EQ(got, want) << v["vocab"] << " line " << i << ": '" << line
                           << "'\n  ours: " << tok->decode(got) << "\n  HF's: " << tok->decode(want);
    }
    EXPECT_GT(unk_lines, 3) << "the fixture should exercise [UNK]";
  }
}

TEST(WordPieceBasic, CleaningDropsControlsAndNormalisesWhitespace) {
  const auto o = lower(false);
  EXPECT_EQ(bert_normalize(std::string("a\0b", 3), o), "ab");
  EXPECT_EQ(bert_normalize("a\x07"
                           "b\x7f"
                           "c\u200b"
                           "d\xc2\xad"
                           "e\ufeff"
                           "f\ufffd"
                           "g\ue000h",
                           o),
            "abcdefgh");
  EXPECT_EQ(bert_normalize("a\tb\nc\rd\u00a0e\u3000f\u2028g", o), "a b c d e f g");
  EXPECT_EQ(bert_normalize("a\u0378b", o), "a\u0378b");  // unassigned (Cn) stays, as in tokenizers
  EXPECT_EQ(bert_normalize("a\x0b"
                           "b\x0c"
                           "c\u0085d",
                           o),
            "abcd");  // Cc, though White_Space
  EXPECT_EQ(bert_basic_tokenize(" \t lots   of\n\nspace  ", o), (Words{"lots", "of", "space"}));
}

TEST(WordPieceBasic, LowerCasingAndAccentStrippingFollowTheOptions) {
  EXPECT_EQ(bert_normalize("Café ÀÉÎ Ñ", lower(true)), "cafe aei n");
  EXPECT_EQ(bert_normalize("Café ÀÉÎ Ñ", lower(false)), "Café ÀÉÎ Ñ");
  EXPECT_EQ(bert_normalize("Café", lower(true, false)), "café");
  EXPECT_EQ(bert_normalize("Café", lower(false, true)), "Cafe");
  EXPECT_EQ(bert_normalize("e\u0301", lower(true)), "e");  // a combining acute is Mn
  // Per character, no context: the final sigma stays σ.
  EXPECT_EQ(bert_normalize("ΟΔΥΣΣΕΥΣ", lower(true)), "οδυσσευσ");
  EXPECT_EQ(bert_normalize("İ", lower(true)), "i");  // NFD gives I + U+0307, the mark is dropped
  EXPECT_EQ(bert_normalize("İ", lower(true, false)), "i\u0307");
  EXPECT_EQ(bert_normalize("ﬁ Å", lower(true)), "ﬁ a");  // NFD keeps compatibility forms
}

TEST(WordPieceBasic, CjkIdeographsAreSingleWordsButKanaAndHangulAreNot) {
  EXPECT_EQ(bert_basic_tokenize("深度学习ab", lower(true)), (Words{"深", "度", "学", "习", "ab"}));
  EXPECT_EQ(bert_basic_tokenize("ひらがな한국어", lower(false)), (Words{"ひらがな한국어"}));
  EXPECT_EQ(bert_basic_tokenize("\U00020000x\uf900", lower(false)), (Words{"\U00020000", "x", "\uf900"}));
}

TEST(WordPieceBasic, EveryPunctuationCharacterIsAWordOfItsOwn) {
  EXPECT_EQ(bert_basic_tokenize("don't stop!!", lower(true)), (Words{"don", "'", "t", "stop", "!", "!"}));
  EXPECT_EQ(bert_basic_tokenize("a$b+c=d^e`f|g~h", lower(true)),
            (Words{"a", "$", "b", "+", "c", "=", "d", "^", "e", "`", "f", "|", "g", "~", "h"}));
  EXPECT_EQ(bert_basic_tokenize("«x»—y…z¿", lower(true)), (Words{"«", "x", "»", "—", "y", "…", "z", "¿"}));
  EXPECT_EQ(bert_basic_tokenize("5€ 2×3 a→b", lower(true)), (Words{"5€", "2×3", "a→b"}));  // symbols, not P*
}

TEST(WordPieceModel, CutsGreedilyLongestFirstWithContinuationPrefix) {
  auto t = tiny();
  EXPECT_EQ(t->tokenize("unaffable running"), (Words{"un", "##aff", "##able", "run", "##ning"}));
  EXPECT_EQ(t->tokenize("runn aaa"), (Words{"run", "##n", "a", "##a", "##a"}));
  EXPECT_EQ(t->tokenize("Hello, World!"), (Words{"hello", ",", "world", "!"}));
  EXPECT_EQ(tiny(false)->tokenize("Hello, café"), (Words{"Hello", ",", "café"}));
  EXPECT_EQ(t->tokenize("中文"), (Words{"中", "文"}));
  EXPECT_EQ(t->encode("unaffable"), (std::vector<int32_t>{5, 6, 7}));
}

TEST(WordPieceModel, AWordWithAnUnmatchedPartIsOneUnk) {
  auto t = tiny();
  EXPECT_EQ(t->tokenize("unaffablex hello"), (Words{"[UNK]", "hello"}));
  EXPECT_EQ(t->tokenize("xyz"), (Words{"[UNK]"}));
  EXPECT_EQ(t->tokenize("hello😀"), (Words{"[UNK]"}));
}

TEST(WordPieceModel, WordsLongerThanTheLimitAreUnkCountedInCharacters) {
  auto t = tiny();
  EXPECT_EQ(t->encode(std::string(100, 'a')).size(), 100u);
  EXPECT_EQ(t->tokenize(std::string(101, 'a')), (Words{"[UNK]"}));
  std::string accented;
  for (int i = 0; i < 100; ++i) accented += "á";  // 200 bytes, 100 characters after the strip
  EXPECT_EQ(t->encode(accented).size(), 100u);
  WordPieceOptions o;
  o.max_input_chars_per_word = 3;
  auto short_words = WordPieceTokenizer::from_tokens({"[UNK]", "a", "##a"}, o);
  EXPECT_EQ(short_words->tokenize("aaa aaaa"), (Words{"a", "##a", "##a", "[UNK]"}));
}

TEST(WordPieceModel, SpecialTokensAreKeptWholeEvenInsideWords) {
  auto t = tiny();
  EXPECT_EQ(t->tokenize("[CLS] hello [SEP] world [SEP]"),
            (Words{"[CLS]", "hello", "[SEP]", "world", "[SEP]"}));
  EXPECT_EQ(t->tokenize("hello[MASK]world"), (Words{"hello", "[MASK]", "world"}));
  EXPECT_EQ(t->tokenize("[PAD][PAD][UNK]"), (Words{"[PAD]", "[PAD]", "[UNK]"}));
  // Matched in the raw text, before lower-casing: [cls] is punctuation and a word.
  EXPECT_EQ(t->tokenize("[cls]"), (Words{"[UNK]", "[UNK]", "[UNK]"}));
  EXPECT_EQ(t->cls_id(), 2);
  EXPECT_EQ(t->sep_id(), 3);
  EXPECT_EQ(t->eot_token(), 3);
  // A vocabulary without [MASK] treats it as text.
  auto no_mask = WordPieceTokenizer::from_tokens({"[UNK]", "[", "]", "mask"});
  EXPECT_EQ(no_mask->tokenize("[MASK]"), (Words{"[", "mask", "]"}));
}

TEST(WordPieceModel, DecodeJoinsPiecesAndRoundTripsNormalisedText) {
  auto t = tiny();
  const std::string text = "[CLS] unaffable running , hello world ! [SEP]";
  EXPECT_EQ(t->decode(t->encode(text)), text);
  EXPECT_EQ(t->decode(t->encode("Café  RUNNING!")), "cafe running !");
  EXPECT_EQ(t->decode({}), "");
  EXPECT_THROW(t->decode({1000}), ValueError);
  EXPECT_THROW(t->decode({-1}), ValueError);
}

TEST(WordPieceModel, InvalidUtf8BecomesReplacementCharactersThatCleaningDrops) {
  auto t = tiny();
  EXPECT_EQ(t->tokenize("hel\xfflo wor\xc3ld"), (Words{"hello", "world"}));
  // Overlong, surrogate, past U+10FFFF, truncated: each byte dropped, never a crash.
  EXPECT_EQ(t->tokenize("a\xc0\xaf"
                        "a\xed\xa0\x80"
                        "a\xf4\x90\x80\x80"
                        "a\xe4\xb8"),
            (Words{"a", "##a", "##a", "##a"}));
  EXPECT_EQ(bert_normalize("\x80\xbf\xfe", lower(true)), "");
}

TEST(WordPieceModel, HostileBytesEndInTokensOrNothing) {
  auto t = tiny();
  std::mt19937 rng(7);
  const std::string seeds[] = {"[CLS] unaffable [SEP]", "中文 café", "a\u0301\u0301\u0301",
                               std::string(300, 'a')};
  for (int round = 0; round < 2000; ++round) {
    std::string s = seeds[round % 4];
    for (int k = 0; k < 4; ++k) s[rng() % s.size()] = char(rng() & 0xFF);
    for (int32_t id : t->encode(s)) ASSERT_TRUE(id >= 0 && id < t->vocab_size());
  }
}

TEST(WordPieceVocab, BadFilesNameTheFileAndTheLine) {
  ScratchDir d;
  // Each file's content and what the message says after the file's name.
  const struct {
    const char *name, *content, *message;
  } cases[] = {
      {"empty.txt", "", "' line 1: the vocabulary is empty"},
      {"dup.txt", "[UNK]\na\n##b\na\n", "' line 4: token 'a' repeats line 2"},
      {"blank.txt", "[UNK]\n\na\n", "' line 2: empty token"},
      {"no_unk.txt", "[PAD]\na\nb", "': none of its 3 lines"},
  };
  for (const auto& c : cases) {
    const std::string path = d.write(c.name, c.content);
    const std::string m = message_of([&] { WordPieceTokenizer::from_vocab_file(path); });
    EXPECT_NE(m.find(path + c.message), std::string::npos) << m;
  }
  EXPECT_NE(
      message_of([&] { WordPieceTokenizer::from_vocab_file(d.dir / "absent.txt"); }).find("cannot open"),
      std::string::npos);
  // Windows line ends and a missing final newline are fine; ids are line numbers from 0.
  auto crlf = WordPieceTokenizer::from_vocab_file(d.write("crlf.txt", "[UNK]\r\nab\r\n##c"));
  EXPECT_EQ(crlf->encode("abc"), (std::vector<int32_t>{1, 2}));
}

TEST(WordPieceVocab, ModelFolderOptionsComeFromTokenizerConfig) {
  ScratchDir d;
  d.write("vocab.txt", "[UNK]\ncafé\ncafe\nCafé\n");
  EXPECT_EQ(WordPieceTokenizer::from_hf_dir(d.dir)->tokenize("Café"),
            (Words{"cafe"}));  // no config: lower case
  d.write("tokenizer_config.json", R"({"do_lower_case": false, "model_max_length": 512})");
  EXPECT_EQ(WordPieceTokenizer::from_hf_dir(d.dir)->tokenize("Café"), (Words{"Café"}));
  d.write("tokenizer_config.json", R"({"do_lower_case": true, "strip_accents": false})");
  EXPECT_EQ(WordPieceTokenizer::from_hf_dir(d.dir)->tokenize("Café"), (Words{"café"}));
  d.write("tokenizer_config.json", R"({"do_lower_case": true, "strip_accents": null})");
  EXPECT_EQ(WordPieceTokenizer::from_hf_dir(d.dir)->tokenize("Café"), (Words{"cafe"}));
  d.write("tokenizer_config.json", R"({"do_lower_case": "yes"})");
  EXPECT_NE(
      message_of([&] { WordPieceTokenizer::from_hf_dir(d.dir); }).find("do_lower_case is not true or false"),
      std::string::npos);
  d.write("tokenizer_config.json", "{not json");
  EXPECT_NE(message_of([&] { WordPieceTokenizer::from_hf_dir(d.dir); }).find("tokenizer_config.json' is not"),
            std::string::npos);
}
