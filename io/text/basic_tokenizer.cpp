// BERT's basic tokenizer: tokenizers' BertNormalizer (clean, CJK spacing, accents, lower case) and
// BertPreTokenizer (whitespace and punctuation split), in that library's order.
#include "io/text/unicode_chars.h"
#include "strata/io/text/wordpiece.h"

namespace strata::io {

namespace {

std::u32string normalize_code_points(std::string_view text, const BasicTokenizerOptions& options) {
  const std::u32string in = text::decode_utf8(text);
  std::u32string out;
  out.reserve(in.size());
  for (char32_t cp : in) {
    if (cp == 0 || cp == text::kReplacementChar || text::is_bert_control(cp)) continue;
    if (text::is_bert_whitespace(cp)) {
      out.push_back(' ');
    } else if (text::is_cjk_ideograph(cp)) {
      out.push_back(' ');
      out.push_back(cp);
      out.push_back(' ');
    } else {
      out.push_back(cp);
    }
  }
  if (options.strips_accents()) out = text::strip_accents(out);
  if (options.lowercase) out = text::to_lower(out);
  return out;
}

}  // namespace

std::string bert_normalize(std::string_view text, const BasicTokenizerOptions& options) {
  return text::encode_utf8(normalize_code_points(text, options));
}

std::vector<std::string> bert_basic_tokenize(std::string_view text, const BasicTokenizerOptions& options) {
  const std::u32string cps = normalize_code_points(text, options);
  std::vector<std::string> words;
  std::string word;
  auto flush = [&] {
    if (!word.empty()) words.push_back(std::move(word));
    word.clear();
  };
  for (char32_t cp : cps) {
    if (text::is_bert_whitespace(cp)) {
      flush();
    } else if (text::is_bert_punctuation(cp)) {
      flush();
      text::append_utf8(word, cp);
      flush();
    } else {
      text::append_utf8(word, cp);
    }
  }
  flush();
  return words;
}

}  // namespace strata::io
