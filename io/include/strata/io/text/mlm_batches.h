// Masked-language-model batches for BERT, cut from token shards: each sample is
// [CLS] A [SEP] B [SEP] (or [CLS] A [SEP] with one segment) with segment ids 0 / 1, some
// samples cut shorter and padded (attention mask 0 there), and 15% of the content tokens
// chosen for prediction by BERT's 80/10/10 rule (Devlin et al. 2019, section 3.1; Hugging
// Face's DataCollatorForLanguageModeling): [MASK] / a random token / unchanged, with the
// original token as the label there and -100 everywhere else. Everything random comes from
// the seed and the loader's cursor, so a resumed run sees the same batches bit for bit.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "strata/core/tensor.h"
#include "strata/io/text/token_shards.h"

namespace strata::io {

// Special token ids. The defaults extend a byte-level vocabulary (0..255) as train_bert does:
// [PAD] 256, [CLS] 257, [SEP] 258, [MASK] 259 (vocabulary 260).
struct MlmSpecialTokens {
  int64_t pad = 256;
  int64_t cls = 257;
  int64_t sep = 258;
  int64_t mask = 259;
  int64_t unk = -1;  // [UNK], where the vocabulary has one
};

struct MlmOptions {
  int64_t batch = 8;      // B
  int64_t seq_len = 128;  // T, [CLS] and [SEP]s included
  MlmSpecialTokens special;
  int64_t random_token_limit = 256;  // the 10% random replacements are drawn from [0, limit)
  // The vocabulary's size, when it is not the byte-level one (WordPiece's puts its special tokens
  // first): data tokens must be below it. 0: data tokens must be below the lowest special id (bytes,
  // with the specials after them).
  int64_t vocab_size = 0;
  double mask_prob = 0.15;         // share of content tokens chosen for prediction
  double mask_token_prob = 0.8;    // of the chosen: replaced by [MASK]
  double random_token_prob = 0.1;  // of the chosen: replaced by a random token (the rest stay)
  double short_seq_prob = 0.1;     // a sample keeps a random shorter prefix and is padded
  bool two_segments = true;        // split each sample into A and B at a random point
  uint64_t seed = 0;
  // Passed to the TokenLoader underneath.
  int rank = 0;
  int world_size = 1;
  bool shuffle = false;

  // Content tokens per sample: T - 3 with two segments, T - 2 with one.
  int64_t content_len() const { return seq_len - (two_segments ? 3 : 2); }
  // The lowest special id: without a vocab_size, data tokens must be below it (a [MASK] inside the
  // data would train on it), which MlmBatcher checks when it opens the shards.
  int64_t first_special_token() const {
    return std::min(std::min(special.pad, special.cls), std::min(special.sep, special.mask));
  }
  void validate() const;  // throws ValueError naming the field
};

struct MlmBatch {
  Tensor input_ids;        // i64 [B, T]
  Tensor token_type_ids;   // i64 [B, T]: 0 for [CLS] A [SEP] (and padding), 1 for B [SEP]
  Tensor attention_mask;   // i64 [B, T]: 1 for real tokens, 0 for padding
  Tensor labels;           // i64 [B, T]: the original token where chosen, -100 elsewhere
  int64_t num_masked = 0;  // positions with a label
  int64_t num_padded = 0;  // padding positions
};

// Builds a batch from `windows`, B rows of options.content_len() tokens each, drawing every
// random choice from (options.seed, stream). A special token inside the data ([SEP] written in the
// text, [UNK]) stays as it is and is never chosen for prediction, as Hugging Face's collator's
// special-tokens mask has it. At least one position per batch gets a label (if the draw chose none,
// the first content token of row 0 is chosen), so the loss is defined.
MlmBatch make_mlm_batch(const std::vector<int64_t>& windows, const MlmOptions& options, uint64_t stream);

// A TokenLoader of content windows turned into MLM batches. Each batch's random stream is
// derived from its place in the global batch order, so resuming from cursor() repeats the
// batches, and rank r of W draws what one process draws for the same batch.
class MlmBatcher {
 public:
  // Throws IoError for unreadable shards and ValueError for bad options (e.g. T too short).
  MlmBatcher(std::vector<std::string> paths, MlmOptions options);
  MlmBatch next();
  DataCursor cursor() const { return loader_.cursor(); }
  void set_cursor(const DataCursor& c) { loader_.set_cursor(c); }
  void reset() { loader_.reset(); }
  int64_t num_tokens() const { return loader_.num_tokens(); }
  const MlmOptions& options() const { return opt_; }

 private:
  MlmOptions opt_;
  TokenLoader loader_;
};

// Shannon entropy (nats) of the unigram distribution of `tokens`: the loss of a model that
// predicts every masked token from its corpus frequency alone.
double unigram_entropy(const std::vector<int32_t>& tokens);

}  // namespace strata::io
