// The saved-tensor key "<scope>#<n>:<op>" is one contract: the planner's tracer records the keys
// the cache decides on, and scopes (so rules and plan keys) are the named_modules() paths.
#include <gtest/gtest.h>

#include <set>

#include "strata/memory/planner/tracer.h"
#include "strata/memory/tensor_cache.h"
#include "strata/models/gpt.h"
#include "strata/strata.h"

using namespace strata;
using namespace strata::memory;

namespace {

// Sends everything to the host pool (so the cache records each storage once and asks about it
// once) and records the key of every storage the cache asks about.
class RecordingPolicy final : public CachePolicy {
 public:
  std::string name() const override { return "recording"; }
  CacheAction decide(const SaveRequest& r) override {
    keys.insert(r.info->key);
    return CacheAction::Host;
  }
  std::set<std::string> keys;
};

struct Batch {
  Tensor idx, targets;
};

Batch batch() {
  manual_seed(11);
  Tensor tok = ops::mul(ops::rand({2, 17}), 255.0).to(DType::i64);
  return {ops::narrow(tok, 1, 0, 16).contiguous(), ops::narrow(tok, 1, 1, 16).contiguous()};
}

TensorCacheOptions every_size() {
  TensorCacheOptions o;
  o.min_bytes = 0;
  o.host_pool_bytes = 64 << 20;
  o.sync_stores_before_backward = true;  // a tiny step: stores finish before backward reads
  return o;
}

}  // namespace

TEST(SaveKey, TheTracersKeysAreTheKeysTheCacheDecidesOn) {
  manual_seed(1);
  models::GPT model(models::GPTConfig::preset("tiny"));
  const Batch b = batch();
  auto recording = std::make_shared<RecordingPolicy>();
  auto cache = TensorCache::create(every_size(), recording);
  for (int step = 0; step < 2; ++step) {  // the second step's keys restart: the same set
    autograd::SavePolicyGuard guard(cache);
    cache->begin_step();
    model.loss(b.idx, b.targets).backward();
    cache->end_step();
  }
  auto tracer = std::make_shared<planner::StepTracer>();
  {
    OpObserverGuard obs(tracer.get());
    autograd::SavePolicyGuard save(tracer);
    tracer->begin();
    model.loss(b.idx, b.targets).backward();
  }
  planner::StepTrace trace = tracer->finish("gpt tiny");
  std::set<std::string> traced;
  for (const planner::TraceTensor& x : trace.tensors) traced.insert(x.key);
  EXPECT_EQ(traced, recording->keys);
  EXPECT_GT(traced.size(), 10u);
  EXPECT_TRUE(traced.count("transformer.h.1.mlp.c_fc#0:LinearBackward")) << "keys name the module path";
  for (const planner::TraceBlock& block : trace.blocks)
    EXPECT_EQ(block.path.rfind("transformer.h.", 0), 0u) << block.path;
}

TEST(SaveKey, RulesWrittenWithNamedModulesPathsMatch) {
  manual_seed(2);
  models::GPT model(models::GPTConfig::preset("tiny"));
  const auto modules = model.named_modules();
  ASSERT_TRUE(modules.contains("transformer.h.1"));
  ASSERT_TRUE(modules.contains("transformer.h.0.mlp.c_fc"));
  const Batch b = batch();
  // What block 1 saves goes to the host pool; an op-level rule on c_fc's scope drops its input
  // (layer norm makes it again).
  auto cache = TensorCache::create(
      every_size(), parse_cache_policy("rules:transformer.h.1*=host;transformer.h.0.mlp.c_fc=recompute;*=keep", 0));
  autograd::SavePolicyGuard guard(cache);
  cache->begin_step();
  model.loss(b.idx, b.targets).backward();
  CacheStats s = cache->end_step();
  EXPECT_GT(s.host.tensors_written, 0u) << "block 1's tensors went to the host pool";
  EXPECT_EQ(s.op_recompute_drops, 1u) << "c_fc's input was dropped";
  EXPECT_TRUE(s.warnings.empty()) << s.warnings.front();
}
