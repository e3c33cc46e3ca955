// The tensor cache on BERT (dropout on, padded batches), beyond the parity suite
// (cache_parity_test.cpp): op-level recompute of GELU outputs and of each layer's input from the
// previous layer's norm, bit-identical to keeping everything.
#include <gtest/gtest.h>

#include "memory/cache_parity_models.h"

using namespace strata;
using namespace strata::memory;
using namespace strata::test;

namespace {

// The tiny BERT of the parity suite (cache_parity_models.h).
const ParityModel& bert() {
  static const ParityModel m = parity_model("bert");
  return m;
}
models::BertConfig config() { return parity_bert_config(); }

}  // namespace

// Op-level recompute: each layer's GELU output (what output.dense saves) is dropped in forward
// and made again from GELU's input in backward.
TEST(BertTensorCache, OpLevelRecomputeOfGeluOutputsIsBitIdentical) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  expect_op_level_recompute(bert(), "rules:bert.encoder.layer.?.output.dense=recompute", 3,
                            size_t(config().num_hidden_layers), "op-level recompute");
}

// Post-LN: each layer after the first starts from the previous layer's output LayerNorm, whose
// output the query/key/value projection saves; the planner's selective options drop it and the
// cache makes it again from the norm's saved input (a tensor of the layer before).
TEST(BertTensorCache, OpLevelRecomputeOfTheLayerInputFromThePreviousLayersNormIsBitIdentical) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  Plan plan;
  for (int64_t i = 1; i < config().num_hidden_layers; ++i)
    plan.tensors["bert.encoder.layer." + std::to_string(i) + ".attention.self#0:LinearBackward"] = CacheAction::Recompute;
  expect_op_level_recompute(bert(), make_plan_policy(plan), 3, size_t(config().num_hidden_layers - 1),
                            "layer inputs recomputed");
}
