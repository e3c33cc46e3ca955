#include "examples/train_bert/classify.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "examples/common/checkpointing.h"
#include "examples/common/lr_schedule.h"
#include "examples/common/trainer_loop.h"
#include "strata/io/keyed_rng.h"
#include "strata/io/text/mlm_batches.h"
#include "strata/io/weights/safetensors.h"
#include "strata/models/bert.h"
#include "strata/strata.h"

namespace strata::examples {

namespace {

struct Example {
  int64_t label;
  std::string text;
  std::vector<int32_t> ids;  // the text's tokens: its bytes, or WordPiece's ids
};

// "<label>\t<text>" per line; a malformed line is an IoError naming the file and line.
std::vector<Example> read_examples(const std::string& path) {
  STRATA_CHECK(std::filesystem::is_regular_file(path), IoError, "--classify-data '", path, "' ",
               std::filesystem::is_directory(path) ? "is a directory" : "does not exist",
               ", not a text file");
  std::ifstream in(path, std::ios::binary);
  std::vector<Example> out;
  std::string line;
  for (int64_t n = 1; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const size_t tab = line.find('\t');
    int64_t label = -1;
    size_t used = 0;
    try {
      label = std::stoll(line.substr(0, tab), &used);
    } catch (const std::exception&) {
    }
    STRATA_CHECK(tab != std::string::npos && used == tab && label >= 0, IoError, "--classify-data '", path,
                 "' line ", n, ": expected '<label>\\t<text>' with a label 0, 1, ...");
    out.push_back({label, line.substr(tab + 1), {}});
  }
  STRATA_CHECK(out.size() >= 2, IoError, "--classify-data '", path, "' holds ", out.size(),
               " examples; at least 2 are needed (every 10th is held out)");
  return out;
}

struct Batch {
  Tensor input_ids, token_type_ids, attention_mask, labels;
};

// [CLS] tokens [SEP] [PAD]..., T tokens per row.
Batch make_batch(const std::vector<const Example*>& rows, int64_t T, const io::MlmSpecialTokens& sp,
                 Device d) {
  const int64_t B = int64_t(rows.size());
  std::vector<int64_t> ids(size_t(B * T), sp.pad), mask(size_t(B * T), 0), labels;
  for (int64_t b = 0; b < B; ++b) {
    const std::vector<int32_t>& tokens = rows[size_t(b)]->ids;
    const int64_t n = std::min<int64_t>(int64_t(tokens.size()), T - 2);
    int64_t* row = ids.data() + b * T;
    row[0] = sp.cls;
    std::copy_n(tokens.begin(), n, row + 1);
    row[n + 1] = sp.sep;
    std::fill(mask.begin() + b * T, mask.begin() + b * T + n + 2, 1);
    labels.push_back(rows[size_t(b)]->label);
  }
  return {ops::from_vector(ids, {B, T}).to(d), ops::zeros({B, T}, TensorOptions(DType::i64)).to(d),
          ops::from_vector(mask, {B, T}).to(d), ops::from_vector(labels, {B}).to(d)};
}

int64_t correct(const Tensor& logits, const Tensor& labels) {
  const std::vector<int64_t> pred = ops::argmax(logits, 1).to_vector<int64_t>(),
                             y = labels.to_vector<int64_t>();
  int64_t c = 0;
  for (size_t i = 0; i < y.size(); ++i) c += pred[i] == y[i];
  return c;
}

// The pooler of a pretrained file (BertForPreTraining files hold one; BertForMaskedLM files do not).
void load_pooler(models::BertForSequenceClassification& model, const std::string& init_from) {
  std::filesystem::path file = init_from;
  if (std::filesystem::is_directory(file)) file /= "model.safetensors";
  const io::Safetensors st = io::read_safetensors(file.string());
  nn::StateDict pooler;
  for (const auto& [key, t] : st.tensors) {
    std::string name = key.rfind("bert.", 0) == 0 ? key : "bert." + key;
    if (name.rfind("bert.pooler.", 0) == 0) pooler.insert(name, t.to(DType::f32));
  }
  if (pooler.size() == 2) model.load_state_dict(pooler, /*strict=*/false);
}

}  // namespace

// Each example's ids: WordPiece's (with `tok`) or its bytes.
void encode_examples(std::vector<Example>* examples, const io::WordPieceTokenizer* tok) {
  for (Example& e : *examples) {
    if (tok) e.ids = tok->encode(e.text);
    for (size_t i = 0; !tok && i < e.text.size(); ++i) e.ids.push_back(static_cast<unsigned char>(e.text[i]));
  }
}

int train_classifier(BertTrainOptions& o, const TrainerStart& start, TrainerRun& trainer_run) {
  const TrainBertConfig& c = o.config;
  const RunConfig& run = c.run();
  const Device device = start.dev.device;
  STRATA_CHECK(!run.resume(), ValueError,
               "--classify-data runs do not resume (train again, or --init-from the weights)");
  std::vector<Example> all = read_examples(c.classify_data());
  std::vector<Example> train, held;
  for (size_t i = 0; i < all.size(); ++i) (i % 10 == 9 ? held : train).push_back(std::move(all[i]));
  if (held.empty()) held.push_back(train.back()), train.pop_back();
  int64_t max_label = 0;
  for (const auto* set : {&train, &held})
    for (const Example& e : *set) max_label = std::max(max_label, e.label);
  models::BertConfig m = o.model;
  m.num_labels = c.num_labels() > 0 ? c.num_labels() : max_label + 1;
  STRATA_CHECK(max_label < m.num_labels, ValueError, "--classify-data '", c.classify_data(), "' has label ",
               max_label, " but --num-labels is ", m.num_labels);
  m.validate();
  const int64_t B = run.batch_size(), T = c.data().seq_len();
  const io::WordPieceTokenizer* tok = o.tokenizer.get();
  io::MlmSpecialTokens sp;
  if (tok) sp = {.pad = tok->pad_id(), .cls = tok->cls_id(), .sep = tok->sep_id(), .mask = tok->mask_id()};
  STRATA_CHECK(tok || m.vocab_size > sp.sep, ValueError,
               "the byte-level vocabulary needs vocab_size >= 260, got ", m.vocab_size);
  for (auto* set : {&train, &held}) encode_examples(set, tok);

  manual_seed(run.seed());
  auto model_ptr = std::make_shared<models::BertForSequenceClassification>(m);
  models::BertForSequenceClassification& model = *model_ptr;
  if (o.init_weights) {  // the encoder's weights; the head (and a pooler the file lacks) start fresh
    nn::StateDict encoder;
    for (const auto& [name, t] : o.init_weights->state_dict)
      if (name.rfind("bert.", 0) == 0) encoder.insert(name, t);
    model.load_state_dict(encoder, /*strict=*/false);
    load_pooler(model, c.init_from());
    o.init_weights.reset();
  }
  const PlacedModel placed = place_with_adamw(c, start, trainer_run, model_ptr, 1e-6);
  const DataParallel& ranks = *placed.ranks;
  const TrainerAdamW& opt = placed.opt;
  LrSchedule sched(lr_schedule_options(c.schedule(), run));
  if (ranks.lead()) {
    std::printf(
        "train_bert: classification, %s\n  %zu training and %zu held-out examples of %ld classes from %s%s\n",
        o.describe().c_str(), train.size(), held.size(), long(m.num_labels), c.classify_data().c_str(),
        c.init_from().empty() ? "" : (", encoder from " + c.init_from()).c_str());
    if (ranks.group()) std::printf("  %s\n", ranks.describe().c_str());
  }

  // Each epoch's order of the training examples is drawn from (seed, epoch).
  std::vector<size_t> order;
  uint64_t epoch = 0;
  const auto shuffle_epoch = [&] {
    order.resize(train.size());
    std::iota(order.begin(), order.end(), 0);
    io::shuffle_keyed(&order, run.seed(), epoch);
  };
  shuffle_epoch();
  size_t at = 0;
  // This rank's next batch: ranks take the global order's batches in turn (rank r the r-th of
  // every W), as the loaders do.
  const auto next_rows = [&] {
    std::vector<const Example*> rows;
    for (int r = 0; r < ranks.world(); ++r)
      for (int64_t b = 0; b < B; ++b) {
        if (at == order.size()) {
          ++epoch;
          shuffle_epoch();
          at = 0;
        }
        const Example* e = &train[order[at++]];
        if (r == ranks.rank()) rows.push_back(e);
      }
    return rows;
  };
  TrainLoop loop(loop_parts(c, start, placed, sched, o.cache, trainer_run));
  int64_t seen = 0, right = 0;  // this rank's
  while (loop.keep_going()) {
    loop.run_step([&] {
      const Batch batch = make_batch(next_rows(), T, sp, device);
      const Tensor logits = model.forward(batch.input_ids, batch.token_type_ids, batch.attention_mask);
      seen += B, right += correct(logits, batch.labels);
      return ops::cross_entropy(logits, batch.labels);
    });
    if (loop.log_due()) {
      loop.print_step_line(
          {field("loss %.4f", loop.last_loss()),
           field("acc %5.1f%% (since the last line)", 100.0 * double(right) / double(seen))});
      seen = right = 0;
    }
  }
  loop.finish();
  const io::CheckpointState st = opt.checkpoint(
      {o.describe(), io::files_identity("classification data " + c.classify_data(), {c.classify_data()})},
      loop.step(), {}, model, ranks.world());
  if (!ranks.lead()) return 0;  // every rank takes part in a ZeRO checkpoint; rank 0 alone goes on
  NoGradGuard ng;
  model.eval();
  int64_t held_right = 0;
  double held_loss = 0;
  for (size_t i = 0; i < held.size(); i += size_t(B)) {
    std::vector<const Example*> rows;
    for (size_t j = i; j < std::min(held.size(), i + size_t(B)); ++j) rows.push_back(&held[j]);
    const Batch batch = make_batch(rows, T, sp, device);
    Tensor logits = model.forward(batch.input_ids, batch.token_type_ids, batch.attention_mask);
    held_right += correct(logits, batch.labels);
    held_loss += ops::cross_entropy(logits, batch.labels).item() * double(rows.size());
  }
  std::printf(
      "final: step %ld, train loss %.4f, held-out accuracy %.2f%% (%zu examples, loss %.4f), %.0f s\n",
      long(loop.step()), loop.last_loss(), 100.0 * double(held_right) / double(held.size()), held.size(),
      held_loss / double(held.size()), loop.elapsed());
  const std::string ckpt_dir = run.out_dir() + "/checkpoint";
  io::save_checkpoint(ckpt_dir, st);
  std::printf("checkpoint: %s\n", ckpt_dir.c_str());
  return 0;
}

}  // namespace strata::examples
