#include "strata/io/text/mlm_batches.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <utility>

#include "strata/core/error.h"
#include "strata/ops/factory.h"

namespace strata::io {

namespace {

// SplitMix64 (Steele et al. 2014): a small, fully specified generator, so batches are the same
// on every platform and standard library (std::uniform_*_distribution is not).
class SplitMix {
 public:
  explicit SplitMix(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }                                // [0, 1)
  int64_t below(int64_t n) { return int64_t((unsigned __int128)next() * uint64_t(n) >> 64); }  // [0, n)

 private:
  uint64_t s_;
};

uint64_t mix(uint64_t a, uint64_t b) { return SplitMix(a ^ (b * 0xD6E8FEB86659FD93ull)).next(); }

}  // namespace

void MlmOptions::validate() const {
  STRATA_CHECK(batch > 0, ValueError, "MlmOptions: batch must be positive, got ", batch);
  STRATA_CHECK(content_len() >= 2, ValueError, "MlmOptions: seq_len ", seq_len, " leaves ", content_len(),
               " content tokens after [CLS]/[SEP] (need at least 2)");
  STRATA_CHECK(mask_prob > 0 && mask_prob <= 1, ValueError, "MlmOptions: mask_prob ", mask_prob,
               " not in (0, 1]");
  STRATA_CHECK(mask_token_prob >= 0 && random_token_prob >= 0 && mask_token_prob + random_token_prob <= 1,
               ValueError, "MlmOptions: mask_token_prob ", mask_token_prob, " + random_token_prob ",
               random_token_prob, " must lie in [0, 1]");
  STRATA_CHECK(short_seq_prob >= 0 && short_seq_prob <= 1, ValueError, "MlmOptions: short_seq_prob ",
               short_seq_prob, " not in [0, 1]");
  STRATA_CHECK(random_token_limit > 0, ValueError, "MlmOptions: random_token_limit must be positive");
  STRATA_CHECK(
      vocab_size == 0 ||
          std::max(std::max(special.pad, special.cls), std::max(special.sep, special.mask)) < vocab_size,
      ValueError, "MlmOptions: the special ids [PAD] ", special.pad, ", [CLS] ", special.cls, ", [SEP] ",
      special.sep, ", [MASK] ", special.mask, " must lie in the vocabulary of ", vocab_size);
}

MlmBatch make_mlm_batch(const std::vector<int64_t>& windows, const MlmOptions& o, uint64_t stream) {
  o.validate();
  const int64_t B = o.batch, T = o.seq_len, L = o.content_len();
  STRATA_CHECK(int64_t(windows.size()) == B * L, ShapeError, "make_mlm_batch: ", windows.size(),
               " tokens given for ", B, " windows of ", L);
  SplitMix rng(mix(o.seed, stream));
  std::vector<int64_t> ids(size_t(B * T), o.special.pad), types(size_t(B * T), 0), mask(size_t(B * T), 0),
      labels(size_t(B * T), -100);
  std::vector<int64_t> content;  // flat positions of content tokens that may be chosen, in order
  const MlmSpecialTokens& sp = o.special;
  const auto special = [&](int64_t t) {
    return t == sp.pad || t == sp.cls || t == sp.sep || t == sp.mask || t == sp.unk;
  };
  MlmBatch out;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t* w = windows.data() + b * L;
    int64_t n = L;
    if (o.short_seq_prob > 0 && rng.uniform() < o.short_seq_prob) n = 2 + rng.below(L - 1);  // [2, L]
    const int64_t a = o.two_segments ? 1 + rng.below(n - 1) : n;                             // A = w[0, a)
    int64_t* row = ids.data() + b * T;
    int64_t* ty = types.data() + b * T;
    int64_t t = 0;
    row[t++] = o.special.cls;
    for (int64_t i = 0; i < a; ++i) {
      if (!special(w[i])) content.push_back(b * T + t);
      row[t++] = w[i];
    }
    row[t++] = o.special.sep;
    if (o.two_segments) {
      for (int64_t i = a; i < n; ++i) {
        if (!special(w[i])) content.push_back(b * T + t);
        ty[t] = 1, row[t++] = w[i];
      }
      ty[t] = 1, row[t++] = o.special.sep;
    }
    for (int64_t i = 0; i < t; ++i) mask[size_t(b * T + i)] = 1;
    out.num_padded += T - t;
  }
  // 80/10/10: each content token is chosen with mask_prob; a chosen one becomes [MASK], a
  // random token, or stays, and its label is the original token.
  for (int64_t pos : content) {
    if (rng.uniform() >= o.mask_prob) continue;
    labels[size_t(pos)] = ids[size_t(pos)];
    const double u = rng.uniform();
    if (u < o.mask_token_prob)
      ids[size_t(pos)] = o.special.mask;
    else if (u < o.mask_token_prob + o.random_token_prob)
      ids[size_t(pos)] = rng.below(o.random_token_limit);
    ++out.num_masked;
  }
  if (out.num_masked == 0) {
    const int64_t pos = content.empty() ? 1 : content.front();  // row 0's first token: data, never [CLS]
    labels[size_t(pos)] = ids[size_t(pos)];
    ids[size_t(pos)] = o.special.mask;
    out.num_masked = 1;
  }
  out.input_ids = ops::from_vector(ids, {B, T});
  out.token_type_ids = ops::from_vector(types, {B, T});
  out.attention_mask = ops::from_vector(mask, {B, T});
  out.labels = ops::from_vector(labels, {B, T});
  return out;
}

MlmBatcher::MlmBatcher(std::vector<std::string> paths, MlmOptions options)
    : opt_((options.validate(), options)),
      loader_(std::move(paths),
              TokenLoaderOptions{.batch = options.batch,
                                 .seq_len = options.content_len(),
                                 .rank = options.rank,
                                 .world_size = options.world_size,
                                 .shuffle = options.shuffle,
                                 .seed = options.seed,
                                 .token_limit = options.vocab_size > 0 ? options.vocab_size
                                                                       : options.first_special_token()}) {}

MlmBatch MlmBatcher::next() {
  // The stream is the batch's place in the global order (the cursor counts all ranks' samples), so
  // rank r of W masks its batch as one process masks that batch.
  const DataCursor c = loader_.cursor();
  const int64_t sample = c.sample + int64_t(opt_.rank) * opt_.batch;
  const uint64_t stream =
      mix(mix(uint64_t(c.epoch), uint64_t(c.shard)), uint64_t(sample) * 2654435761ull + 1);
  Tensor x, y;
  loader_.next(&x, &y);
  return make_mlm_batch(x.contiguous().to_vector<int64_t>(), opt_, stream);
}

double unigram_entropy(const std::vector<int32_t>& tokens) {
  if (tokens.empty()) return 0.0;
  std::unordered_map<int32_t, int64_t> counts;
  for (int32_t t : tokens) ++counts[t];
  const double n = double(tokens.size());
  double h = 0;
  for (const auto& [tok, c] : counts) h -= double(c) / n * std::log(double(c) / n);
  return h;
}

}  // namespace strata::io
