// Tokenizers: ByteTokenizer (any text, vocab 256) and Gpt2Tokenizer (GPT-2 byte-level BPE
// loaded from the user's vocab.json + merges.txt).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace strata::io {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual std::vector<int32_t> encode(const std::string& text) const = 0;
  virtual std::string decode(const std::vector<int32_t>& tokens) const = 0;
  virtual int32_t vocab_size() const = 0;
  // The end-of-text token separating documents (-1 if none).
  virtual int32_t eot_token() const = 0;
};

// One token per byte: trains on any file, no vocabulary needed.
class ByteTokenizer final : public Tokenizer {
 public:
  std::vector<int32_t> encode(const std::string& text) const override;
  std::string decode(const std::vector<int32_t>& tokens) const override;
  int32_t vocab_size() const override { return 256; }
  int32_t eot_token() const override { return -1; }
};

// GPT-2's byte-level BPE (Radford et al. 2019; the encoder.py of openai/gpt-2): bytes are
// mapped to printable code points, pre-tokenized, then merged by rank.
// Pre-tokenization follows GPT-2's pattern with one simplification: every non-ASCII code
// point counts as a letter (GPT-2 uses Unicode categories), which only matters for non-ASCII
// digits and punctuation.
class Gpt2Tokenizer final : public Tokenizer {
 public:
  // Throws IoError naming the file and line on malformed input.
  static std::unique_ptr<Gpt2Tokenizer> from_files(const std::string& vocab_json,
                                                   const std::string& merges_txt);
  std::vector<int32_t> encode(const std::string& text) const override;
  std::string decode(const std::vector<int32_t>& tokens) const override;
  int32_t vocab_size() const override { return int32_t(id_to_token_.size()); }
  int32_t eot_token() const override { return eot_; }

 private:
  Gpt2Tokenizer() = default;
  void encode_word(const std::string& mapped, std::vector<int32_t>* out) const;
  std::unordered_map<std::string, int32_t> token_to_id_;
  std::vector<std::string> id_to_token_;
  std::unordered_map<std::string, int32_t> merge_rank_;  // "a b" -> rank
  std::string byte_to_unicode_[256];
  std::unordered_map<std::string, uint8_t> unicode_to_byte_;
  int32_t eot_ = -1;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

// Splits text the way GPT-2's regex does (contractions, letters, digits, other, spaces).
std::vector<std::string> gpt2_pretokenize(const std::string& text);

}  // namespace strata::io
