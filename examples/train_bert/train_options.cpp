#include "examples/train_bert/train_options.h"

#include <CLI/CLI.hpp>
#include <optional>
#include <sstream>

#include "examples/common/cache_flags.h"
#include "examples/common/trainer_config.h"
#include "train_bert.pb.h"  // generated into <build>/examples/train_bert/generated

namespace strata::examples {

std::string BertTrainOptions::describe() const {
  std::ostringstream os;
  os << "model " << preset << " (" << model.str() << "), B=" << batch_size << " T=" << seq_len << ", mask "
     << mask_prob << ", lr " << lr << " -> " << min_lr << " warmup " << warmup_steps << ", wd " << weight_decay
     << ", clip " << grad_clip << ", seed " << seed;
  return os.str();
}

namespace {

// Every setting, as an optional: set by the config file first, then by flags.
struct Overrides {
  std::optional<std::string> preset, train_data, val_data, text, out_dir;
  std::optional<int64_t> num_hidden_layers, hidden_size, num_attention_heads, intermediate_size,
      max_position_embeddings, batch_size, seq_len, max_steps, warmup_steps, lr_decay_steps, eval_every, eval_batches,
      ckpt_every, log_every;
  std::optional<double> hidden_dropout_prob, mask_prob, short_seq_prob, max_seconds, lr, min_lr, weight_decay, beta1,
      beta2, grad_clip;
  std::optional<uint64_t> seed;
  std::optional<bool> two_segments, shuffle, resume, bf16;
  CacheFlags cache;
};

void from_proto(const TrainBertConfig& c, Overrides* o) {
#define STRATA_TAKE(field) \
  if (c.has_##field()) o->field = c.field();
  STRATA_TAKE(preset) STRATA_TAKE(train_data) STRATA_TAKE(val_data) STRATA_TAKE(text) STRATA_TAKE(out_dir)
  STRATA_TAKE(num_hidden_layers) STRATA_TAKE(hidden_size) STRATA_TAKE(num_attention_heads)
  STRATA_TAKE(intermediate_size) STRATA_TAKE(max_position_embeddings) STRATA_TAKE(hidden_dropout_prob)
  STRATA_TAKE(mask_prob) STRATA_TAKE(short_seq_prob) STRATA_TAKE(two_segments) STRATA_TAKE(batch_size)
  STRATA_TAKE(seq_len) STRATA_TAKE(max_steps) STRATA_TAKE(max_seconds) STRATA_TAKE(lr) STRATA_TAKE(min_lr)
  STRATA_TAKE(warmup_steps) STRATA_TAKE(weight_decay) STRATA_TAKE(beta1) STRATA_TAKE(beta2) STRATA_TAKE(grad_clip)
  STRATA_TAKE(seed) STRATA_TAKE(shuffle) STRATA_TAKE(lr_decay_steps) STRATA_TAKE(eval_every) STRATA_TAKE(eval_batches)
  STRATA_TAKE(ckpt_every) STRATA_TAKE(resume) STRATA_TAKE(log_every) STRATA_TAKE(bf16)
#undef STRATA_TAKE
  o->cache.take(c);
}

template <class T>
void merge(std::optional<T>& into, const std::optional<T>& from) {
  if (from) into = from;
}

}  // namespace

bool parse_bert_train_options(int argc, char** argv, BertTrainOptions* out) {
  CLI::App app{"Train a BERT encoder with the masked-LM objective. With no arguments: a small byte-level BERT on "
               "the license texts every Debian machine has (/usr/share/common-licenses), for 5 minutes."};
  std::string config_path;
  Overrides f;
  app.add_option("--config", config_path, "protobuf text file (TrainBertConfig); flags override it");
  app.add_option("--preset", f.preset, "model preset: tiny, small, bert-base, bert-large");
  app.add_option("--layers", f.num_hidden_layers);
  app.add_option("--hidden", f.hidden_size);
  app.add_option("--heads", f.num_attention_heads);
  app.add_option("--intermediate", f.intermediate_size);
  app.add_option("--max-positions", f.max_position_embeddings);
  app.add_option("--dropout", f.hidden_dropout_prob, "hidden dropout (embeddings, attention and layer outputs)");
  app.add_option("--train-data", f.train_data, "glob of llm.c .bin token shards (byte-level: tokens < 256)");
  app.add_option("--val-data", f.val_data, "glob of held-out shards");
  app.add_option("--text", f.text, "a text file to train on byte by byte (every 10th 8 KiB chunk held out)");
  app.add_option("--mask-prob", f.mask_prob, "share of tokens predicted (80% [MASK], 10% random, 10% unchanged)");
  app.add_option("--short-seq-prob", f.short_seq_prob, "share of samples cut shorter and padded");
  app.add_option("--two-segments", f.two_segments, "[CLS] A [SEP] B [SEP] with segment ids (default true)");
  app.add_option("-b,--batch-size", f.batch_size);
  app.add_option("-t,--seq-len", f.seq_len, "tokens per sample, [CLS] and [SEP]s included");
  app.add_option("--max-steps", f.max_steps);
  app.add_option("--max-seconds", f.max_seconds, "stop after this much training time (0: no limit)");
  app.add_option("--lr", f.lr);
  app.add_option("--min-lr", f.min_lr);
  app.add_option("--warmup-steps", f.warmup_steps);
  app.add_option("--lr-decay-steps", f.lr_decay_steps, "schedule length (0: max steps, or estimated from step time)");
  app.add_option("--weight-decay", f.weight_decay);
  app.add_option("--beta1", f.beta1);
  app.add_option("--beta2", f.beta2);
  app.add_option("--grad-clip", f.grad_clip);
  app.add_option("--seed", f.seed);
  app.add_option("--shuffle", f.shuffle);
  app.add_option("--eval-every", f.eval_every);
  app.add_option("--eval-batches", f.eval_batches);
  app.add_option("--ckpt-every", f.ckpt_every, "checkpoint every N steps (0: only at the end)");
  app.add_option("-o,--out-dir", f.out_dir);
  app.add_flag("--resume{true}", f.resume, "continue from <out-dir>/checkpoint");
  app.add_option("--log-every", f.log_every);
  app.add_flag("--bf16{true},--autocast{true}", f.bf16, "bf16 mixed precision (bf16 GEMMs, f32 master weights)");
  f.cache.add_to(app, "layer", " (scopes: embeddings, layer.N.*, cls.*)");
  if (!parse_command_line(app, argc, argv, "train_bert")) return false;

  Overrides o;
  if (!config_path.empty()) {
    TrainBertConfig c;
    read_config_file(config_path, "train_bert", &c);
    from_proto(c, &o);
  }
  merge(o.preset, f.preset), merge(o.train_data, f.train_data), merge(o.val_data, f.val_data), merge(o.text, f.text);
  merge(o.out_dir, f.out_dir), merge(o.num_hidden_layers, f.num_hidden_layers), merge(o.hidden_size, f.hidden_size);
  merge(o.num_attention_heads, f.num_attention_heads), merge(o.intermediate_size, f.intermediate_size);
  merge(o.max_position_embeddings, f.max_position_embeddings), merge(o.hidden_dropout_prob, f.hidden_dropout_prob);
  merge(o.mask_prob, f.mask_prob), merge(o.short_seq_prob, f.short_seq_prob), merge(o.two_segments, f.two_segments);
  merge(o.batch_size, f.batch_size), merge(o.seq_len, f.seq_len), merge(o.max_steps, f.max_steps);
  merge(o.max_seconds, f.max_seconds), merge(o.lr, f.lr), merge(o.min_lr, f.min_lr);
  merge(o.warmup_steps, f.warmup_steps), merge(o.lr_decay_steps, f.lr_decay_steps);
  merge(o.weight_decay, f.weight_decay), merge(o.beta1, f.beta1), merge(o.beta2, f.beta2);
  merge(o.grad_clip, f.grad_clip), merge(o.seed, f.seed), merge(o.shuffle, f.shuffle);
  merge(o.eval_every, f.eval_every), merge(o.eval_batches, f.eval_batches), merge(o.ckpt_every, f.ckpt_every);
  merge(o.resume, f.resume), merge(o.log_every, f.log_every), merge(o.bf16, f.bf16);
  o.cache.merge(f.cache);

  BertTrainOptions& t = *out;
  t.preset = o.preset.value_or(t.preset);
  t.model = models::BertConfig::preset(t.preset);
  t.model.num_hidden_layers = o.num_hidden_layers.value_or(t.model.num_hidden_layers);
  t.model.hidden_size = o.hidden_size.value_or(t.model.hidden_size);
  t.model.num_attention_heads = o.num_attention_heads.value_or(t.model.num_attention_heads);
  t.model.intermediate_size = o.intermediate_size.value_or(t.model.intermediate_size);
  t.model.max_position_embeddings = o.max_position_embeddings.value_or(t.model.max_position_embeddings);
  t.model.hidden_dropout_prob = o.hidden_dropout_prob.value_or(t.model.hidden_dropout_prob);
  t.train_data = o.train_data.value_or(""), t.val_data = o.val_data.value_or(""), t.text = o.text.value_or("");
  t.mask_prob = o.mask_prob.value_or(t.mask_prob), t.short_seq_prob = o.short_seq_prob.value_or(t.short_seq_prob);
  t.two_segments = o.two_segments.value_or(t.two_segments);
  t.batch_size = o.batch_size.value_or(t.batch_size);
  t.seq_len = o.seq_len.value_or(std::min(t.seq_len, t.model.max_position_embeddings));
  t.max_steps = o.max_steps.value_or(t.max_steps);
  t.max_seconds = o.max_seconds.value_or(o.max_steps ? 0.0 : t.max_seconds);
  t.lr = o.lr.value_or(t.lr), t.min_lr = o.min_lr.value_or(std::min(t.min_lr, t.lr));
  t.warmup_steps = o.warmup_steps.value_or(t.warmup_steps), t.lr_decay_steps = o.lr_decay_steps.value_or(t.lr_decay_steps);
  t.weight_decay = o.weight_decay.value_or(t.weight_decay), t.beta1 = o.beta1.value_or(t.beta1);
  t.beta2 = o.beta2.value_or(t.beta2), t.grad_clip = o.grad_clip.value_or(t.grad_clip);
  t.seed = o.seed.value_or(t.seed), t.shuffle = o.shuffle.value_or(t.shuffle);
  t.eval_every = o.eval_every.value_or(t.eval_every), t.eval_batches = o.eval_batches.value_or(t.eval_batches);
  t.ckpt_every = o.ckpt_every.value_or(t.ckpt_every), t.log_every = o.log_every.value_or(t.log_every);
  t.out_dir = o.out_dir.value_or(t.out_dir), t.resume = o.resume.value_or(false), t.bf16 = o.bf16.value_or(false);
  o.cache.apply(&t.cache);

  t.model.validate();
  STRATA_CHECK(t.batch_size > 0 && t.log_every > 0, ValueError, "train_bert: batch size and log interval must be positive");
  STRATA_CHECK(t.seq_len <= t.model.max_position_embeddings, ValueError, "train_bert: seq_len ", t.seq_len,
               " exceeds the model's max_position_embeddings ", t.model.max_position_embeddings);
  STRATA_CHECK(t.val_data.empty() || !t.train_data.empty(), ValueError, "train_bert: --val-data needs --train-data");
  return true;
}

}  // namespace strata::examples
