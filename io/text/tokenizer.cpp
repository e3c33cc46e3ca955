#include "strata/io/text/tokenizer.h"

#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "io/text/unicode_chars.h"
#include "strata/core/error.h"

namespace strata::io {

std::vector<int32_t> ByteTokenizer::encode(const std::string& text) const {
  std::vector<int32_t> out(text.size());
  for (size_t i = 0; i < text.size(); ++i) out[i] = static_cast<unsigned char>(text[i]);
  return out;
}

std::string ByteTokenizer::decode(const std::vector<int32_t>& tokens) const {
  std::string s;
  s.reserve(tokens.size());
  for (int32_t t : tokens) {
    STRATA_CHECK(t >= 0 && t < 256, ValueError, "ByteTokenizer: token ", t, " is not a byte");
    s.push_back(char(t));
  }
  return s;
}

namespace {

// Length of the UTF-8 sequence starting with byte c (1 for invalid lead bytes).
size_t utf8_len(unsigned char c) {
  if (c >= 0xF0 && c < 0xF8) return 4;
  if (c >= 0xE0) return c < 0xF0 ? 3 : 1;
  if (c >= 0xC0) return 2;
  return 1;
}

enum class CharClass { Letter, Digit, Space, Other };
CharClass classify(const std::string& s, size_t i) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  if (c >= 0x80) return CharClass::Letter;
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return CharClass::Letter;
  if (c >= '0' && c <= '9') return CharClass::Digit;
  if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') return CharClass::Space;
  return CharClass::Other;
}

}  // namespace

std::vector<std::string> gpt2_pretokenize(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  const size_t n = s.size();
  auto run = [&](size_t j, CharClass cls) {
    while (j < n && classify(s, j) == cls) j += utf8_len(static_cast<unsigned char>(s[j]));
    return std::min(j, n);
  };
  auto run_other = [&](size_t j) {
    while (j < n && classify(s, j) == CharClass::Other) ++j;
    return j;
  };
  while (i < n) {
    // contractions: 's 't 're 've 'm 'll 'd
    if (s[i] == '\'') {
      static const char* kContractions[] = {"'s", "'t", "'re", "'ve", "'m", "'ll", "'d"};
      bool matched = false;
      for (const char* c : kContractions) {
        size_t len = std::char_traits<char>::length(c);
        if (s.compare(i, len, c) == 0) {
          out.push_back(s.substr(i, len));
          i += len;
          matched = true;
          break;
        }
      }
      if (matched) continue;
    }
    CharClass c0 = classify(s, i);
    size_t start = i;
    size_t j = i;
    if (s[i] == ' ' && i + 1 < n && classify(s, i + 1) != CharClass::Space) {  // " ?X+"
      j = i + 1;
      c0 = classify(s, j);
    }
    if (c0 == CharClass::Letter || c0 == CharClass::Digit) {
      size_t e = run(j, c0);
      out.push_back(s.substr(start, e - start));
      i = e;
    } else if (c0 == CharClass::Other) {
      size_t e = run_other(j);
      out.push_back(s.substr(start, e - start));
      i = e;
    } else {  // whitespace: \s+(?!\S) then \s+
      size_t e = run(i, CharClass::Space);
      if (e < n && e - i > 1) e -= 1;  // leave one space to prefix the next word
      out.push_back(s.substr(i, e - i));
      i = e;
    }
  }
  return out;
}

std::unique_ptr<Gpt2Tokenizer> Gpt2Tokenizer::from_files(const std::string& vocab_json,
                                                         const std::string& merges_txt) {
  std::unique_ptr<Gpt2Tokenizer> t(new Gpt2Tokenizer());
  // GPT-2's bytes_to_unicode: printable bytes map to themselves, the rest to 256 + k.
  uint32_t extra = 0;
  for (uint32_t b = 0; b < 256; ++b) {
    bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    uint32_t cp = printable ? b : 256 + extra++;
    text::append_utf8(t->byte_to_unicode_[b], char32_t(cp));
    t->unicode_to_byte_[t->byte_to_unicode_[b]] = uint8_t(b);
  }
  std::ifstream vf(vocab_json);
  STRATA_CHECK(vf.good(), IoError, "GPT-2 tokenizer: cannot open vocab '", vocab_json, "'");
  nlohmann::json vocab;
  try {
    vf >> vocab;
  } catch (const std::exception& e) {
    throw IoError(detail::concat("GPT-2 tokenizer: '", vocab_json, "' is not valid JSON: ", e.what()));
  }
  STRATA_CHECK(vocab.is_object() && !vocab.empty(), IoError, "GPT-2 tokenizer: '", vocab_json,
               "' must be a JSON object token -> id");
  int64_t max_id = -1;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    STRATA_CHECK(it.value().is_number_integer(), IoError, "GPT-2 tokenizer: '", vocab_json,
                 "': id of token '", it.key(), "' is not an integer");
    max_id = std::max<int64_t>(max_id, it.value().get<int64_t>());
  }
  STRATA_CHECK(max_id < int64_t(std::numeric_limits<int32_t>::max()), IoError,
               "GPT-2 tokenizer: ids too large");
  t->id_to_token_.resize(size_t(max_id + 1));
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    int64_t id = it.value().get<int64_t>();
    STRATA_CHECK(id >= 0, IoError, "GPT-2 tokenizer: '", vocab_json, "': negative id for '", it.key(), "'");
    t->token_to_id_[it.key()] = int32_t(id);
    t->id_to_token_[size_t(id)] = it.key();
  }
  auto eot = t->token_to_id_.find("<|endoftext|>");
  if (eot != t->token_to_id_.end()) t->eot_ = eot->second;

  std::ifstream mf(merges_txt);
  STRATA_CHECK(mf.good(), IoError, "GPT-2 tokenizer: cannot open merges '", merges_txt, "'");
  std::string line;
  int32_t rank = 0;
  int64_t lineno = 0;
  while (std::getline(mf, line)) {
    ++lineno;
    if (line.empty() || line.rfind("#version", 0) == 0) continue;
    size_t sp = line.find(' ');
    STRATA_CHECK(sp != std::string::npos && sp > 0 && sp + 1 < line.size() &&
                     line.find(' ', sp + 1) == std::string::npos,
                 IoError, "GPT-2 tokenizer: '", merges_txt, "' line ", lineno,
                 ": expected two symbols, got '", line, "'");
    t->merge_rank_.emplace(line, rank++);
  }
  return t;
}

void Gpt2Tokenizer::encode_word(const std::string& mapped, std::vector<int32_t>* out) const {
  auto cached = cache_.find(mapped);
  if (cached != cache_.end()) {
    out->insert(out->end(), cached->second.begin(), cached->second.end());
    return;
  }
  std::vector<std::string> parts;
  for (size_t i = 0; i < mapped.size();) {
    size_t len = utf8_len(static_cast<unsigned char>(mapped[i]));
    parts.push_back(mapped.substr(i, len));
    i += len;
  }
  // Repeatedly merge the adjacent pair with the lowest rank (all its occurrences).
  while (parts.size() > 1) {
    int32_t best = std::numeric_limits<int32_t>::max();
    size_t best_i = 0;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      auto it = merge_rank_.find(parts[i] + " " + parts[i + 1]);
      if (it != merge_rank_.end() && it->second < best) {
        best = it->second;
        best_i = i;
      }
    }
    if (best == std::numeric_limits<int32_t>::max()) break;
    const std::string a = parts[best_i], b = parts[best_i + 1];
    std::vector<std::string> merged;
    for (size_t i = 0; i < parts.size(); ++i) {
      if (i + 1 < parts.size() && parts[i] == a && parts[i + 1] == b) {
        merged.push_back(a + b);
        ++i;
      } else {
        merged.push_back(parts[i]);
      }
    }
    parts.swap(merged);
  }
  std::vector<int32_t> ids;
  for (const auto& p : parts) {
    auto it = token_to_id_.find(p);
    STRATA_CHECK(it != token_to_id_.end(), ValueError, "GPT-2 tokenizer: symbol '", p,
                 "' is not in the vocabulary (vocab.json and merges.txt do not match)");
    ids.push_back(it->second);
  }
  out->insert(out->end(), ids.begin(), ids.end());
  if (cache_.size() < 100000) cache_.emplace(mapped, std::move(ids));
}

std::vector<int32_t> Gpt2Tokenizer::encode(const std::string& text) const {
  std::vector<int32_t> out;
  for (const std::string& word : gpt2_pretokenize(text)) {
    std::string mapped;
    for (unsigned char c : word) mapped += byte_to_unicode_[c];
    encode_word(mapped, &out);
  }
  return out;
}

std::string Gpt2Tokenizer::decode(const std::vector<int32_t>& tokens) const {
  std::string s;
  for (int32_t t : tokens) {
    STRATA_CHECK(t >= 0 && size_t(t) < id_to_token_.size(), ValueError, "GPT-2 tokenizer: token id ", t,
                 " out of range [0, ", id_to_token_.size(), ")");
    const std::string& tok = id_to_token_[size_t(t)];
    for (size_t i = 0; i < tok.size();) {
      size_t len = utf8_len(static_cast<unsigned char>(tok[i]));
      auto it = unicode_to_byte_.find(tok.substr(i, len));
      if (it != unicode_to_byte_.end()) {
        s.push_back(char(it->second));
      } else {
        s += tok.substr(i, len);  // special tokens such as <|endoftext|>
      }
      i += len;
    }
  }
  return s;
}

}  // namespace strata::io
