// TrainerCache: byte sizes parse strictly, with units, and a nonsense figure is an error naming the
// flag; the budget's plan is an outcome of the planning step's end; a policy of nvme without a tier says why.
#include "strata/memory/trainer_cache.h"

#include <gtest/gtest.h>

#include "strata/models/gpt.h"
#include "strata/strata.h"
#include "support/spill_room.h"

using namespace strata;
using namespace strata::memory;

TEST(ParseByteSize, UnitsArePowersOf1024AndAnOptionalB) {
  EXPECT_EQ(parse_byte_size("4096"), 4096u);
  EXPECT_EQ(parse_byte_size("64K"), 64u << 10);
  EXPECT_EQ(parse_byte_size("1.5G"), 3u << 29);
  EXPECT_EQ(parse_byte_size("800MB"), 800u << 20);
  EXPECT_EQ(parse_byte_size("2GiB"), 2ull << 30);
  EXPECT_EQ(parse_byte_size("1t"), 1ull << 40);
}

TEST(ParseByteSize, NegativeGarbageAndHugeFiguresAreErrorsNamingTheFlag) {
  for (const char* bad : {"-5M", "abc", "", "12Q", "nan", "inf", "99999999999999999999G", "1e30"}) {
    try {
      parse_byte_size(bad, "--memory-budget");
      ADD_FAILURE() << "'" << bad << "' was accepted";
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("--memory-budget"), std::string::npos) << e.what();
    }
  }
}

namespace {

// One step of the tiny GPT under `cache`, its peaks reset first (what a trainer's loop does).
void run_step(TrainerCache& cache, models::GPT& model, const Tensor& x, const Tensor& y) {
  cpu_allocator().stats().reset_peaks();
  model.zero_grad();
  autograd::SavePolicyGuard guard(cache.cache());
  cache.begin_step();
  model.loss(x, y).backward();
}

}  // namespace

// end_step reads the step's peaks itself: a budget below the planning step's floor is an outcome
// saying why (the caller names its flag), one above keep-all is a plan, and later steps make none.
TEST(TrainerCache, TheBudgetsPlanIsAnOutcomeOfThePlanningStepsEnd) {
  models::GPTConfig c = models::GPTConfig::preset("tiny");
  c.n_layer = 2;
  manual_seed(3);
  models::GPT model(c);
  Tensor x = ops::zeros({2, 32}, TensorOptions().dtype(DType::i64)),
         y = ops::ones({2, 32}, TensorOptions().dtype(DType::i64));
  TrainerCache tight({.memory_budget = 1000, .min_bytes = 0});
  EXPECT_TRUE(tight.planning());
  run_step(tight, model, x, y);
  const BudgetOutcome no = tight.end_step();
  EXPECT_FALSE(no.made);
  EXPECT_FALSE(no.feasible);
  EXPECT_NE(no.explanation.find("cannot be met"), std::string::npos) << no.explanation;
  EXPECT_EQ(no.explanation.find("--"), std::string::npos)
      << "the library names no trainer flag: " << no.explanation;

  TrainerCache roomy({.memory_budget = uint64_t(1) << 40, .min_bytes = 0});
  run_step(roomy, model, x, y);
  const BudgetOutcome yes = roomy.end_step();
  EXPECT_TRUE(yes.made && yes.feasible) << yes.explanation;
  EXPECT_FALSE(roomy.planning());
  run_step(roomy, model, x, y);
  EXPECT_FALSE(roomy.end_step().made);
  EXPECT_FALSE(roomy.budget_exceeded());
}

// A budget just under keep-all sends a block to NVMe. A spill arena whose size was not asked for
// grows to what the plan sends there; one of a fixed size that is too small refuses the plan, naming
// both figures, instead of quietly recomputing.
TEST(TrainerCache, TheSpillArenaGrowsToThePlanUnlessItsSizeWasFixed) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  models::GPTConfig c = models::GPTConfig::preset("tiny");
  c.n_layer = 8;  // NVMe holds the earliest blocks while backward needs the last ones
  manual_seed(3);
  models::GPT model(c);
  Tensor x = ops::zeros({16, 64}, TensorOptions().dtype(DType::i64)),
         y = ops::ones({16, 64}, TensorOptions().dtype(DType::i64));
  const std::string dir = test::spill_dir("arena_growth");
  // Keep-all's peak with the NVMe tier open (its staging buffers count).
  uint64_t keep_all = 0;
  {
    TrainerCache keep({.spill_dir = dir, .spill_arena_bytes = 4096, .min_bytes = 0});
    run_step(keep, model, x, y);
    keep_all = uint64_t(cpu_allocator().stats().snapshot().total_peak);
    keep.end_step();
  }
  const CacheSettings s{
      .memory_budget = keep_all, .spill_dir = dir, .spill_arena_bytes = 4096, .min_bytes = 0};

  {
    TrainerCache grows(s);
    ASSERT_EQ(grows.cache()->spill_arena_capacity(), 4096u);
    run_step(grows, model, x, y);
    const BudgetOutcome planned = grows.end_step();
    ASSERT_TRUE(planned.made && planned.feasible) << planned.explanation;
    EXPECT_NE(planned.explanation.find("to NVMe"), std::string::npos) << planned.explanation;
    EXPECT_GT(grows.cache()->spill_arena_capacity(), 4096u);
    run_step(grows, model, x, y);  // the NVMe blocks fit the grown arena: no fallback
    grows.end_step();
    EXPECT_EQ(grows.last_stats().fallbacks, 0u);
    // Stores went to NVMe: written, or cancelled when backward wanted the tensor before its store
    // finished (it is then forwarded from memory; a slow I/O worker can leave every store so).
    const CacheStats& st = grows.last_stats();
    EXPECT_GT(st.nvme.bytes_written + st.cancelled_stores, 0u) << planned.explanation << "\n"
                                                               << grows.stats_line();
  }

  CacheSettings fixed = s;
  fixed.spill_arena_fixed = true;
  TrainerCache refuses(fixed);  // the growing arena's cache is gone: its staging buffers too
  run_step(refuses, model, x, y);
  const BudgetOutcome no = refuses.end_step();
  EXPECT_FALSE(no.feasible);
  EXPECT_NE(no.explanation.find("to NVMe, more than the fixed 4.00 KiB spill arena holds"), std::string::npos)
      << no.explanation;
}

TEST(TrainerCache, APolicyOfNvmeWithoutATierSaysWhy) {
  EXPECT_EQ(TrainerCache({.policy = "nvme"}).missing_nvme_tier(), "no spill directory given");
  EXPECT_EQ(TrainerCache({.policy = "keep"}).missing_nvme_tier(), "");
  const std::string why =
      TrainerCache({.policy = "nvme", .spill_dir = "/no/such/spill/dir"}).missing_nvme_tier();
  EXPECT_NE(why.find("/no/such/spill/dir"), std::string::npos) << why;
}
