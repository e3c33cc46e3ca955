// What a C++ application embeds Strata for, through the installed package: a GPT (an
// nn::Module) trained with AdamW while every saved activation goes through the tensor cache,
// planned for a step-peak memory budget, then a checkpoint saved and loaded. Exits non-zero
// unless the loss falls, the budget holds and the loaded model computes the same loss.
//   embed_minimal [BUDGET] [SPILL_DIR]
// BUDGET defaults to 100M, under the 124M keep-all step peak: the plan recomputes blocks. A
// SPILL_DIR lets it write blocks to NVMe too (its staging buffers count: give a larger BUDGET).
#include <cstdio>
#include <filesystem>
#include <string>

#include "strata/io/checkpoint/checkpoint.h"
#include "strata/models/gpt.h"
#include "strata/strata.h"

using namespace strata;

int main(int argc, char** argv) try {
  manual_seed(0);
  models::GPTConfig config = models::GPTConfig::preset("small");  // 4 layers, C=256, bytes
  models::GPT model(config);
  optim::AdamW opt(model.parameters(), optim::AdamWOptions(1e-3).weight_decay(0.1));

  memory::CacheSettings cache_settings;  // what train_gpt's --memory-budget and --spill-dir fill in
  cache_settings.memory_budget = memory::parse_byte_size(argc > 1 ? argv[1] : "100M", "budget");
  if (argc > 2) cache_settings.spill_dir = argv[2];
  cache_settings.spill_arena_bytes = 64 << 20;
  memory::TrainerCache cache(cache_settings);

  // One fixed batch of random bytes: the loss must fall as the model learns it.
  Tensor tokens = ops::mul(ops::rand({8, 129}), 255.0).to(DType::i64);
  Tensor x = ops::narrow(tokens, 1, 0, 128).contiguous(), y = ops::narrow(tokens, 1, 1, 128).contiguous();
  double first = 0, last = 0;
  for (int step = 0; step < 12; ++step) {
    cpu_allocator().stats().reset_peaks();
    opt.zero_grad();
    {
      autograd::SavePolicyGuard guard(cache.cache());  // saves on this thread go to the cache
      cache.begin_step();                              // the first step plans for the budget
      Tensor loss = model.loss(x, y);
      loss.backward();
      last = loss.item();
    }
    opt.step();
    const memory::BudgetOutcome plan = cache.end_step();  // after the first step: the budget's plan
    if (!plan.explanation.empty()) std::printf("embed_minimal: %s\n", plan.explanation.c_str());
    if (!plan.feasible) return 1;
    if (step == 0) first = last;
  }
  std::printf("embed_minimal: loss %.4f -> %.4f; %s\n", first, last, cache.stats_line().c_str());

  const std::string dir = (std::filesystem::temp_directory_path() / "embed_minimal_ckpt").string();
  io::CheckpointState saved;
  saved.step = 12;
  saved.model = model.state_dict();
  saved.optimizer = opt.state_dict();
  io::save_checkpoint(dir, saved);
  models::GPT loaded(config);
  loaded.load_state_dict(io::load_checkpoint(dir).model);
  std::filesystem::remove_all(dir);
  const double again = loaded.loss(x, y).item(), here = model.loss(x, y).item();
  std::printf("embed_minimal: loss after loading the checkpoint %.6f (trained model %.6f)\n", again, here);

  const bool ok = last < first - 0.5 && !cache.budget_exceeded() && again == here;
  if (!ok) std::fprintf(stderr, "embed_minimal: FAILED (loss fell, budget held, checkpoint loaded)\n");
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "embed_minimal: %s\n", e.what());
  return 2;
}
