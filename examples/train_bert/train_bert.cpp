// train_bert: trains a BERT encoder with the masked-LM objective. With no arguments it trains a
// small byte-level BERT on the built-in corpus (train_gpt's) for 5 minutes, printing step,
// loss, lr, tokens/s and the three memory figures, evaluating the held-out MLM loss, and
// comparing it with the unigram entropy of the corpus (the loss of predicting every masked
// byte from its frequency alone: a model below it has learned to use the context).
//
// Byte-level vocabulary: bytes 0..255, then [PAD] 256, [CLS] 257, [SEP] 258, [MASK] 259.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "examples/common/adamw_groups.h"
#include "examples/common/checkpointing.h"
#include "examples/common/finite_loss.h"
#include "examples/common/lr_schedule.h"
#include "examples/common/run_report.h"
#include "examples/common/text_data.h"
#include "examples/common/trainer_device.h"
#include "examples/train_bert/classify.h"
#include "examples/train_bert/train_options.h"
#include "strata/io/checkpoint.h"
#include "strata/io/mlm_batches.h"
#include "strata/io/token_shards.h"
#include "strata/io/tokenizer.h"
#include "strata/models/bert.h"
#include "strata/strata.h"

using namespace strata;
using strata::examples::BertTrainOptions;

namespace {

// The training step under way (0: none yet), for an out-of-memory error's message.
int64_t g_running_step = 0;

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

int train_bert(BertTrainOptions& o) {
  // The settings, grouped as in the config file.
  const examples::TrainBertConfig& c = o.config;
  const examples::RunConfig& run = c.run();
  const examples::TextDataConfig& data = c.data();
  const examples::TrainerDevice dev = examples::resolve_trainer_device(run, dist::launch_env());
  const Device device = dev.device;
  std::filesystem::create_directories(run.out_dir());
  if (!c.classify_data().empty()) return examples::train_classifier(o, dev);
  const std::string ckpt_dir = run.out_dir() + "/checkpoint";
  examples::refuse_to_replace_checkpoint(ckpt_dir, run.resume(), run.overwrite());
  // ---- data ----
  examples::check_text_data(data);
  std::string train_glob = data.train_data(), val_glob = data.val_data();
  if (train_glob.empty())
    std::tie(train_glob, val_glob) =
        examples::shards_from_text(examples::read_training_text(data.text()), run.out_dir());
  STRATA_CHECK(o.model.vocab_size >= 260, ValueError,
               "the byte-level vocabulary needs vocab_size >= 260, got ", o.model.vocab_size);
  io::MlmOptions mo;
  mo.batch = run.batch_size(), mo.seq_len = data.seq_len();
  mo.mask_prob = c.mask_prob(), mo.short_seq_prob = c.short_seq_prob();
  mo.two_segments = c.two_segments(), mo.seed = run.seed(), mo.shuffle = data.shuffle();
  const std::vector<std::string> train_paths = io::glob_paths(train_glob);
  io::MlmBatcher train(train_paths, mo);
  std::unique_ptr<io::MlmBatcher> val;
  if (!val_glob.empty()) {
    io::MlmOptions vo = mo;
    vo.shuffle = false, vo.seed = run.seed() + 1;
    val = std::make_unique<io::MlmBatcher>(io::glob_paths(val_glob), vo);
  }
  const double unigram = corpus_unigram_entropy(train_paths);

  // ---- model and optimizer ----
  manual_seed(run.seed());
  models::BertForMaskedLM model(o.model);
  if (o.init_weights) {
    model.load_state_dict(o.init_weights->state_dict);
    std::printf("  weights from %s\n", c.init_from().c_str());
    o.init_weights.reset();
  }
  model.to(device);  // initialized on the CPU: the same weights on every device
  const examples::AdamWGroups adamw =
      examples::adamw_groups(model.parameters(), c.schedule(), c.optim(), 1e-6);
  optim::AdamW opt(adamw.groups, adamw.defaults);
  examples::LrSchedule sched(examples::lr_schedule_options(c.schedule(), run));

  int64_t step = 0;
  if (run.resume()) {
    io::CheckpointState st = examples::restore_checkpoint(ckpt_dir, model, o.describe());
    opt.load_state_dict(st.optimizer);
    step = st.step;
    train.set_cursor(st.data);
    std::printf("resumed from %s at step %ld\n", ckpt_dir.c_str(), long(step));
  }
  if (c.export_only()) {
    export_weights(model, o.model, c.export_hf());
    return 0;
  }
  auto save = [&](int64_t at_step) {
    io::save_checkpoint(ckpt_dir, examples::checkpoint_state(o.describe(), at_step, train.cursor(), model, opt.state_dict()));
  };

  const int64_t tokens_per_step = run.batch_size() * data.seq_len();
  std::printf("train_bert: %s\n  %ld parameters, %ld tokens/step, data %s (%ld tokens), byte-level; unigram entropy "
              "%.4f nats\n",
              o.describe().c_str(), long(model.num_parameters()), long(tokens_per_step), train_glob.c_str(),
              long(train.num_tokens()), unigram);
  std::printf("  device %s\n", dev.describe().c_str());
  if (run.max_seconds() > 0)
    std::printf("  training for %.0f s (or %ld steps)\n", run.max_seconds(), long(run.max_steps()));

  Allocator& alloc = *dev.allocator;  // the step peak is the device's
  const auto t_start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count(); };
  double last_loss = NAN, step_seconds = 0;
  std::optional<double> last_val;  // the held-out loss of the latest evaluation
  int64_t steps_run = 0, masked_total = 0;
  memory::CacheSettings cache_settings = o.cache;
  cache_settings.device = device;
  examples::CacheReport tcache(cache_settings, /*print=*/true);
  while (step < run.max_steps() && (run.max_seconds() <= 0 || elapsed() < run.max_seconds())) {
    g_running_step = step + 1;
    const auto t0 = std::chrono::steady_clock::now();
    alloc.stats().reset_peaks();
    sched.apply(opt, step);
    opt.zero_grad();
    io::MlmBatch b = train.next();
    masked_total += b.num_masked;
    std::optional<autograd::SavePolicyGuard> cache_guard(tcache.tensor_cache());
    tcache.begin_step();
    std::optional<ops::AutocastGuard> amp;
    if (c.precision().bf16()) amp.emplace(DType::bf16);
    Tensor loss = step_loss(model, b, device);
    amp.reset();
    loss.backward();
    last_loss = loss.item();
    examples::check_finite_loss(last_loss, step + 1);  // before the update
    const double clip = c.optim().grad_clip();
    // The norm stays on the device until a log line prints it (no synchronization per step).
    const Tensor norm = clip > 0 ? optim::clip_grad_norm_tensor_(model.parameters(), clip) : Tensor();
    opt.step();
    cache_guard.reset();
    tcache.end_step(alloc.stats().snapshot());
    ++step;
    ++steps_run;
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (steps_run > 1) step_seconds += secs;
    if (const std::optional<double> per_step = sched.time_step(steps_run, secs)) {
      const int64_t total = step + int64_t((run.max_seconds() - elapsed()) / *per_step);
      sched.set_length(total);
      std::printf("  lr schedule: %ld steps (%.2f s/step measured)\n", long(total), *per_step);
    }
    const MemorySnapshot m = alloc.stats().snapshot();
    const bool eval_now = val && run.eval_every() > 0 && (step % run.eval_every() == 0);
    if (eval_now) last_val = evaluate(model, *val, run.eval_batches(), device);
    if (step % run.log_every() == 0 || step == 1 || eval_now) {
      const double frac =
          run.max_seconds() > 0 ? elapsed() / run.max_seconds() : double(step) / double(run.max_steps());
      std::printf(
          "%s step %5ld | mlm loss %.4f | val %s | lr %.2e | norm %.2f | %6.0f tok/s | act peak %7.1f MB | "
          "step peak %7.1f MB | rss %6.0f MB\n",
          examples::progress_bar(frac).c_str(), long(step), last_loss,
          examples::measured_or_dash(last_val).c_str(), sched.lr_at(step - 1),
          norm.defined() ? norm.item() : 0.0, double(tokens_per_step) / secs,
          double(m.peak_of(MemoryCategory::SavedActivation)) / 1e6, double(m.total_peak) / 1e6,
          examples::peak_rss_mb());
      tcache.log_step();
      std::fflush(stdout);
    }
    if (run.ckpt_every() > 0 && step % run.ckpt_every() == 0) save(step);
  }
  tcache.finish();
  if (val) {
    last_val = evaluate(model, *val, run.eval_batches(), device);
    std::printf(
        "final: step %ld, train mlm loss %.4f, held-out mlm loss %.4f nats/byte, unigram entropy %.4f: %s, "
        "%.0f s\n",
        long(step), last_loss, *last_val, unigram,
        *last_val < unigram ? "held-out loss below the unigram entropy"
                            : "held-out loss NOT below the unigram entropy",
        elapsed());
  }
  if (steps_run > 0) save(step);
  std::printf("checkpoint: %s\n", ckpt_dir.c_str());
  if (!c.export_hf().empty()) export_weights(model, o.model, c.export_hf());
  if (steps_run > 2) {
    const double n = double(steps_run - 1);
    std::printf("timing: %.1f ms/step, %.0f tok/s over steps 2-%ld, %.1f masked tokens/step\n", 1e3 * step_seconds / n,
                double(tokens_per_step) * n / step_seconds, long(step), double(masked_total) / double(steps_run));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    BertTrainOptions o;
    if (!examples::parse_bert_train_options(argc, argv, &o)) return 0;
    return train_bert(o);
  } catch (const std::exception& e) {  // strata::Error, and anything else: one line, exit 1
    const bool oom = dynamic_cast<const OutOfMemoryError*>(&e) != nullptr;
    std::fprintf(stderr, "train_bert: %s\n",
                 oom ? examples::out_of_memory_advice(e.what(), g_running_step).c_str() : e.what());
    return 1;
  }
}
