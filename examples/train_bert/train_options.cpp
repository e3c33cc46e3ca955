#include "examples/train_bert/train_options.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "examples/common/cache_settings.h"
#include "examples/common/config_flags.h"
#include "examples/common/shared_flags.h"
#include "examples/common/trainer_settings.h"

namespace strata::examples {

namespace {

// train_bert's defaults, in the config file's format; what is left out is 0, false or empty. The
// run's length is resolve_run_length's, seq_len is capped by the model's max_position_embeddings
// and min_lr by lr.
constexpr const char* kDefaults = R"pb(
  preset: "small"
  data { seq_len: 64 shuffle: true }
  run { batch_size: 32 seed: 1337 eval_every: 50 eval_batches: 8 log_every: 10 out_dir: "out/train_bert" }
  schedule { lr: 2e-3 min_lr: 2e-4 warmup_steps: 50 }
  optim { weight_decay: 0.01 beta1: 0.9 beta2: 0.999 grad_clip: 1.0 }
  mask_prob: 0.15
  short_seq_prob: 0.1
  two_segments: true
)pb";

// The model's shape from --init-from's weights; a size flag that says otherwise names the tensor and
// both shapes. The head count: --heads, else the config.json beside the weights, else C / 64 with a
// warning (refused where 64 does not divide C).
void take_shape_from(const io::BertShape& s, const TrainBertConfig& set, const std::string& path,
                     models::BertConfig* m) {
  auto shape2 = [](int64_t a, int64_t b) { return "[" + std::to_string(a) + ", " + std::to_string(b) + "]"; };
  const std::string where = "--init-from '" + path + "': ";
  STRATA_CHECK(!set.has_num_hidden_layers() || set.num_hidden_layers() == s.num_hidden_layers, ValueError,
               where, "the file has ", s.num_hidden_layers,
               " layers (bert.encoder.layer.0 to bert.encoder.layer.", s.num_hidden_layers - 1,
               "), --layers asks for ", set.num_hidden_layers());
  STRATA_CHECK(!set.has_hidden_size() || set.hidden_size() == s.hidden_size, ValueError, where,
               "bert.embeddings.word_embeddings.weight is ", shape2(s.vocab_size, s.hidden_size),
               " in the file, ", shape2(s.vocab_size, set.hidden_size()), " with --hidden ",
               set.hidden_size());
  STRATA_CHECK(!set.has_intermediate_size() || set.intermediate_size() == s.intermediate_size, ValueError,
               where, "bert.encoder.layer.0.intermediate.dense.weight is ",
               shape2(s.intermediate_size, s.hidden_size), " in the file, ",
               shape2(set.intermediate_size(), s.hidden_size), " with --intermediate ",
               set.intermediate_size());
  STRATA_CHECK(
      !set.has_max_position_embeddings() || set.max_position_embeddings() == s.max_position_embeddings,
      ValueError, where, "bert.embeddings.position_embeddings.weight is ",
      shape2(s.max_position_embeddings, s.hidden_size), " in the file, ",
      shape2(set.max_position_embeddings(), s.hidden_size), " with --max-positions ",
      set.max_position_embeddings());
  m->num_hidden_layers = s.num_hidden_layers, m->hidden_size = s.hidden_size;
  m->intermediate_size = s.intermediate_size, m->vocab_size = s.vocab_size;
  m->max_position_embeddings = s.max_position_embeddings, m->type_vocab_size = s.type_vocab_size;
  if (set.has_num_attention_heads()) {
    m->num_attention_heads = set.num_attention_heads();
  } else if (s.num_attention_heads > 0) {
    m->num_attention_heads = s.num_attention_heads;
  } else {
    // BERT's head size of 64 is the one guess that may be right, and only where it divides C.
    STRATA_CHECK(s.hidden_size % 64 == 0, ValueError, where,
                 "the head count is not in --heads or a config.json "
                 "beside the weights, and the hidden size ",
                 s.hidden_size,
                 " is not a multiple of BERT's head size 64, so it cannot be guessed: pass --heads");
    m->num_attention_heads = s.hidden_size / 64;
    std::fprintf(stderr,
                 "warning: %sthe head count is not in --heads or a config.json beside the weights; taking "
                 "hidden / 64 = %ld (BERT's head size)\n",
                 where.c_str(), long(m->num_attention_heads));
  }
}

// The WordPiece tokenizer of --vocab (a vocab.txt, or a folder holding one and its
// tokenizer_config.json), else of the --init-from folder when it holds a vocab.txt; null: bytes.
std::shared_ptr<io::WordPieceTokenizer> load_tokenizer(const TrainBertConfig& c, const TrainBertConfig& set) {
  namespace fs = std::filesystem;
  std::string from = c.vocab();
  if (from.empty() && fs::is_directory(c.init_from()) &&
      fs::is_regular_file(fs::path(c.init_from()) / "vocab.txt"))
    from = c.init_from();
  if (from.empty()) return nullptr;
  io::WordPieceOptions options;
  std::string file = from;
  if (fs::is_directory(from))
    options = io::read_hf_wordpiece_options(from), file = (fs::path(from) / "vocab.txt").string();
  if (set.has_lowercase()) options.basic.lowercase = set.lowercase();
  std::shared_ptr<io::WordPieceTokenizer> tok = io::WordPieceTokenizer::from_vocab_file(file, options);
  for (const char* special : {"[PAD]", "[CLS]", "[SEP]", "[MASK]"})
    STRATA_CHECK(tok->token_id(special) >= 0, ValueError, "vocabulary '", file, "' has no ", special,
                 " token, which BERT's inputs need");
  STRATA_CHECK(tok->vocab_size() <= 65536, ValueError, "vocabulary '", file, "' has ", tok->vocab_size(),
               " tokens; token shards hold ids below 65536");
  return tok;
}

}  // namespace

std::string BertTrainOptions::describe() const {
  const TrainBertConfig& c = config;
  std::ostringstream os;
  os << "model " << c.preset() << " (" << model.str() << "), B=" << c.run().batch_size()
     << " T=" << c.data().seq_len() << " grad_accum=" << c.run().grad_accum() << ", "
     << (tokenizer ? "WordPiece " + std::to_string(tokenizer->vocab_size()) + " tokens"
                   : std::string("byte-level"))
     << ", mask " << c.mask_prob() << ", " << describe_schedule(c.schedule(), c.optim()) << ", clip "
     << c.optim().grad_clip() << ", seed " << c.run().seed();
  return os.str();
}

bool parse_bert_train_options(int argc, char** argv, BertTrainOptions* out) {
  CLI::App app{"Train a BERT encoder with the masked-LM objective. With no arguments: a small byte-level BERT on "
               "the license texts every Debian machine has (/usr/share/common-licenses), for 5 minutes."};
  TrainBertConfig flags;
  ConfigFlags f(app, "train_bert", &flags);
  f.option(&flags, "preset", "", "model preset: tiny, small, bert-base, bert-large");
  f.option(&flags, "num_hidden_layers", "--layers");
  f.option(&flags, "hidden_size", "--hidden");
  f.option(&flags, "num_attention_heads", "--heads");
  f.option(&flags, "intermediate_size", "--intermediate");
  f.option(&flags, "max_position_embeddings", "--max-positions");
  f.option(&flags, "hidden_dropout_prob", "--dropout",
           "hidden dropout (embeddings, attention and layer outputs)");
  add_text_data_flags(f, flags.mutable_data());
  app.get_option("--train-data")->description("glob of llm.c .bin token shards (byte-level: tokens < 256)");
  app.get_option("--seq-len")->description("tokens per sample, [CLS] and [SEP]s included");
  f.option(&flags, "mask_prob", "", "share of tokens predicted (80% [MASK], 10% random, 10% unchanged)");
  f.option(&flags, "short_seq_prob", "", "share of samples cut shorter and padded");
  f.option(&flags, "two_segments", "", "[CLS] A [SEP] B [SEP] with segment ids");
  add_training_flags(f, &flags);
  add_adamw_beta_flags(f, flags.mutable_optim());
  add_bf16_flag(f, flags.mutable_precision());
  app.get_option("--bf16")->description("bf16 mixed precision (bf16 GEMMs, f32 master weights)");
  add_tensor_cache_flags(f, flags.mutable_cache(), "layer",
                         " (scopes: bert.embeddings, bert.encoder.layer.N.*, cls.*)");
  f.option(&flags, "init_from", "",
           "continue from Hugging Face BERT weights (model.safetensors or its directory); the model's shape "
           "is the file's");
  f.option(&flags, "export_hf", "",
           "at the end, write a Hugging Face model directory (model.safetensors, config.json)");
  f.flag(&flags, "export_only", "", "--export-hf without training: --init-from's weights or --resume's");
  f.option(&flags, "classify_data", "",
           "sequence classification on a file of '<label>\\t<text>' lines instead of masked-LM (every 10th "
           "held out)");
  f.option(&flags, "num_labels", "", "classes of --classify-data (default: the largest label + 1)");
  f.option(
      &flags, "vocab", "",
      "WordPiece instead of bytes: a vocab.txt, or a Hugging Face model folder holding one (default: the "
      "--init-from folder's, when it has one)");
  f.flag(&flags, "lowercase", "--lowercase{true},--no-lowercase{false}",
         "lower-case (and strip accents from) the text before WordPiece (default: the folder's "
         "tokenizer_config.json, else on)");
  TrainBertConfig set;  // what the --config file and the flags set
  const TrainBertConfig defaults = defaults_of<TrainBertConfig>(kDefaults);
  if (!f.parse(argc, argv, &set, &defaults)) return false;

  TrainBertConfig& c = out->config;
  c = settings_from(kDefaults, set);
  models::BertConfig& m = out->model;
  m = models::BertConfig::preset(c.preset());
  if (set.has_num_hidden_layers()) m.num_hidden_layers = set.num_hidden_layers();
  if (set.has_hidden_size()) m.hidden_size = set.hidden_size();
  if (set.has_num_attention_heads()) m.num_attention_heads = set.num_attention_heads();
  if (set.has_intermediate_size()) m.intermediate_size = set.intermediate_size();
  if (set.has_max_position_embeddings()) m.max_position_embeddings = set.max_position_embeddings();
  if (set.has_hidden_dropout_prob()) m.hidden_dropout_prob = set.hidden_dropout_prob();
  if (!c.init_from().empty()) {
    out->init_weights = std::make_shared<io::BertWeights>(io::load_bert_weights(c.init_from()));
    take_shape_from(out->init_weights->shape, set, c.init_from(), &m);
    c.set_preset("from " + c.init_from());
  }
  out->tokenizer = load_tokenizer(c, set);
  if (out->tokenizer && out->init_weights)
    STRATA_CHECK(m.vocab_size == out->tokenizer->vocab_size(), ValueError, "--init-from '", c.init_from(),
                 "': bert.embeddings.word_embeddings.weight has ", m.vocab_size, " rows, the vocabulary ",
                 out->tokenizer->vocab_size(), " tokens");
  else if (out->tokenizer)
    m.vocab_size = out->tokenizer->vocab_size();
  STRATA_CHECK(!c.export_only() || !c.init_from().empty() || c.run().resume(), ValueError,
               "--export-only needs weights to export: --init-from FILE or --resume");
  STRATA_CHECK(!c.export_only() || !c.export_hf().empty(), ValueError, "--export-only needs --export-hf DIR");
  check_export_paths(c.init_from(), c.export_hf(), "");
  TextDataConfig& data = *c.mutable_data();
  if (!set.data().has_seq_len()) data.set_seq_len(std::min(data.seq_len(), m.max_position_embeddings));
  LrScheduleConfig& schedule = *c.mutable_schedule();
  if (!set.schedule().has_min_lr()) schedule.set_min_lr(std::min(schedule.min_lr(), schedule.lr()));
  out->cache = cache_settings(c.cache());

  m.validate();
  STRATA_CHECK(c.run().batch_size() > 0 && c.run().log_every() > 0, ValueError,
               "batch size and log interval must be positive");
  STRATA_CHECK(data.seq_len() <= m.max_position_embeddings, ValueError, "seq_len ", data.seq_len(),
               " exceeds the model's max_position_embeddings ", m.max_position_embeddings);
  STRATA_CHECK(data.val_data().empty() || !data.train_data().empty(), ValueError,
               "--val-data needs --train-data");
  return true;
}

}  // namespace strata::examples
