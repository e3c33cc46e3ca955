// BERT's WordPiece tokenizer under libFuzzer (cmake -DSTRATA_BUILD_FUZZERS=ON with clang), run by hand:
//   build/tests/fuzz_wordpiece -max_total_time=600
// Any bytes are text: encode must return ids inside the vocabulary and decode must take them back,
// lower-cased and cased, without an exception, a crash or a sanitizer report. The vocabulary holds
// special tokens, accented and CJK entries and continuation pieces, so every stage runs.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "strata/io/text/wordpiece.h"

namespace {

std::unique_ptr<strata::io::WordPieceTokenizer> make(bool lowercase) {
  strata::io::WordPieceOptions o;
  o.basic.lowercase = lowercase;
  o.max_input_chars_per_word = 16;  // the limit is reached by short inputs too
  return strata::io::WordPieceTokenizer::from_tokens(
      {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",     "a",        "##a",
       "b",     "##b",   "ab",    "##ab",  "é",          "##é",      "中",
       "!",     "[",     "]",     "i",     "##\xcc\x87", "\xce\xa3", "##\xf0\x9f\x98\x80"},
      o);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto lower = make(true), cased = make(false);
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (const auto* t : {lower.get(), cased.get()}) {
    try {
      const std::vector<int32_t> ids = t->encode(text);
      for (int32_t id : ids)
        if (id < 0 || id >= t->vocab_size()) std::abort();
      (void)t->decode(ids);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "wordpiece: an exception on arbitrary text: %s\n", e.what());
      std::abort();
    }
  }
  return 0;
}
