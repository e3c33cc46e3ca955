#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "support/spill_room.h"
#include "strata/models/gpt.h"
#include "strata/strata.h"

using namespace strata;
using namespace strata::memory;

TEST(Plan, RoundTripsThroughProtobufTextAndAFile) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  Plan p;
  p.blocks = {{"h.0", CacheAction::Nvme}, {"h.1", CacheAction::Recompute}, {"h.2", CacheAction::Keep}};
  p.tensors = {{"h.2.mlp.c_proj#0:MatmulBackward", CacheAction::Recompute}};
  p.outside_blocks = CacheAction::Host;
  p.budget_bytes = 123456789;
  p.predicted_step_peak = 100000000;
  p.solver = "greedy-budget";
  p.note = "a note";
  auto path = std::filesystem::temp_directory_path() / ("strata_plan_" + std::to_string(::getpid()) + ".textproto");
  save_plan(p, path.string());
  Plan q = load_plan(path.string());
  EXPECT_EQ(q.blocks, p.blocks);
  EXPECT_EQ(q.tensors, p.tensors);
  EXPECT_EQ(q.outside_blocks, CacheAction::Host);
  EXPECT_EQ(q.budget_bytes, p.budget_bytes);
  EXPECT_EQ(q.predicted_step_peak, p.predicted_step_peak);
  EXPECT_EQ(q.note, "a note");
  EXPECT_NE(plan_to_text(p).find("action: NVME"), std::string::npos);
  std::filesystem::remove(path);
}

TEST(Plan, BadFilesAreErrorsNamingFileAndLine) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  EXPECT_THROW(load_plan("/nonexistent/plan.textproto"), IoError);
  try {
    plan_from_text("blocks { block: \"h.0\" action: NVME }\nblocks { action: TAPE }\n", "'p.textproto'");
    FAIL() << "no throw";
  } catch (const ValueError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("p.textproto"), std::string::npos) << m;
    EXPECT_NE(m.find("line 2"), std::string::npos) << m;
  }
}

TEST(Plan, ThePolicyFollowsTensorThenBlockDecisions) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  Plan p;
  p.blocks = {{"h.0", CacheAction::Nvme}, {"h.1", CacheAction::Recompute}};
  p.tensors = {{"h.0.attn#1:AttentionBackward", CacheAction::Keep}};
  auto pol = make_plan_policy(p);
  autograd::SaveInfo a;
  a.op = "MatmulBackward";
  a.scope = "h.0.mlp.c_fc";
  a.block = "h.0";
  SaveRequest r;
  r.info = &a;
  a.key = "h.0.mlp.c_fc#0:MatmulBackward";
  EXPECT_EQ(pol->decide(r), CacheAction::Nvme);
  a.key = "h.0.attn#1:AttentionBackward";
  EXPECT_EQ(pol->decide(r), CacheAction::Keep);
  a.block = "h.1";  // a segment's input
  a.key = "h.1#0:checkpoint";
  EXPECT_EQ(pol->decide(r), CacheAction::Keep);
  EXPECT_TRUE(pol->recompute_block("h.1"));
  EXPECT_FALSE(pol->recompute_block("h.0"));
  a.block = "";
  EXPECT_EQ(pol->decide(r), CacheAction::Keep);
}
