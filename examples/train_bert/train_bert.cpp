// train_bert: trains a BERT encoder with the masked-LM objective. With no arguments it trains a
// small byte-level BERT on the built-in corpus (train_gpt's) for 5 minutes, printing step,
// loss, lr, tokens/s and the three memory figures, evaluating the held-out MLM loss, and
// comparing it with the unigram entropy of the corpus (the loss of predicting every masked
// byte from its frequency alone: a model below it has learned to use the context).
//
// Byte-level vocabulary: bytes 0..255, then [PAD] 256, [CLS] 257, [SEP] 258, [MASK] 259. With --vocab
// (or an --init-from folder holding a vocab.txt) the text is tokenized by BERT's WordPiece instead, and
// the special tokens are the vocabulary's.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>

#include "examples/common/checkpointing.h"
#include "examples/common/data_parallel.h"
#include "examples/common/lr_schedule.h"
#include "examples/common/text_data.h"
#include "examples/common/trainer_loop.h"
#include "examples/common/trainer_setup.h"
#include "examples/train_bert/classify.h"
#include "examples/train_bert/train_options.h"
#include "strata/io/checkpoint/checkpoint.h"
#include "strata/io/text/mlm_batches.h"
#include "strata/io/text/token_shards.h"
#include "strata/io/text/tokenizer.h"
#include "strata/models/bert.h"
#include "strata/models/model_flops.h"
#include "strata/strata.h"

using namespace strata;
using strata::examples::BertTrainOptions;

namespace {

// Unigram entropy (nats) of every token in the shards.
double corpus_unigram_entropy(const std::vector<std::string>& paths) {
  std::vector<int32_t> all;
  for (const std::string& p : paths) {
    auto shard = io::TokenShard::open(p);
    all.insert(all.end(), shard->tokens(), shard->tokens() + shard->num_tokens());
  }
  return io::unigram_entropy(all);
}

Tensor step_loss(models::BertForMaskedLM& model, const io::MlmBatch& b, Device d) {
  return model.loss(b.input_ids.to(d), b.token_type_ids.to(d), b.attention_mask.to(d), b.labels.to(d));
}

// Held-out MLM loss: the same masked batches every time (the batcher is rewound).
double evaluate(models::BertForMaskedLM& model, io::MlmBatcher& val, int64_t batches, Device d) {
  NoGradGuard ng;
  model.eval();
  val.reset();
  double total = 0;
  for (int64_t i = 0; i < batches; ++i) total += step_loss(model, val.next(), d).item();
  model.train();
  return total / double(batches);
}

// --export-hf of `model`'s weights.
void export_weights(const models::BertForMaskedLM& model, const models::BertConfig& m,
                    const std::string& dir) {
  const io::BertShape shape{m.num_hidden_layers,       m.hidden_size,     m.intermediate_size,  m.vocab_size,
                            m.max_position_embeddings, m.type_vocab_size, m.num_attention_heads};
  io::save_hf_bert_dir(dir, shape, m.layer_norm_eps, model.state_dict());
  std::printf("exported: %s (Hugging Face BertForMaskedLM)\n", dir.c_str());
}

// The masked-LM batches a run trains on (from --train-data, or from shards written from --text),
// the held-out ones, and the training corpus's unigram entropy.
struct MlmData {
  std::string train_glob;
  std::unique_ptr<io::MlmBatcher> train, val;
  double unigram = 0;
  io::DataIdentity identity;  // of the training shards
};

MlmData make_data(const BertTrainOptions& o, dist::ProcessGroup* pg) {
  const examples::TrainBertConfig& c = o.config;
  const models::BertConfig& model = o.model;
  const io::WordPieceTokenizer* tok = o.tokenizer.get();
  const examples::RunConfig& run = c.run();
  const examples::TextDataConfig& data = c.data();
  examples::check_text_data(data);
  MlmData d;
  d.train_glob = data.train_data();
  std::string val_glob = data.val_data();
  if (d.train_glob.empty())
    std::tie(d.train_glob, val_glob) =
        examples::shards_from_text(examples::read_training_text(data.text()), run.out_dir(), tok, pg);
  STRATA_CHECK(tok || model.vocab_size >= 260, ValueError,
               "the byte-level vocabulary needs vocab_size >= 260, got ", model.vocab_size);
  io::MlmOptions mo;
  if (tok) {
    mo.special = {.pad = tok->pad_id(),
                  .cls = tok->cls_id(),
                  .sep = tok->sep_id(),
                  .mask = tok->mask_id(),
                  .unk = tok->unk_id()};
    mo.vocab_size = mo.random_token_limit = tok->vocab_size();
  }
  mo.batch = run.batch_size(), mo.seq_len = data.seq_len();
  mo.mask_prob = c.mask_prob(), mo.short_seq_prob = c.short_seq_prob();
  mo.two_segments = c.two_segments(), mo.seed = run.seed(), mo.shuffle = data.shuffle();
  mo.rank = pg ? pg->rank() : 0, mo.world_size = pg ? pg->size() : 1;
  const std::vector<std::string> train_paths = io::glob_paths(d.train_glob);
  d.train = std::make_unique<io::MlmBatcher>(train_paths, mo);
  d.identity = examples::token_shards_identity(d.train_glob, train_paths, d.train->num_tokens());
  if (!val_glob.empty() && mo.rank == 0) {
    io::MlmOptions vo = mo;
    vo.shuffle = false, vo.seed = run.seed() + 1, vo.rank = 0, vo.world_size = 1;
    d.val = std::make_unique<io::MlmBatcher>(io::glob_paths(val_glob), vo);
  }
  d.unigram = corpus_unigram_entropy(train_paths);
  return d;
}

int train_bert(BertTrainOptions& o, examples::TrainerRun& trainer_run) {
  // The settings, grouped as in the config file.
  const examples::TrainBertConfig& c = o.config;
  const examples::RunConfig& run = c.run();
  examples::refuse_zero_stage_3(c.data_parallel(), "train_bert");
  const examples::TrainerStart start = examples::start_trainer(run, c.data_parallel(), trainer_run);
  const Device device = start.dev.device;
  const bool lead = start.lead;  // logs, evaluates, writes checkpoints
  const std::string ckpt_dir = examples::checkpoint_dir(run);
  if (!c.classify_data().empty()) return examples::train_classifier(o, start, trainer_run);
  MlmData mlm = make_data(o, start.group);
  io::MlmBatcher& train = *mlm.train;
  const examples::RunRecord record{o.describe(), mlm.identity, run.allow_other_data()};

  // ---- model and optimizer ----
  manual_seed(run.seed());
  auto model_ptr = std::make_shared<models::BertForMaskedLM>(o.model);
  models::BertForMaskedLM& model = *model_ptr;
  if (o.init_weights) {
    model.load_state_dict(o.init_weights->state_dict);
    if (lead) std::printf("  weights from %s\n", c.init_from().c_str());
    o.init_weights.reset();
  }
  const examples::PlacedModel placed = examples::place_with_adamw(c, start, trainer_run, model_ptr, 1e-6);
  const examples::DataParallel& ranks = *placed.ranks;
  const examples::TrainerAdamW& opt = placed.opt;
  examples::LrSchedule sched(examples::lr_schedule_options(c.schedule(), run));

  const int64_t first_step =
      run.resume() ? examples::resume_ranks(ckpt_dir, record, model, opt, train, ranks) : 0;
  if (c.export_only()) {
    if (lead) export_weights(model, o.model, c.export_hf());
    return 0;
  }
  auto save = [&](int64_t at_step) {
    // opt.checkpoint() is collective under ZeRO: every rank calls save().
    const io::CheckpointState st = opt.checkpoint(record, at_step, train.cursor(), model, ranks.world());
    if (lead) io::save_checkpoint(ckpt_dir, st);
  };

  const int64_t tokens_per_step = run.batch_size() * c.data().seq_len() * run.grad_accum() * ranks.world();
  if (lead) {
    std::printf(
        "train_bert: %s\n  %ld parameters, %ld tokens/step, data %s (%ld tokens); unigram entropy %.4f "
        "nats\n",
        o.describe().c_str(), long(model.num_parameters()), long(tokens_per_step), mlm.train_glob.c_str(),
        long(train.num_tokens()), mlm.unigram);
    if (ranks.group()) std::printf("  %s\n", ranks.describe().c_str());
  }

  examples::TrainLoop loop(examples::loop_parts(c, start, placed, sched, o.cache, trainer_run, first_step));
  const double flops_per_token = models::transformer_training_flops_per_token(
      model.num_parameters(), o.model.num_hidden_layers, o.model.hidden_size, c.data().seq_len());
  std::optional<double> last_val;    // the held-out loss of the latest evaluation
  std::function<double()> held_out;  // none without held-out data
  if (mlm.val) held_out = [&] { return evaluate(model, *mlm.val, run.eval_batches(), device); };
  int64_t masked_total = 0;  // this rank's
  while (loop.keep_going()) {
    loop.run_step([&] {
      const io::MlmBatch b = train.next();
      masked_total += b.num_masked;
      std::optional<ops::AutocastGuard> amp;
      if (c.precision().bf16()) amp.emplace(DType::bf16);
      return step_loss(model, b, device);
    });
    loop.end_text_step(double(tokens_per_step), flops_per_token, "mlm loss", "val/mlm_loss", held_out,
                       &last_val, save);
  }
  loop.finish();
  const int64_t step = loop.step();
  if (mlm.val) {
    last_val = held_out();
    std::printf(
        "final: step %ld, train mlm loss %.4f, held-out mlm loss %.4f nats/%s, unigram entropy %.4f: %s, "
        "%.0f s\n",
        long(step), loop.last_loss(), *last_val, o.tokenizer ? "token" : "byte", mlm.unigram,
        *last_val < mlm.unigram ? "held-out loss below the unigram entropy"
                                : "held-out loss NOT below the unigram entropy",
        loop.elapsed());
  }
  if (loop.steps_run() > 0) save(step);
  if (!lead) return 0;
  std::printf("checkpoint: %s\n", ckpt_dir.c_str());
  if (!c.export_hf().empty()) export_weights(model, o.model, c.export_hf());
  loop.print_timing("tok/s", double(tokens_per_step),
                    examples::field(", %.1f masked tokens/step per rank",
                                    double(masked_total) / double(std::max<int64_t>(loop.steps_run(), 1))));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return examples::run_trainer_main("train_bert", argc, argv, &examples::parse_bert_train_options,
                                    &train_bert);
}
