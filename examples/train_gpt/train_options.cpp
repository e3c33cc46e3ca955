#include "examples/train_gpt/train_options.h"

#include <CLI/CLI.hpp>
#include <optional>
#include <sstream>

#include "examples/common/cache_flags.h"
#include "examples/common/trainer_config.h"
#include "train_gpt/train_gpt.pb.h"

namespace strata::examples {

std::string TrainOptions::describe() const {
  std::ostringstream os;
  os << "model " << preset << " (" << model.str() << "), B=" << batch_size << " T=" << seq_len
     << " grad_accum=" << grad_accum << ", lr " << lr << " -> " << min_lr << " warmup " << warmup_steps
     << ", wd " << weight_decay << ", clip " << grad_clip << ", seed " << seed;
  return os.str();
}

namespace {

// Every setting, as an optional: set by the config file first, then by flags.
struct Overrides {
  std::optional<std::string> preset, train_data, val_data, text, out_dir;
  std::optional<int64_t> n_layer, n_head, n_embd, block_size, vocab_size, batch_size, seq_len, grad_accum, max_steps,
      warmup_steps, lr_decay_steps, eval_every, eval_batches, ckpt_every, log_every, sample_tokens, top_k;
  std::optional<double> dropout, max_seconds, lr, min_lr, weight_decay, beta1, beta2, grad_clip, temperature,
      bucket_mb, collective_timeout;
  std::optional<uint64_t> seed;
  std::optional<bool> shuffle, resume, zero1, profile, bf16, tf32;
  CacheFlags cache;
};

void from_proto(const TrainGptConfig& c, Overrides* o) {
#define STRATA_TAKE(field) \
  if (c.has_##field()) o->field = c.field();
  STRATA_TAKE(preset) STRATA_TAKE(train_data) STRATA_TAKE(val_data) STRATA_TAKE(text) STRATA_TAKE(out_dir)
  STRATA_TAKE(n_layer) STRATA_TAKE(n_head) STRATA_TAKE(n_embd) STRATA_TAKE(block_size) STRATA_TAKE(vocab_size)
  STRATA_TAKE(batch_size) STRATA_TAKE(seq_len) STRATA_TAKE(grad_accum) STRATA_TAKE(max_steps)
  STRATA_TAKE(warmup_steps) STRATA_TAKE(lr_decay_steps) STRATA_TAKE(eval_every) STRATA_TAKE(eval_batches) STRATA_TAKE(ckpt_every)
  STRATA_TAKE(log_every) STRATA_TAKE(sample_tokens) STRATA_TAKE(top_k) STRATA_TAKE(dropout)
  STRATA_TAKE(max_seconds) STRATA_TAKE(lr) STRATA_TAKE(min_lr) STRATA_TAKE(weight_decay) STRATA_TAKE(beta1)
  STRATA_TAKE(beta2) STRATA_TAKE(grad_clip) STRATA_TAKE(temperature) STRATA_TAKE(seed) STRATA_TAKE(shuffle)
  STRATA_TAKE(resume) STRATA_TAKE(zero1) STRATA_TAKE(profile) STRATA_TAKE(bf16) STRATA_TAKE(tf32) STRATA_TAKE(bucket_mb) STRATA_TAKE(collective_timeout)
#undef STRATA_TAKE
  o->cache.take(c);
}

template <class T>
void merge(std::optional<T>& into, const std::optional<T>& from) {
  if (from) into = from;
}

}  // namespace

bool parse_train_options(int argc, char** argv, TrainOptions* out) {
  CLI::App app{"Train a GPT-2 family model. With no arguments: a small byte-level GPT on the license texts "
               "every Debian machine has (/usr/share/common-licenses), for 5 minutes."};
  std::string config_path;
  Overrides f;
  app.add_option("--config", config_path, "protobuf text file (TrainGptConfig); flags override it");
  app.add_option("--preset", f.preset, "model preset: gpt2, gpt2-medium, gpt2-large, gpt2-xl, tiny, small");
  app.add_option("--n-layer", f.n_layer);
  app.add_option("--n-head", f.n_head);
  app.add_option("--n-embd", f.n_embd);
  app.add_option("--block-size", f.block_size);
  app.add_option("--vocab-size", f.vocab_size);
  app.add_option("--dropout", f.dropout);
  app.add_option("--train-data", f.train_data, "glob of llm.c .bin token shards");
  app.add_option("--val-data", f.val_data, "glob of held-out shards");
  app.add_option("--text", f.text, "a text file to train on byte by byte (every 10th 8 KiB chunk held out)");
  app.add_option("-b,--batch-size", f.batch_size);
  app.add_option("-t,--seq-len", f.seq_len);
  app.add_option("--grad-accum", f.grad_accum, "micro-batches per optimizer step");
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
  app.add_option("--sample-tokens", f.sample_tokens);
  app.add_option("--temperature", f.temperature);
  app.add_option("--top-k", f.top_k);
  app.add_flag("--zero1{true}", f.zero1, "under mpirun: shard the AdamW state across ranks (ZeRO stage 1)");
  app.add_option("--bucket-mb", f.bucket_mb, "under mpirun: gradient all-reduce bucket size in MB (default 25)");
  app.add_option("--collective-timeout", f.collective_timeout,
                 "under mpirun: seconds a collective waits for the other ranks before failing (default 300)");
  f.cache.add_to(app);
  app.add_flag("--bf16{true},--autocast{true}", f.bf16,
               "bf16 mixed precision: linear and LM-head GEMMs in bf16 (oneDNN, AVX512-BF16), f32 master weights, "
               "activations and reductions (as torch.autocast(cpu, bfloat16))");
  app.add_flag("--tf32{true}", f.tf32,
               "CUDA: f32 GEMMs and convolutions on TF32 Tensor Cores over forward and backward (as "
               "torch.backends.cuda.matmul.allow_tf32); the CPU ignores it");
  app.add_flag("--profile{true}", f.profile,
               "time every op kind (forward ops, backward nodes, optimizer) from step 3 on; prints a table at the "
               "end and writes <out-dir>/profile_trace.json (chrome://tracing)");
  if (!parse_command_line(app, argc, argv, "train_gpt")) return false;

  Overrides o;
  if (!config_path.empty()) {
    TrainGptConfig c;
    read_config_file(config_path, "train_gpt", &c);
    from_proto(c, &o);
  }
  merge(o.preset, f.preset), merge(o.train_data, f.train_data), merge(o.val_data, f.val_data);
  merge(o.text, f.text), merge(o.out_dir, f.out_dir), merge(o.n_layer, f.n_layer), merge(o.n_head, f.n_head);
  merge(o.n_embd, f.n_embd), merge(o.block_size, f.block_size), merge(o.vocab_size, f.vocab_size);
  merge(o.batch_size, f.batch_size), merge(o.seq_len, f.seq_len), merge(o.grad_accum, f.grad_accum);
  merge(o.max_steps, f.max_steps), merge(o.warmup_steps, f.warmup_steps), merge(o.lr_decay_steps, f.lr_decay_steps), merge(o.eval_every, f.eval_every);
  merge(o.eval_batches, f.eval_batches), merge(o.ckpt_every, f.ckpt_every), merge(o.log_every, f.log_every);
  merge(o.sample_tokens, f.sample_tokens), merge(o.top_k, f.top_k), merge(o.dropout, f.dropout);
  merge(o.max_seconds, f.max_seconds), merge(o.lr, f.lr), merge(o.min_lr, f.min_lr);
  merge(o.weight_decay, f.weight_decay), merge(o.beta1, f.beta1), merge(o.beta2, f.beta2);
  merge(o.grad_clip, f.grad_clip), merge(o.temperature, f.temperature), merge(o.seed, f.seed);
  merge(o.shuffle, f.shuffle), merge(o.resume, f.resume);
  o.cache.merge(f.cache);
  merge(o.profile, f.profile), merge(o.bf16, f.bf16), merge(o.tf32, f.tf32), merge(o.zero1, f.zero1), merge(o.bucket_mb, f.bucket_mb), merge(o.collective_timeout, f.collective_timeout);

  TrainOptions& t = *out;
  t.preset = o.preset.value_or(t.preset);
  t.model = models::GPTConfig::preset(t.preset);
  t.model.n_layer = o.n_layer.value_or(t.model.n_layer);
  t.model.n_head = o.n_head.value_or(t.model.n_head);
  t.model.n_embd = o.n_embd.value_or(t.model.n_embd);
  t.model.block_size = o.block_size.value_or(t.model.block_size);
  t.model.vocab_size = o.vocab_size.value_or(t.model.vocab_size);
  t.model.dropout = o.dropout.value_or(t.model.dropout);
  t.train_data = o.train_data.value_or(""), t.val_data = o.val_data.value_or(""), t.text = o.text.value_or("");
  t.batch_size = o.batch_size.value_or(t.batch_size), t.seq_len = o.seq_len.value_or(std::min(t.seq_len, t.model.block_size));
  t.grad_accum = o.grad_accum.value_or(t.grad_accum), t.max_steps = o.max_steps.value_or(t.max_steps);
  t.max_seconds = o.max_seconds.value_or(o.max_steps ? 0.0 : t.max_seconds);
  t.lr = o.lr.value_or(t.lr), t.min_lr = o.min_lr.value_or(t.min_lr);
  t.lr_decay_steps = o.lr_decay_steps.value_or(t.lr_decay_steps);
  t.warmup_steps = o.warmup_steps.value_or(t.warmup_steps), t.weight_decay = o.weight_decay.value_or(t.weight_decay);
  t.beta1 = o.beta1.value_or(t.beta1), t.beta2 = o.beta2.value_or(t.beta2), t.grad_clip = o.grad_clip.value_or(t.grad_clip);
  t.seed = o.seed.value_or(t.seed), t.shuffle = o.shuffle.value_or(t.shuffle);
  t.eval_every = o.eval_every.value_or(t.eval_every), t.eval_batches = o.eval_batches.value_or(t.eval_batches);
  t.ckpt_every = o.ckpt_every.value_or(t.ckpt_every), t.log_every = o.log_every.value_or(t.log_every);
  t.out_dir = o.out_dir.value_or(t.out_dir), t.resume = o.resume.value_or(false);
  t.sample_tokens = o.sample_tokens.value_or(t.sample_tokens), t.top_k = o.top_k.value_or(t.top_k);
  t.temperature = o.temperature.value_or(t.temperature);
  t.zero1 = o.zero1.value_or(t.zero1), t.bucket_mb = o.bucket_mb.value_or(t.bucket_mb);
  t.collective_timeout = o.collective_timeout.value_or(t.collective_timeout);
  t.profile = o.profile.value_or(t.profile);
  t.bf16 = o.bf16.value_or(t.bf16);
  t.tf32 = o.tf32.value_or(t.tf32);
  o.cache.apply(&t.cache);

  t.model.validate();
  STRATA_CHECK(t.batch_size > 0 && t.seq_len > 0 && t.grad_accum > 0, ValueError,
               "train_gpt: batch size, sequence length and grad accumulation must be positive");
  STRATA_CHECK(t.bucket_mb > 0 && t.collective_timeout > 0, ValueError,
               "train_gpt: --bucket-mb and --collective-timeout must be positive");
  STRATA_CHECK(t.seq_len <= t.model.block_size, ValueError, "train_gpt: seq_len ", t.seq_len,
               " exceeds the model's block_size ", t.model.block_size);
  STRATA_CHECK(t.train_data.empty() == t.val_data.empty() || !t.train_data.empty(), ValueError,
               "train_gpt: --val-data needs --train-data");
  return true;
}

}  // namespace strata::examples
