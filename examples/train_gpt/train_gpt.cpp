// train_gpt: trains a GPT-2 family model. With no arguments it trains a small byte-level GPT
// on the built-in corpus for 5 minutes, printing step, loss, lr, tokens/s and the three
// memory figures (activation peak, step peak, process peak RSS), evaluating held-out loss
// periodically, checkpointing, and sampling text at the end. See --help.
//
// Data parallel: `mpirun -np N train_gpt ...` trains on N ranks (rank and world size from the
// MPI environment): each rank reads its share of every global batch (B*T*grad_accum*N tokens
// per step), gradients are averaged in buckets during backward, rank 0 alone logs, evaluates,
// samples and writes checkpoints (which record the world size and resume on any).
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>

#include "examples/common/checkpointing.h"
#include "examples/common/data_parallel.h"
#include "examples/common/lr_schedule.h"
#include "examples/common/text_data.h"
#include "examples/common/trainer_loop.h"
#include "examples/common/trainer_setup.h"
#include "examples/train_gpt/train_options.h"
#include "strata/io/checkpoint/checkpoint.h"
#include "strata/io/text/token_shards.h"
#include "strata/io/text/tokenizer.h"
#include "strata/models/gpt.h"
#include "strata/models/model_flops.h"
#include "strata/strata.h"

using namespace strata;
using strata::examples::TrainOptions;

namespace {

double evaluate(models::GPT& model, io::TokenLoader& val, int64_t batches, Device device) {
  NoGradGuard ng;
  model.eval();
  val.reset();
  double total = 0;
  for (int64_t i = 0; i < batches; ++i) {
    Tensor x, y;
    val.next(&x, &y);
    total += model.loss(x.to(device), y.to(device)).item();
  }
  model.train();
  return total / double(batches);
}

// GPT-2's BPE from --vocab/--merges, or bytes for text trained on byte by byte (null: neither, the
// data being shards of unknown tokens).
std::unique_ptr<io::Tokenizer> make_tokenizer(const examples::TrainGptConfig& c, bool byte_level) {
  if (!c.vocab().empty()) return io::Gpt2Tokenizer::from_files(c.vocab(), c.merges());
  if (byte_level) return std::make_unique<io::ByteTokenizer>();
  return nullptr;
}

// --sample-tokens tokens after --prompt from `model`, decoded by `tok`.
std::string sample_text(models::GPT& model, const io::Tokenizer& tok, const examples::TrainGptConfig& c,
                        Device device) {
  const std::string prompt = c.prompt().empty() ? "This License" : c.prompt();
  std::vector<int64_t> ids;
  for (int32_t t : tok.encode(prompt)) ids.push_back(t);
  STRATA_CHECK(!ids.empty(), ValueError, "--prompt is empty after tokenization");
  STRATA_CHECK(int64_t(ids.size()) < model.config().block_size, ValueError, "--prompt has ", ids.size(),
               " tokens; the model's context is ", model.config().block_size);
  for (int64_t t : ids)
    STRATA_CHECK(t < model.config().vocab_size, ValueError, "--prompt token ", t,
                 " is outside the model's vocabulary of ", model.config().vocab_size);
  Generator g(c.run().seed());
  NoGradGuard ng;
  model.eval();
  Tensor out = model.generate(
      ops::from_vector(ids, {1, int64_t(ids.size())}).to(device),
      {.max_new_tokens = c.sample_tokens(), .temperature = c.temperature(), .top_k = c.top_k()}, g);
  model.train();
  std::vector<int32_t> tokens;
  for (int64_t t : out.to_vector<int64_t>()) tokens.push_back(int32_t(t));
  return tok.decode(tokens);
}

// --export-hf and --export-llmc of `model`'s weights.
void export_weights(const models::GPT& model, const examples::TrainGptConfig& c) {
  const models::GPTConfig& m = model.config();
  const io::GptShape shape{m.n_layer, m.n_head, m.n_embd, m.block_size, m.vocab_size, m.vocab_size};
  if (!c.export_hf().empty()) {
    io::save_hf_gpt2_dir(c.export_hf(), shape, model.state_dict());
    std::printf("exported: %s (Hugging Face GPT2LMHeadModel)\n", c.export_hf().c_str());
  }
  if (!c.export_llmc().empty()) {
    io::save_llmc_checkpoint(c.export_llmc(), shape, model.state_dict());
    std::printf("exported: %s (llm.c model file)\n", c.export_llmc().c_str());
  }
}

// --export-only and --sample-only: the weights of --init-from or the --resume checkpoint, no data,
// no training.
int use_weights_without_training(TrainOptions& o, Device device) {
  const examples::TrainGptConfig& c = o.config;
  manual_seed(c.run().seed());
  models::GPT model(o.model);
  if (o.init_weights) model.load_state_dict(o.init_weights->state_dict);
  o.init_weights.reset();
  if (c.run().resume()) {
    const std::string ckpt_dir = c.run().out_dir() + "/checkpoint";
    const io::CheckpointState st = examples::restore_checkpoint(ckpt_dir, model, {o.describe(), {}, false});
    std::printf("weights of %s at step %ld\n", ckpt_dir.c_str(), long(st.step));
  }
  model.to(device);
  if (c.export_only()) export_weights(model, c);
  if (c.sample_only()) {
    std::unique_ptr<io::Tokenizer> tok = make_tokenizer(c, /*byte_level=*/true);
    std::printf("sample:\n%s\n", sample_text(model, *tok, c, device).c_str());
  }
  return 0;
}

// The token shards a run trains on (--train-data, or shards rank 0 writes from --text), their
// tokenizer, and the loaders: this rank's share of the training order, and on rank 0 the held-out set.
struct GptData {
  std::string train_glob;
  bool byte_level = false;
  std::unique_ptr<io::Tokenizer> tokenizer;
  std::unique_ptr<io::TokenLoader> train, val;
  io::DataIdentity identity;  // of the training shards
};

GptData make_data(const TrainOptions& o, dist::ProcessGroup* pg) {
  const examples::TrainGptConfig& c = o.config;
  const examples::RunConfig& run = c.run();
  const examples::TextDataConfig& data = c.data();
  const int rank = pg ? pg->rank() : 0, world = pg ? pg->size() : 1;
  examples::check_text_data(data);
  GptData d;
  d.train_glob = data.train_data();
  std::string val_glob = data.val_data();
  d.byte_level = d.train_glob.empty() && c.vocab().empty();
  d.tokenizer = make_tokenizer(c, d.byte_level);
  if (d.tokenizer)
    STRATA_CHECK(d.tokenizer->vocab_size() <= o.model.vocab_size, ValueError, "the tokenizer's ",
                 d.tokenizer->vocab_size(), " tokens do not fit the model's vocab_size ", o.model.vocab_size);
  if (d.train_glob.empty()) {
    std::tie(d.train_glob, val_glob) =
        examples::shards_from_text(examples::read_training_text(data.text()), run.out_dir(),
                                   d.byte_level ? nullptr : d.tokenizer.get(), pg);
  }
  const std::vector<std::string> train_paths = io::glob_paths(d.train_glob);
  d.train = std::make_unique<io::TokenLoader>(train_paths,
                                              io::TokenLoaderOptions{.batch = run.batch_size(),
                                                                     .seq_len = data.seq_len(),
                                                                     .rank = rank,
                                                                     .world_size = world,
                                                                     .shuffle = data.shuffle(),
                                                                     .seed = run.seed(),
                                                                     .token_limit = o.model.vocab_size});
  d.identity = examples::token_shards_identity(d.train_glob, train_paths, d.train->num_tokens());
  if (!val_glob.empty() && rank == 0)
    d.val = std::make_unique<io::TokenLoader>(
        io::glob_paths(val_glob),
        io::TokenLoaderOptions{
            .batch = run.batch_size(), .seq_len = data.seq_len(), .token_limit = o.model.vocab_size});
  return d;
}

// What rank 0 prints before the first step.
void print_run(const TrainOptions& o, const models::GPT& model, const GptData& d,
               const examples::DataParallel& ranks, int64_t tokens_per_step) {
  std::printf("train_gpt: %s\n  %ld parameters, %ld tokens/step, data %s (%ld tokens)%s\n",
              o.describe().c_str(), long(model.num_parameters()), long(tokens_per_step), d.train_glob.c_str(),
              long(d.train->num_tokens()), d.byte_level ? ", byte-level" : "");
  if (ranks.group()) std::printf("  %s\n", ranks.describe().c_str());
}

int train_gpt(TrainOptions& o, examples::TrainerRun& trainer_run) {
  // The settings, grouped as in the config file.
  const examples::TrainGptConfig& c = o.config;
  const examples::RunConfig& run = c.run();
  const examples::TrainerStart start = examples::start_trainer(run, c.data_parallel(), trainer_run);
  const Device device = start.dev.device;
  if (c.export_only() || c.sample_only()) return use_weights_without_training(o, device);
  const bool lead = start.lead;  // logs, evaluates, samples, writes checkpoints
  const std::string ckpt_dir = examples::checkpoint_dir(run);
  const GptData data = make_data(o, start.group);
  io::TokenLoader& train = *data.train;
  const examples::RunRecord record{o.describe(), data.identity, run.allow_other_data()};

  // ---- model and optimizer ----
  manual_seed(run.seed());
  auto model_ptr = std::make_shared<models::GPT>(o.model);
  models::GPT& model = *model_ptr;
  if (o.init_weights) {
    model.load_state_dict(o.init_weights->state_dict);
    if (lead) std::printf("  weights from %s\n", c.init_from().c_str());
    o.init_weights.reset();
  }
  // DDP's hooks see only accumulated gradients, so every cache policy works unchanged; each
  // rank's NVMe tier opens its own unnamed spill file, so ranks may share --spill-dir.
  const examples::PlacedModel placed = examples::place_with_adamw(c, start, trainer_run, model_ptr, 1e-8);
  examples::DataParallel& ranks = *placed.ranks;
  const examples::TrainerAdamW& opt = placed.opt;
  // Warmup then cosine decay; a time-bounded run estimates the length from the step time
  // measured over its first steps (the schedule is rebuilt once).
  examples::LrSchedule sched(examples::lr_schedule_options(c.schedule(), c.run()));

  const int64_t first_step =
      run.resume() ? examples::resume_ranks(ckpt_dir, record, model, opt, train, ranks) : 0;
  auto save = [&](int64_t at_step) {
    // opt.checkpoint() is collective under ZeRO: every rank calls save().
    const io::CheckpointState st = opt.checkpoint(record, at_step, train.cursor(), model, ranks.world());
    if (lead) io::save_checkpoint(ckpt_dir, st);
  };
  const int64_t tokens_per_step = run.batch_size() * c.data().seq_len() * run.grad_accum() * ranks.world();
  if (lead) print_run(o, model, data, ranks, tokens_per_step);

  examples::TrainLoop loop(examples::loop_parts(c, start, placed, sched, o.cache, trainer_run, first_step));
  const double flops_per_token = models::transformer_training_flops_per_token(
      model.num_parameters(), o.model.n_layer, o.model.n_embd, c.data().seq_len());
  std::optional<double> last_val;    // the held-out loss of the latest evaluation
  std::function<double()> held_out;  // none without held-out data
  if (data.val) held_out = [&] { return evaluate(model, *data.val, run.eval_batches(), device); };
  while (loop.keep_going()) {
    ops::AllowTf32Guard tf32(c.precision().tf32());  // forward and backward
    loop.run_step([&] {
      Tensor x, y;
      train.next(&x, &y);
      std::optional<ops::AutocastGuard> amp;
      if (c.precision().bf16()) amp.emplace(DType::bf16);
      return model.loss(x.to(device), y.to(device));
    });
    loop.end_text_step(double(tokens_per_step), flops_per_token, "loss", "val/loss", held_out, &last_val,
                       save);
  }
  loop.finish();
  const int64_t step = loop.step();
  // Rank 0's last work: under ZeRO-3 every rank gathers the weights for it first.
  loop.with_whole_parameters([&] {
    if (data.val) {
      last_val = held_out();
      std::printf("final: step %ld, train loss %.4f, held-out loss %.4f%s, %.0f s\n", long(step),
                  loop.last_loss(), *last_val, data.byte_level ? " nats/byte" : "", loop.elapsed());
    }
    if (loop.steps_run() > 0) save(step);
    if (lead) std::printf("checkpoint: %s\n", ckpt_dir.c_str());
    loop.print_timing("tok/s", double(tokens_per_step));
    if (lead) export_weights(model, c);
    if (lead && c.sample_tokens() > 0 && data.tokenizer)
      std::printf("sample:\n%s\n", sample_text(model, *data.tokenizer, c, device).c_str());
  });
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return examples::run_trainer_main("train_gpt", argc, argv, &examples::parse_train_options, &train_gpt);
}
