// Cache policies are checked against the model they run on: rules and plan entries that name
// nothing in its first step are refused, and malformed ones when they are parsed.
#include <gtest/gtest.h>

#include "strata/memory/plan.h"
#include "strata/memory/tensor_cache.h"
#include "strata/models/gpt.h"
#include "strata/strata.h"

using namespace strata;
using namespace strata::memory;

namespace {

// One step of the tiny GPT (2 blocks: transformer.h.0, transformer.h.1) under `policy`; returns
// the error end_step throws, or "".
std::string first_step_error(std::shared_ptr<CachePolicy> policy) {
  manual_seed(1);
  models::GPT model(models::GPTConfig::preset("tiny"));
  TensorCacheOptions o;
  o.min_bytes = 0;
  o.host_pool_bytes = 16 << 20;
  auto cache = TensorCache::create(o, std::move(policy));
  Tensor x = ops::mul(ops::rand({2, 16}), 255.0).to(DType::i64);
  try {
    autograd::SavePolicyGuard guard(cache);
    cache->begin_step();
    model.loss(x, x).backward();
    cache->end_step();
  } catch (const ValueError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(PolicyCheck, RulesThatNameNothingInTheModelAreRefusedNamingThem) {
  EXPECT_EQ(first_step_error(parse_cache_policy("rules:transformer.h.1*=host;*=keep", 0)), "");
  // The scope paths before they were the module paths, a typo'd op, a block the model lacks.
  const std::string m = first_step_error(parse_cache_policy(
      "rules:h.*=host;transformer.h.*@gleu=recompute;transformer.h.9=recompute;*=keep", 0));
  EXPECT_NE(m.find("3 entries match nothing"), std::string::npos) << m;
  EXPECT_NE(m.find("'h.*'"), std::string::npos) << m;
  EXPECT_NE(m.find("'transformer.h.*@gleu' (no saved tensor's scope with that op)"), std::string::npos) << m;
  EXPECT_NE(m.find("'transformer.h.9'"), std::string::npos) << m;
}

TEST(PolicyCheck, PlanEntriesForAnotherModelAreRefused) {
  Plan ok;
  ok.blocks = {{"transformer.h.0", CacheAction::Recompute}, {"transformer.h.1", CacheAction::Host}};
  EXPECT_EQ(first_step_error(make_plan_policy(ok)), "");
  Plan deeper = ok;  // a 12-layer plan on a 2-layer model, and a key from nowhere
  for (int i = 2; i < 12; ++i) deeper.blocks["transformer.h." + std::to_string(i)] = CacheAction::Host;
  deeper.tensors["nonsense#0:LinearBackward"] = CacheAction::Keep;
  const std::string m = first_step_error(make_plan_policy(deeper));
  EXPECT_NE(m.find("11 entries match nothing"), std::string::npos) << m;
  EXPECT_NE(m.find("block 'transformer.h.10' (no such block)"), std::string::npos) << m;
  EXPECT_NE(m.find("and 6 more"), std::string::npos) << m;
}

TEST(PolicyCheck, MalformedRulesAndPlansAreRefusedWhenParsed) {
  EXPECT_THROW(parse_cache_policy("rules:transformer.h.*@=recompute"), ValueError);
  EXPECT_THROW(parse_cache_policy("rules:*>=-5M=host"), ValueError);
  EXPECT_THROW(parse_cache_policy("rules:*=gleu"), ValueError);
  try {
    plan_from_text("blocks { block: \"transformer.h.0\" action: 7 }", "'p'");
    FAIL() << "action 7 was accepted";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("block 'transformer.h.0' has action 7"), std::string::npos)
        << e.what();
  }
  try {
    plan_from_text("blocks { block: \"b\" action: HOST }\nblocks { block: \"b\" action: NVME }", "'p'");
    FAIL() << "a duplicate block was accepted";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("block 'b' appears twice"), std::string::npos) << e.what();
  }
}
