#include "strata/io/text/mlm_batches.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <tuple>

#include "strata/strata.h"

using namespace strata;
using namespace strata::io;

namespace {

// Windows of content tokens 0..255 (never a special id), B rows of L.
std::vector<int64_t> windows(int64_t B, int64_t L, int64_t salt = 0) {
  std::vector<int64_t> w(size_t(B * L));
  for (size_t i = 0; i < w.size(); ++i) w[i] = int64_t((i * 37 + size_t(salt) * 11 + 5) % 256);
  return w;
}

std::vector<int64_t> vec(const Tensor& t) { return t.contiguous().to_vector<int64_t>(); }

std::string temp_dir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() / ("strata_mlm_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return d.string();
}

// The same inputs, segments and labels.
void expect_same_batch(const MlmBatch& a, const MlmBatch& b) {
  EXPECT_EQ(vec(a.input_ids), vec(b.input_ids));
  EXPECT_EQ(vec(a.token_type_ids), vec(b.token_type_ids));
  EXPECT_EQ(vec(a.labels), vec(b.labels));
}

// B=4, T=32, seed 3, shuffled.
MlmOptions shuffled_batches_of_4() {
  MlmOptions o;
  o.batch = 4, o.seq_len = 32, o.seed = 3, o.shuffle = true;
  return o;
}

// A shard of 20000 byte tokens in a fixed pattern.
void write_byte_shard(const std::string& path) {
  std::vector<int32_t> toks(20000);
  for (size_t i = 0; i < toks.size(); ++i) toks[i] = int32_t((i * 131 + i / 7) % 256);
  write_token_shard(path, toks);
}

}  // namespace

// On ~1M content tokens: 15% chosen (within 0.3 points), of which 80% [MASK], 10% random,
// 10% unchanged (within 1 point each); labels hold the original tokens exactly there.
TEST(MlmBatches, MaskingRateAndEightyTenTenProportions) {
  MlmOptions o;
  o.batch = 64, o.seq_len = 128, o.short_seq_prob = 0.0;
  const int64_t L = o.content_len();
  int64_t content = 0, chosen = 0, to_mask = 0, to_random = 0, unchanged = 0;
  for (uint64_t s = 0; s < 128; ++s) {
    std::vector<int64_t> w = windows(o.batch, L, int64_t(s));
    MlmBatch b = make_mlm_batch(w, o, s);
    std::vector<int64_t> ids = vec(b.input_ids), labels = vec(b.labels), types = vec(b.token_type_ids);
    int64_t masked_here = 0;
    for (int64_t r = 0; r < o.batch; ++r) {
      // Rebuild the original row: [CLS] content with one [SEP] inside, [SEP] at the end.
      std::vector<int64_t> orig;
      int64_t seps = 0;
      for (int64_t t = 0; t < o.seq_len; ++t) {
        const size_t i = size_t(r * o.seq_len + t);
        const int64_t original = labels[i] != -100 ? labels[i] : ids[i];
        if (t == 0) {
          EXPECT_EQ(ids[i], o.special.cls);
          EXPECT_EQ(labels[i], -100) << "[CLS] is never chosen";
          continue;
        }
        if (ids[i] == o.special.sep && labels[i] == -100) {
          ++seps;
          continue;
        }
        orig.push_back(original);
        ++content;
        EXPECT_EQ(types[i], seps >= 1 ? 1 : 0) << "segment B starts after the first [SEP]";
        if (labels[i] == -100) continue;
        ++chosen, ++masked_here;
        if (ids[i] == o.special.mask) ++to_mask;
        else if (ids[i] == labels[i]) ++unchanged;
        else ++to_random;
      }
      EXPECT_EQ(seps, 2);
      EXPECT_EQ(orig, std::vector<int64_t>(w.begin() + r * L, w.begin() + (r + 1) * L)) << "labels align with the text";
    }
    EXPECT_EQ(masked_here, b.num_masked);
    EXPECT_EQ(b.num_padded, 0);
  }
  const double rate = double(chosen) / double(content);
  EXPECT_NEAR(rate, 0.15, 0.003);
  EXPECT_NEAR(double(to_mask) / double(chosen), 0.8, 0.01);
  // A random replacement equals the original 1/256 of the time and is counted as unchanged.
  EXPECT_NEAR(double(to_random) / double(chosen), 0.1 * 255.0 / 256.0, 0.01);
  EXPECT_NEAR(double(unchanged) / double(chosen), 0.1 + 0.1 / 256.0, 0.01);
}

TEST(MlmBatches, SameSeedAndStreamSameBatchOtherwiseDifferent) {
  MlmOptions o;
  o.batch = 4, o.seq_len = 64, o.seed = 7;
  std::vector<int64_t> w = windows(4, o.content_len());
  MlmBatch a = make_mlm_batch(w, o, 3), b = make_mlm_batch(w, o, 3), c = make_mlm_batch(w, o, 4);
  EXPECT_EQ(vec(a.input_ids), vec(b.input_ids));
  EXPECT_EQ(vec(a.labels), vec(b.labels));
  EXPECT_EQ(vec(a.attention_mask), vec(b.attention_mask));
  EXPECT_NE(vec(a.labels), vec(c.labels));
  o.seed = 8;
  EXPECT_NE(vec(a.labels), vec(make_mlm_batch(w, o, 3).labels));
}

// Short samples: padding after the last [SEP], attention mask 0, type 0, no label there.
TEST(MlmBatches, ShortSequencesArePaddedAndMasked) {
  MlmOptions o;
  o.batch = 32, o.seq_len = 40, o.short_seq_prob = 0.5, o.two_segments = false;
  MlmBatch b = make_mlm_batch(windows(32, o.content_len()), o, 1);
  std::vector<int64_t> ids = vec(b.input_ids), am = vec(b.attention_mask), labels = vec(b.labels),
                       types = vec(b.token_type_ids);
  int64_t padded = 0, short_rows = 0;
  for (int64_t r = 0; r < o.batch; ++r) {
    int64_t len = 0;
    while (len < o.seq_len && am[size_t(r * o.seq_len + len)] == 1) ++len;
    EXPECT_GE(len, 4) << "[CLS] + at least 2 tokens + [SEP]";
    EXPECT_EQ(ids[size_t(r * o.seq_len + len - 1)], o.special.sep);
    for (int64_t t = len; t < o.seq_len; ++t) {
      const size_t i = size_t(r * o.seq_len + t);
      EXPECT_EQ(am[i], 0);
      EXPECT_EQ(ids[i], o.special.pad);
      EXPECT_EQ(labels[i], -100);
      EXPECT_EQ(types[i], 0);
      ++padded;
    }
    short_rows += len < o.seq_len;
  }
  EXPECT_EQ(padded, b.num_padded);
  EXPECT_GT(short_rows, 5);
  EXPECT_LT(short_rows, 28);
}

TEST(MlmBatches, AtLeastOnePositionIsAlwaysLabelled) {
  MlmOptions o;
  o.batch = 1, o.seq_len = 5, o.mask_prob = 1e-9;
  MlmBatch b = make_mlm_batch(windows(1, o.content_len()), o, 0);
  EXPECT_EQ(b.num_masked, 1);
  EXPECT_EQ(vec(b.labels)[1], 5);
  EXPECT_EQ(vec(b.input_ids)[1], o.special.mask);
}

TEST(MlmBatches, BadOptionsAreRejected) {
  MlmOptions o;
  o.seq_len = 4;  // one content token with two segments
  EXPECT_THROW(o.validate(), ValueError);
  o = MlmOptions();
  o.mask_token_prob = 0.95;
  EXPECT_THROW(o.validate(), ValueError);
  o = MlmOptions();
  EXPECT_THROW(make_mlm_batch(std::vector<int64_t>(10), o, 0), ShapeError);
}

// From shards: the batcher resumes from its cursor with the same batches bit for bit.
TEST(MlmBatches, BatcherIsDeterministicAndResumesFromItsCursor) {
  const std::string dir = temp_dir("resume");
  write_byte_shard(dir + "/train_000000.bin");
  MlmOptions o = shuffled_batches_of_4();
  MlmBatcher a({dir + "/train_000000.bin"}, o);
  a.next();
  a.next();
  const DataCursor at = a.cursor();
  MlmBatch third = a.next(), fourth = a.next();
  MlmBatcher b({dir + "/train_000000.bin"}, o);
  b.set_cursor(at);
  EXPECT_EQ(vec(b.next().input_ids), vec(third.input_ids));
  expect_same_batch(b.next(), fourth);
  EXPECT_NE(vec(third.labels), vec(fourth.labels));
  std::filesystem::remove_all(dir);
}

// A special token inside the data (a [MASK], id 259, in a byte-level shard) is refused when the
// shards are opened, naming the file and the offset.
TEST(MlmBatches, SpecialTokensInsideTheDataAreRefusedWhenTheShardOpens) {
  const std::string dir = temp_dir("special");
  std::vector<int32_t> toks(4000, 65);
  toks[1234] = 259;
  write_token_shard(dir + "/train_000000.bin", toks);
  MlmOptions o;
  o.batch = 4, o.seq_len = 32;
  try {
    MlmBatcher b({dir + "/train_000000.bin"}, o);
    ADD_FAILURE() << "a [MASK] inside the data was accepted";
  } catch (const IoError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("train_000000.bin': token 259 at position 1234 (byte offset 3492)"), std::string::npos)
        << m;
    EXPECT_NE(m.find("not below 256"), std::string::npos) << m;
  }
  std::filesystem::remove_all(dir);
}

// Rank r of W masks its batch as one process masks the same batch of the global order: rank 1 of 2's
// first batch is one process's second, masks and labels included (so 2 ranks train as one process
// with 2 micro-batches).
TEST(MlmBatches, RankOneOfTwoDrawsWhatOneProcessDrawsForTheSameBatch) {
  const std::string dir = temp_dir("ranks");
  write_byte_shard(dir + "/train_000000.bin");
  MlmOptions o = shuffled_batches_of_4();
  MlmBatcher one({dir + "/train_000000.bin"}, o);
  const MlmBatch first = one.next(), second = one.next();
  o.rank = 1, o.world_size = 2;
  const MlmBatch rank1 = MlmBatcher({dir + "/train_000000.bin"}, o).next();
  expect_same_batch(rank1, second);
  EXPECT_NE(vec(rank1.labels), vec(first.labels));
  std::filesystem::remove_all(dir);
}

// A WordPiece vocabulary puts its special tokens first ([PAD] 0, [UNK] 1, [CLS] 2, [SEP] 3, [MASK] 4
// here): with vocab_size, data above them is taken; [UNK] and a [SEP] written in the text stay in the
// input and are never chosen for prediction (Hugging Face's special-tokens mask); random replacements
// come from the whole vocabulary; a token past it is refused naming the file and the offset.
TEST(MlmBatches, AWordPieceVocabularyWithSpecialTokensFirst) {
  const std::string dir = temp_dir("wordpiece");
  std::vector<int32_t> toks(4000);
  for (size_t i = 0; i < toks.size(); ++i) toks[i] = i % 5 == 0 ? 1 : i % 7 == 0 ? 3 : int32_t(5 + i % 45);
  write_token_shard(dir + "/train_000000.bin", toks);
  MlmOptions o;
  o.batch = 64, o.seq_len = 32, o.vocab_size = 50, o.random_token_limit = 50, o.mask_prob = 0.5;
  o.special = {.pad = 0, .cls = 2, .sep = 3, .mask = 4, .unk = 1};
  MlmBatcher b({dir + "/train_000000.bin"}, o);
  int64_t unk_in_input = 0, above_specials_labelled = 0;
  for (int i = 0; i < 4; ++i) {
    const MlmBatch batch = b.next();
    const std::vector<int64_t> ids = vec(batch.input_ids), labels = vec(batch.labels);
    EXPECT_EQ(ids[0], 2);
    for (size_t p = 0; p < ids.size(); ++p) {
      EXPECT_LT(ids[p], 50);
      unk_in_input += ids[p] == 1;
      EXPECT_TRUE(labels[p] == -100 || labels[p] >= 5)
          << "a special token was chosen for prediction at " << p;
      above_specials_labelled += labels[p] >= 5;
    }
  }
  EXPECT_GT(unk_in_input, 100);
  EXPECT_GT(above_specials_labelled, 1000);
  std::vector<int32_t> bad = toks;
  bad[99] = 50;
  write_token_shard(dir + "/bad_000000.bin", bad);
  try {
    MlmBatcher refused({dir + "/bad_000000.bin"}, o);
    ADD_FAILURE() << "token 50 of a 50-token vocabulary was accepted";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "bad_000000.bin': token 50 at position 99 (byte offset 1222) is not below 50"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove_all(dir);
}

TEST(MlmBatches, UnigramEntropy) {
  EXPECT_NEAR(unigram_entropy({1, 1, 2, 2}), std::log(2.0), 1e-12);
  EXPECT_EQ(unigram_entropy({5, 5, 5}), 0.0);
  std::vector<int32_t> u;
  for (int i = 0; i < 256; ++i) u.push_back(i);
  EXPECT_NEAR(unigram_entropy(u), std::log(256.0), 1e-12);
}
