#include <gtest/gtest.h>

#include "strata/core/error.h"
#include "strata/memory/cache_policy.h"

using namespace strata;
using namespace strata::memory;

namespace {
SaveRequest request(const autograd::SaveInfo& info, size_t bytes, size_t group = 1, size_t groups_last = 0) {
  SaveRequest r;
  r.info = &info;
  r.storage_bytes = bytes;
  r.group = group;
  r.groups_last_step = groups_last;
  return r;
}
autograd::SaveInfo info(const char* op, std::string scope, std::string block) {
  autograd::SaveInfo i;
  i.op = op;
  i.scope = std::move(scope);
  i.block = std::move(block);
  i.key = autograd::save_key(i.scope, 0, op);
  return i;
}
}  // namespace

TEST(CachePolicy, GlobMatchesDotsStarsAndQuestionMarks) {
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_TRUE(glob_match("h.*", "h.3.attn"));
  EXPECT_TRUE(glob_match("h.*.mlp*", "h.11.mlp.c_fc"));
  EXPECT_FALSE(glob_match("h.*.mlp*", "h.11.attn"));
  EXPECT_TRUE(glob_match("h.?", "h.3"));
  EXPECT_FALSE(glob_match("h.?", "h.13"));
  EXPECT_FALSE(glob_match("lm_head", "lm_head2"));
}

TEST(CachePolicy, RulesFirstMatchWinsWithOpAndSizeFilters) {
  auto p = parse_cache_policy("rules:h.*.mlp*@matmul>=1K=nvme; h.*=host; *=keep", 0);
  auto mm = info("matmul", "h.2.mlp.c_fc", "h.2");
  auto ln = info("layer_norm", "h.2.ln_1", "h.2");
  auto top = info("embedding", "wte", "");
  EXPECT_EQ(p->decide(request(mm, 4096)), CacheAction::Nvme);
  EXPECT_EQ(p->decide(request(mm, 512)), CacheAction::Host);  // under 1 KiB: next rule
  EXPECT_EQ(p->decide(request(ln, 4096)), CacheAction::Host);
  EXPECT_EQ(p->decide(request(top, 4096)), CacheAction::Keep);
  EXPECT_FALSE(p->recompute_block("h.2"));
}

TEST(CachePolicy, ShortSpecsOffloadBlocksAndKeepTheLastOnes) {
  auto nvme = parse_cache_policy("nvme", 1);
  auto in_block = info("matmul", "h.0.mlp.c_fc", "h.0");
  auto outside = info("linear_cross_entropy", "lm_head", "");
  EXPECT_EQ(nvme->decide(request(in_block, 1 << 20, 1, 0)), CacheAction::Nvme);  // first step
  EXPECT_EQ(nvme->decide(request(outside, 1 << 20, 0, 0)), CacheAction::Keep);
  // From the second step on, the last block (group 4 of 5) is kept.
  EXPECT_EQ(nvme->decide(request(in_block, 1 << 20, 3, 5)), CacheAction::Nvme);
  EXPECT_EQ(nvme->decide(request(in_block, 1 << 20, 4, 5)), CacheAction::Keep);

  auto rec = parse_cache_policy("recompute");
  EXPECT_TRUE(rec->recompute_block("h.7"));
  EXPECT_EQ(rec->decide(request(outside, 1 << 20)), CacheAction::Keep);
  auto keep = parse_cache_policy("keep");
  EXPECT_FALSE(keep->recompute_block("h.0"));
  EXPECT_EQ(keep->decide(request(in_block, 1 << 30)), CacheAction::Keep);
}

// Ops with a faster variant that saves more (the fused LM head's dW) ask prefers_lean: policies
// that keep what is saved there get the fast variant, policies that move or recompute it the lean one.
TEST(CachePolicy, LeanVariantsWhereThePolicyWouldNotKeepWhatTheOpSaves) {
  auto head = info("linear_cross_entropy", "lm_head", "");
  auto in_block = info("linear_cross_entropy", "h.3.mlp", "h.3");
  EXPECT_FALSE(parse_cache_policy("keep")->prefers_lean(head));
  for (const char* spec : {"nvme", "host", "adaptive", "adaptive:host"}) {
    auto p = parse_cache_policy(spec, 1);
    EXPECT_FALSE(p->prefers_lean(head)) << spec;  // outside blocks: kept
    EXPECT_TRUE(p->prefers_lean(in_block)) << spec;
  }
  EXPECT_TRUE(parse_cache_policy("recompute")->prefers_lean(head));
  auto rules = parse_cache_policy("rules:lm_head@linear_cross_entropy=recompute; h.*=nvme; lm_*=keep");
  EXPECT_TRUE(rules->prefers_lean(head));
  EXPECT_TRUE(rules->prefers_lean(in_block));
  auto keep_head = parse_cache_policy("rules:h.*=nvme; *=keep");
  EXPECT_FALSE(keep_head->prefers_lean(head));
  EXPECT_FALSE(parse_cache_policy("rules:h.*>=1G=keep; *=host")->prefers_lean(in_block));  // size not known: the rule applies
}

TEST(CachePolicy, BadSpecsNameTheBadPart) {
  try {
    parse_cache_policy("rules:h.*=tape");
    FAIL() << "no throw";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("'tape'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_cache_policy("offload-everything"), ValueError);
  EXPECT_THROW(parse_cache_policy("rules:h.*"), ValueError);
  EXPECT_THROW(parse_cache_policy("rules:h.*>=12X=nvme"), ValueError);
  EXPECT_THROW(parse_cache_policy("rules:"), ValueError);
}

// SSDTrain's rule on a hand-made profile: 4 blocks of 100 bytes and 1 s each. With B_w = 60 B/s
// block i is offloadable while (100 i + 200) / (4 + 2 (3 - i)) <= 60: i = 0 (20), 1 (37.5),
// 2 (66.7: no) -> blocks 0 and 1 offload, 2 and 3 are kept.
TEST(CachePolicy, AdaptivePicksTheLastBlockTheWriteBandwidthAllows) {
  auto p = make_adaptive_policy(CacheAction::Nvme);
  StepProfile prof;
  prof.groups.push_back({"", 0.1, 0});
  for (int i = 0; i < 4; ++i) prof.groups.push_back({"h." + std::to_string(i), 1.0, 100});
  prof.write_bytes_per_second = 60;
  auto b0 = info("matmul", "h.0.mlp", "h.0");
  auto b1 = info("matmul", "h.1.mlp", "h.1");
  auto b2 = info("matmul", "h.2.mlp", "h.2");
  auto b3 = info("matmul", "h.3.mlp", "h.3");
  EXPECT_EQ(p->decide(request(b3, 100)), CacheAction::Nvme);  // profiling step: offload all
  p->on_step_end(prof);
  EXPECT_EQ(p->decide(request(b0, 100)), CacheAction::Nvme);
  EXPECT_EQ(p->decide(request(b1, 100)), CacheAction::Nvme);
  EXPECT_EQ(p->decide(request(b2, 100)), CacheAction::Keep);
  EXPECT_EQ(p->decide(request(b3, 100)), CacheAction::Keep);
}
