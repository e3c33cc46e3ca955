// BERT's WordPiece tokenizer as Hugging Face's BertTokenizer and tokenizers' BertWordPieceTokenizer run it.
//
// Text goes through four stages (tokenizers' BertNormalizer, BertPreTokenizer and WordPiece model):
//   1. special tokens: [CLS], [SEP], [PAD], [MASK] and [UNK], where the vocabulary holds them, are cut
//      out of the raw text first (anywhere, even inside a word) and kept whole;
//   2. the basic tokenizer, on the rest: bytes that are not UTF-8 become U+FFFD; cleaning drops NUL,
//      U+FFFD and control characters (Cc, Cf, Co, Cs, except tab, newline and carriage return) and turns
//      whitespace into spaces; CJK ideographs get spaces around them; accents are stripped (NFD, then
//      the nonspacing marks Mn dropped) and letters lower-cased, each when asked; the text is split
//      on whitespace and every punctuation character (ASCII 33-47, 58-64, 91-96, 123-126, Unicode P*)
//      becomes a word of its own;
//   3. WordPiece (Wu et al. 2016, section 4.1; BERT's tokenization.py): each word is cut greedily
//      into the longest vocabulary entries from the left, pieces after the first spelled with the
//      "##" prefix; a word with a part no entry matches, or longer than 100 characters, becomes [UNK];
//   4. ids are vocab.txt line numbers, from 0.
// Unicode categories and NFD come from ICU.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "strata/io/text/tokenizer.h"

namespace strata::io {

// The basic tokenizer's switches (Hugging Face's do_lower_case and strip_accents).
struct BasicTokenizerOptions {
  bool lowercase = true;
  // Unset: accents are stripped when lowercase is on, as Hugging Face does by default.
  std::optional<bool> strip_accents;
  bool strips_accents() const { return strip_accents.value_or(lowercase); }
};

// Stage 2 without the split: the cleaned, CJK-spaced, accent-stripped, lower-cased text (UTF-8).
std::string bert_normalize(std::string_view text, const BasicTokenizerOptions& options);
// Stage 2 whole: the words and punctuation marks, in order.
std::vector<std::string> bert_basic_tokenize(std::string_view text, const BasicTokenizerOptions& options);

struct WordPieceOptions {
  BasicTokenizerOptions basic;
  int max_input_chars_per_word = 100;  // longer words become [UNK] (counted in code points)
};

// Options from a Hugging Face model folder's tokenizer_config.json (do_lower_case, strip_accents);
// the defaults where the file or a key is missing. IoError naming the file when it is not JSON
// or a key has the wrong type.
WordPieceOptions read_hf_wordpiece_options(const std::string& dir);

class WordPieceTokenizer final : public Tokenizer {
 public:
  // vocab.txt: one token per line, id = line number from 0. IoError naming the file and the line
  // for an empty file, an empty line, a duplicate token, or a vocabulary without [UNK].
  static std::unique_ptr<WordPieceTokenizer> from_vocab_file(const std::string& vocab_txt,
                                                             const WordPieceOptions& options = {});
  // <dir>/vocab.txt with the options of <dir>/tokenizer_config.json.
  static std::unique_ptr<WordPieceTokenizer> from_hf_dir(const std::string& dir);
  // The same checks on tokens in memory; `source` names them in errors.
  static std::unique_ptr<WordPieceTokenizer> from_tokens(std::vector<std::string> tokens,
                                                         const WordPieceOptions& options = {},
                                                         const std::string& source = "vocabulary");

  // The word pieces of `text` (special tokens included, no [CLS]/[SEP] added).
  std::vector<std::string> tokenize(std::string_view text) const;
  // Their ids. Any bytes are accepted.
  std::vector<int32_t> encode(const std::string& text) const override;
  // Tokens joined by spaces, "##" pieces glued to the one before (special tokens kept).
  // ValueError for an id outside the vocabulary.
  std::string decode(const std::vector<int32_t>& ids) const override;
  int32_t vocab_size() const override { return int32_t(id_to_token_.size()); }
  // [SEP], which ends each segment of BERT's input (-1 without one).
  int32_t eot_token() const override { return sep_id_; }

  // The id of `token`, -1 when the vocabulary does not hold it.
  int32_t token_id(std::string_view token) const;
  const std::string& token(int32_t id) const;
  int32_t unk_id() const { return unk_id_; }
  int32_t cls_id() const { return token_id("[CLS]"); }
  int32_t sep_id() const { return sep_id_; }
  int32_t pad_id() const { return token_id("[PAD]"); }
  int32_t mask_id() const { return token_id("[MASK]"); }
  const WordPieceOptions& options() const { return options_; }

 private:
  WordPieceTokenizer() = default;
  void tokenize_word(std::string_view word, std::vector<std::string>* out) const;
  std::unordered_map<std::string, int32_t> token_to_id_;
  std::vector<std::string> id_to_token_;
  std::vector<std::string> special_;  // the special tokens the vocabulary holds, longest first
  WordPieceOptions options_;
  int32_t unk_id_ = -1;
  int32_t sep_id_ = -1;
};

}  // namespace strata::io
