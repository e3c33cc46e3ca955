#include "examples/train_gpt/train_options.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <sstream>

#include "examples/common/cache_settings.h"
#include "examples/common/config_flags.h"
#include "examples/common/shared_flags.h"
#include "examples/common/trainer_settings.h"

namespace strata::examples {

namespace {

// train_gpt's defaults, in the config file's format; what is left out is 0, false or empty. The
// run's length is resolve_run_length's, and seq_len is capped by the model's block_size.
constexpr const char* kDefaults = R"pb(
  preset: "small"
  data { seq_len: 128 shuffle: true }
  run { batch_size: 16 seed: 1337 eval_every: 50 eval_batches: 8 log_every: 10 out_dir: "out/train_gpt" }
  schedule { lr: 2e-3 min_lr: 2e-4 warmup_steps: 50 }
  optim { weight_decay: 0.1 beta1: 0.9 beta2: 0.95 grad_clip: 1.0 }
  sample_tokens: 200
  temperature: 0.8
  top_k: 40
)pb";

// The model's shape from --init-from's weights; a size flag that says otherwise names the tensor and
// both shapes. --n-head may be given (the weights fit any head count dividing n_embd).
void take_shape_from(const io::GptShape& s, const TrainGptConfig& set, const std::string& path,
                     models::GPTConfig* m) {
  auto shape2 = [](int64_t a, int64_t b) { return "[" + std::to_string(a) + ", " + std::to_string(b) + "]"; };
  const std::string where = "--init-from '" + path + "': ";
  STRATA_CHECK(!set.has_n_layer() || set.n_layer() == s.n_layer, ValueError, where, "the file has ",
               s.n_layer, " blocks (transformer.h.0 to transformer.h.", s.n_layer - 1,
               "), --n-layer asks for ", set.n_layer());
  STRATA_CHECK(!set.has_n_embd() || set.n_embd() == s.n_embd, ValueError, where, "transformer.wte.weight is ",
               shape2(s.vocab_size, s.n_embd), " in the file, ", shape2(s.vocab_size, set.n_embd()),
               " with --n-embd ", set.n_embd());
  STRATA_CHECK(!set.has_vocab_size() || set.vocab_size() == s.vocab_size, ValueError, where,
               "transformer.wte.weight is ", shape2(s.vocab_size, s.n_embd), " in the file, ",
               shape2(set.vocab_size(), s.n_embd), " with --vocab-size ", set.vocab_size());
  STRATA_CHECK(!set.has_block_size() || set.block_size() == s.block_size, ValueError, where,
               "transformer.wpe.weight is ", shape2(s.block_size, s.n_embd), " in the file, ",
               shape2(set.block_size(), s.n_embd), " with --block-size ", set.block_size());
  m->n_layer = s.n_layer, m->n_head = s.n_head, m->n_embd = s.n_embd;
  m->block_size = s.block_size, m->vocab_size = s.vocab_size;
}

// A config file written before grad_accum moved into `run` and the data-parallel settings into
// `data_parallel`: its top-level values go there, unless the new place is set too.
void adopt_former_fields(TrainGptConfig* set) {
  RunConfig& run = *set->mutable_run();
  DataParallelConfig& dp = *set->mutable_data_parallel();
  if (set->has_grad_accum() && !run.has_grad_accum()) run.set_grad_accum(set->grad_accum());
  if (set->has_zero1() && !dp.has_zero1()) dp.set_zero1(set->zero1());
  if (set->has_bucket_mb() && !dp.has_bucket_mb()) dp.set_bucket_mb(set->bucket_mb());
  if (set->has_collective_timeout() && !dp.has_collective_timeout())
    dp.set_collective_timeout(set->collective_timeout());
  set->clear_grad_accum(), set->clear_zero1(), set->clear_bucket_mb(), set->clear_collective_timeout();
}

}  // namespace

std::string TrainOptions::describe() const {
  const TrainGptConfig& c = config;
  std::ostringstream os;
  os << "model " << c.preset() << " (" << model.str() << "), B=" << c.run().batch_size()
     << " T=" << c.data().seq_len() << " grad_accum=" << c.run().grad_accum() << ", "
     << describe_schedule(c.schedule(), c.optim()) << ", clip " << c.optim().grad_clip() << ", seed "
     << c.run().seed();
  return os.str();
}

bool parse_train_options(int argc, char** argv, TrainOptions* out) {
  CLI::App app{"Train a GPT-2 family model. With no arguments: a small byte-level GPT on the license texts "
               "every Debian machine has (/usr/share/common-licenses), for 5 minutes."};
  TrainGptConfig flags;
  ConfigFlags f(app, "train_gpt", &flags);
  f.option(&flags, "preset", "", "model preset: gpt2, gpt2-medium, gpt2-large, gpt2-xl, tiny, small");
  for (const char* field : {"n_layer", "n_head", "n_embd", "block_size", "vocab_size", "dropout"})
    f.option(&flags, field);
  add_text_data_flags(f, flags.mutable_data());
  add_training_flags(f, &flags);
  add_adamw_beta_flags(f, flags.mutable_optim());
  for (const char* field : {"sample_tokens", "temperature", "top_k"}) f.option(&flags, field);
  add_tensor_cache_flags(f, flags.mutable_cache());
  add_bf16_flag(f, flags.mutable_precision());
  add_tf32_flag(f, flags.mutable_precision());
  add_profile_flag(f, flags.mutable_run());
  f.option(&flags, "init_from", "",
           "start from GPT-2 weights: HF model.safetensors (or its directory) or llm.c's gpt2_124M.bin; the "
           "model's shape is the file's");
  f.option(&flags, "export_hf", "",
           "at the end, write a Hugging Face model directory (model.safetensors, config.json)");
  f.option(&flags, "export_llmc", "", "at the end, write llm.c's model file");
  f.flag(&flags, "export_only", "",
         "export (--export-hf, --export-llmc) without training: --init-from's weights or --resume's");
  f.option(&flags, "vocab", "",
           "GPT-2 BPE vocabulary (encoder.json / vocab.json): --text is tokenized with it");
  f.option(&flags, "merges", "", "GPT-2 BPE merges (vocab.bpe / merges.txt), with --vocab");
  f.flag(&flags, "sample_only", "",
         "sample --sample-tokens after --prompt without training (--init-from or --resume)");
  f.option(&flags, "prompt", "", "the text sampled from (default \"This License\")");
  TrainGptConfig set;  // what the --config file and the flags set
  const TrainGptConfig defaults = defaults_of<TrainGptConfig>(kDefaults);
  if (!f.parse(argc, argv, &set, &defaults)) return false;
  adopt_former_fields(&set);

  TrainGptConfig& c = out->config;
  c = settings_from(kDefaults, set);
  models::GPTConfig& m = out->model;
  m = models::GPTConfig::preset(c.preset());
  if (set.has_n_layer()) m.n_layer = set.n_layer();
  if (set.has_n_head()) m.n_head = set.n_head();
  if (set.has_n_embd()) m.n_embd = set.n_embd();
  if (set.has_block_size()) m.block_size = set.block_size();
  if (set.has_vocab_size()) m.vocab_size = set.vocab_size();
  if (set.has_dropout()) m.dropout = set.dropout();
  if (!c.init_from().empty()) {
    out->init_weights = std::make_shared<io::GptWeights>(
        io::load_gpt2_weights(c.init_from(), set.has_n_head() ? set.n_head() : 0));
    take_shape_from(out->init_weights->shape, set, c.init_from(), &m);
    if (set.has_n_head()) m.n_head = set.n_head();
    c.set_preset("from " + c.init_from());
  }
  STRATA_CHECK(c.vocab().empty() == c.merges().empty(), ValueError,
               "--vocab and --merges go together (GPT-2's BPE needs both)");
  STRATA_CHECK(!c.export_only() || !c.init_from().empty() || c.run().resume(), ValueError,
               "--export-only needs weights to export: --init-from FILE or --resume");
  STRATA_CHECK(!c.export_only() || !c.export_hf().empty() || !c.export_llmc().empty(), ValueError,
               "--export-only needs --export-hf DIR or --export-llmc FILE");
  STRATA_CHECK(!c.sample_only() || !c.init_from().empty() || c.run().resume(), ValueError,
               "--sample-only needs weights: --init-from FILE or --resume");
  check_export_paths(c.init_from(), c.export_hf(), c.export_llmc());
  if (!set.data().has_seq_len()) c.mutable_data()->set_seq_len(std::min(c.data().seq_len(), m.block_size));
  out->cache = cache_settings(c.cache());

  m.validate();
  const TextDataConfig& data = c.data();
  STRATA_CHECK(c.run().batch_size() > 0 && data.seq_len() > 0, ValueError,
               "batch size and sequence length must be positive");
  STRATA_CHECK(data.seq_len() <= m.block_size, ValueError, "seq_len ", data.seq_len(),
               " exceeds the model's block_size ", m.block_size);
  STRATA_CHECK(data.val_data().empty() || !data.train_data().empty(), ValueError,
               "--val-data needs --train-data");
  STRATA_CHECK(c.sample_tokens() >= 0, ValueError, "--sample-tokens ", c.sample_tokens(), " is negative");
  STRATA_CHECK(std::isfinite(c.temperature()) && c.temperature() >= 0, ValueError, "--temperature ",
               c.temperature(), " must be a number of at least 0 (0: greedy)");
  STRATA_CHECK(c.top_k() >= 0, ValueError, "--top-k ", c.top_k(),
               " is negative (0 samples from every token)");
  return true;
}

}  // namespace strata::examples
