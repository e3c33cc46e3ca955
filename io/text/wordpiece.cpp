// WordPiece over vocab.txt: loading and checking the vocabulary, special tokens cut out of the raw
// text, greedy longest-match-first pieces, and decoding.
#include "strata/io/text/wordpiece.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>

#include "strata/core/error.h"

namespace strata::io {

namespace {

constexpr std::string_view kContinuation = "##";
// The special tokens BertWordPieceTokenizer registers when the vocabulary holds them.
constexpr const char* kSpecialTokens[] = {"[UNK]", "[SEP]", "[CLS]", "[PAD]", "[MASK]"};

bool is_utf8_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

}  // namespace

WordPieceOptions read_hf_wordpiece_options(const std::string& dir) {
  WordPieceOptions options;
  const std::filesystem::path path = std::filesystem::path(dir) / "tokenizer_config.json";
  std::ifstream in(path);
  if (!in) return options;
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  STRATA_CHECK(j.is_object(), IoError, "WordPiece: '", path.string(), "' is not a JSON object");
  if (j.contains("do_lower_case")) {
    STRATA_CHECK(j["do_lower_case"].is_boolean(), IoError, "WordPiece: '", path.string(),
                 "': do_lower_case is not true or false");
    options.basic.lowercase = j["do_lower_case"].get<bool>();
  }
  if (j.contains("strip_accents") && !j["strip_accents"].is_null()) {
    STRATA_CHECK(j["strip_accents"].is_boolean(), IoError, "WordPiece: '", path.string(),
                 "': strip_accents is not true, false or null");
    options.basic.strip_accents = j["strip_accents"].get<bool>();
  }
  return options;
}

std::unique_ptr<WordPieceTokenizer> WordPieceTokenizer::from_vocab_file(const std::string& vocab_txt,
                                                                        const WordPieceOptions& options) {
  STRATA_CHECK(!std::filesystem::is_directory(vocab_txt), IoError, "WordPiece: vocab '", vocab_txt,
               "' is a directory, not a vocab.txt");
  std::ifstream f(vocab_txt, std::ios::binary);
  STRATA_CHECK(f.good(), IoError, "WordPiece: cannot open vocab '", vocab_txt, "'");
  const std::string bytes((std::istreambuf_iterator<char>(f)), {});
  std::vector<std::string> tokens;
  size_t at = 0;
  while (at < bytes.size()) {
    size_t end = bytes.find('\n', at);
    if (end == std::string::npos) end = bytes.size();
    std::string line = bytes.substr(at, end - at);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    tokens.push_back(std::move(line));
    at = end + 1;
  }
  return from_tokens(std::move(tokens), options, vocab_txt);
}

std::unique_ptr<WordPieceTokenizer> WordPieceTokenizer::from_hf_dir(const std::string& dir) {
  return from_vocab_file((std::filesystem::path(dir) / "vocab.txt").string(), read_hf_wordpiece_options(dir));
}

std::unique_ptr<WordPieceTokenizer> WordPieceTokenizer::from_tokens(std::vector<std::string> tokens,
                                                                    const WordPieceOptions& options,
                                                                    const std::string& source) {
  STRATA_CHECK(!tokens.empty(), IoError, "WordPiece: vocab '", source, "' line 1: the vocabulary is empty");
  STRATA_CHECK(tokens.size() < size_t(std::numeric_limits<int32_t>::max()), IoError, "WordPiece: vocab '",
               source, "' has too many lines (", tokens.size(), ")");
  STRATA_CHECK(options.max_input_chars_per_word > 0, ValueError,
               "WordPiece: max_input_chars_per_word must be positive, got ",
               options.max_input_chars_per_word);
  std::unique_ptr<WordPieceTokenizer> t(new WordPieceTokenizer());
  t->options_ = options;
  t->token_to_id_.reserve(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    STRATA_CHECK(!tokens[i].empty(), IoError, "WordPiece: vocab '", source, "' line ", i + 1,
                 ": empty token");
    auto [it, inserted] = t->token_to_id_.emplace(tokens[i], int32_t(i));
    STRATA_CHECK(inserted, IoError, "WordPiece: vocab '", source, "' line ", i + 1, ": token '", tokens[i],
                 "' repeats line ", it->second + 1);
  }
  t->id_to_token_ = std::move(tokens);
  t->unk_id_ = t->token_id("[UNK]");
  STRATA_CHECK(t->unk_id_ >= 0, IoError, "WordPiece: vocab '", source, "': none of its ",
               t->id_to_token_.size(), " lines (1 to ", t->id_to_token_.size(),
               ") is [UNK], which unknown words need");
  t->sep_id_ = t->token_id("[SEP]");
  for (const char* s : kSpecialTokens)
    if (t->token_id(s) >= 0) t->special_.emplace_back(s);
  std::stable_sort(t->special_.begin(), t->special_.end(),
                   [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  return t;
}

int32_t WordPieceTokenizer::token_id(std::string_view token) const {
  auto it = token_to_id_.find(std::string(token));
  return it == token_to_id_.end() ? -1 : it->second;
}

const std::string& WordPieceTokenizer::token(int32_t id) const {
  STRATA_CHECK(id >= 0 && id < vocab_size(), ValueError, "WordPiece: token id ", id,
               " is outside the vocabulary (", vocab_size(), " tokens)");
  return id_to_token_[size_t(id)];
}

void WordPieceTokenizer::tokenize_word(std::string_view word, std::vector<std::string>* out) const {
  std::vector<size_t> bounds;  // byte offsets of the code points, then the end
  for (size_t i = 0; i < word.size(); ++i)
    if (!is_utf8_continuation(word[i])) bounds.push_back(i);
  const size_t n_chars = bounds.size();
  bounds.push_back(word.size());
  if (n_chars > size_t(options_.max_input_chars_per_word)) {
    out->push_back(id_to_token_[size_t(unk_id_)]);
    return;
  }
  const size_t first = out->size();
  std::string piece;
  for (size_t start = 0; start < n_chars;) {
    size_t end = n_chars;
    for (; end > start; --end) {
      piece.assign(start > 0 ? kContinuation : std::string_view());
      piece.append(word.substr(bounds[start], bounds[end] - bounds[start]));
      if (token_to_id_.count(piece)) break;
    }
    if (end == start) {  // no entry matches here: the whole word is unknown
      out->resize(first);
      out->push_back(id_to_token_[size_t(unk_id_)]);
      return;
    }
    out->push_back(piece);
    start = end;
  }
}

std::vector<std::string> WordPieceTokenizer::tokenize(std::string_view text) const {
  std::vector<std::string> out;
  auto tokenize_segment = [&](std::string_view segment) {
    for (const std::string& word : bert_basic_tokenize(segment, options_.basic)) tokenize_word(word, &out);
  };
  // Special tokens are matched in the raw text, leftmost first and longest at one place, as
  // tokenizers' AddedVocabulary does for tokens that are not normalized.
  std::vector<size_t> next(special_.size());
  for (size_t k = 0; k < special_.size(); ++k) next[k] = text.find(special_[k]);
  size_t at = 0;
  while (true) {
    size_t best = std::string_view::npos, best_k = 0;
    for (size_t k = 0; k < special_.size(); ++k) {
      if (next[k] != std::string_view::npos && next[k] < at) next[k] = text.find(special_[k], at);
      if (next[k] < best) best = next[k], best_k = k;  // longest first in special_ wins ties
    }
    if (best == std::string_view::npos) break;
    tokenize_segment(text.substr(at, best - at));
    out.push_back(special_[best_k]);
    at = best + special_[best_k].size();
  }
  tokenize_segment(text.substr(at));
  return out;
}

std::vector<int32_t> WordPieceTokenizer::encode(const std::string& text) const {
  std::vector<int32_t> ids;
  for (const std::string& piece : tokenize(text)) ids.push_back(token_to_id_.at(piece));
  return ids;
}

std::string WordPieceTokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string& t = token(ids[i]);
    if (i > 0 && t.starts_with(kContinuation)) {
      out.append(t, kContinuation.size());
    } else {
      if (i > 0) out.push_back(' ');
      out += t;
    }
  }
  return out;
}

}  // namespace strata::io
