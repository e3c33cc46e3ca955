#include <gtest/gtest.h>

#include <filesystem>

#include "strata/io/checkpoint/checkpoint.h"
#include "strata/io/text/token_shards.h"
#include "strata/models/gpt.h"
#include "strata/strata.h"

using namespace strata;

namespace {

// Everything a training run owns; built identically for every run.
struct TrainingRun {
  models::GPT model;
  optim::AdamW opt;
  io::TokenLoader loader;
  explicit TrainingRun(const std::string& shard)
      : model(config()), opt(model.parameters(), optim::AdamWOptions(3e-3).weight_decay(0.1)),
        loader({shard}, {.batch = 2, .seq_len = 16, .shuffle = true, .seed = 4}) {}
  static models::GPTConfig config() {
    models::GPTConfig c = models::GPTConfig::preset("tiny");
    c.dropout = 0.1;  // masks come from the generator: resume must restore its state
    return c;
  }
  double step() {
    Tensor x, y;
    loader.next(&x, &y);
    Tensor loss = model.loss(x, y);
    opt.zero_grad();
    loss.backward();
    optim::clip_grad_norm_(model.parameters(), 1.0);
    opt.step();
    return loss.item();
  }
  io::CheckpointState state(int64_t at) {
    io::CheckpointState s;
    s.step = at;
    s.rng = current_generator().state();
    s.data = loader.cursor();
    s.model = model.state_dict();
    s.optimizer = opt.state_dict();
    return s;
  }
};

std::string make_shard() {
  auto dir = std::filesystem::temp_directory_path() / ("strata_resume_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::vector<int32_t> toks;
  for (int i = 0; i < 5000; ++i) toks.push_back((i * 37 + i / 7) % 256);
  io::write_token_shard((dir / "train.bin").string(), toks);
  return (dir / "train.bin").string();
}

}  // namespace

// N steps == N/2 steps + save + load (into fresh objects) + N/2 steps, bit for bit, with
// dropout on and a shuffled loader.
TEST(GptResume, CheckpointResumeIsBitExact) {
  const std::string shard = make_shard();
  const int N = 8;
  manual_seed(77);
  TrainingRun full(shard);
  std::vector<double> full_losses;
  for (int i = 0; i < N; ++i) full_losses.push_back(full.step());

  manual_seed(77);
  std::vector<double> losses;
  const std::string ckpt = std::filesystem::path(shard).parent_path() / "ckpt";
  {
    TrainingRun first(shard);
    for (int i = 0; i < N / 2; ++i) losses.push_back(first.step());
    io::save_checkpoint(ckpt, first.state(N / 2));
  }
  manual_seed(12345);  // a different seed: everything must come from the checkpoint
  TrainingRun second(shard);
  io::CheckpointState st = io::load_checkpoint(ckpt);
  second.model.load_state_dict(st.model);
  second.opt.load_state_dict(st.optimizer);
  current_generator().set_state(st.rng);
  second.loader.set_cursor(st.data);
  EXPECT_EQ(st.step, N / 2);
  for (int i = N / 2; i < N; ++i) losses.push_back(second.step());

  EXPECT_EQ(losses, full_losses);
  nn::StateDict a = full.model.state_dict(), b = second.model.state_dict();
  for (const auto& [name, t] : a) EXPECT_EQ(t.to_double_vector(), b.at(name).to_double_vector()) << name;
}
