// The models the tensor cache's parity suite trains (cache_parity_test.cpp): the tiny GPT and BERT
// with dropout, and two-layer GAT, GraphSAGE, RGCN, RGAT and HGT node classifiers, each layer or
// transformer block a planner block. Each is a ParityModel: how to train it under a policy, the
// cache options its tiers are sized by, and its reference run (every tensor kept and counted).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "memory/cache_parity.h"
#include "strata/io/text/mlm_batches.h"
#include "strata/models/bert.h"
#include "strata/models/gnn.h"
#include "strata/models/gpt.h"
#include "strata/strata.h"
#include "support/token_batch.h"

namespace strata::test {

// What step 0 saves, counted by CountingPolicy.
struct SaveCounts {
  size_t tensors_inside = 0, tensors_outside = 0;
  uint64_t bytes_inside = 0, bytes_outside = 0;
};

struct ParityModel {
  using Train = std::function<TrainResult(std::shared_ptr<autograd::SavePolicy> policy, int steps,
                                          memory::TensorCache* cache, CountingPolicy* counter)>;
  std::string name;
  int steps = 3;      // optimizer steps of every run
  size_t blocks = 0;  // planner blocks (each recomputed once under "recompute")
  // A policy mixing the tiers by block names ("": the model has none in the suite).
  std::string mixed_rules;
  // Every step's batch saves what step 0's does (else only step 0's bytes are compared).
  bool same_saves_every_step = true;
  Train train;
  std::function<memory::TensorCacheOptions()> options;

  // The run with every tensor kept and counted (made once).
  const TrainResult& reference() const {
    static std::map<std::string, TrainResult> done;
    auto it = done.find(name);
    if (it == done.end()) {
      auto counter = std::make_shared<CountingPolicy>();
      it = done.emplace(name, train(counter, steps, nullptr, counter.get())).first;
    }
    return it->second;
  }
  SaveCounts counts() const {
    auto counter = std::make_shared<CountingPolicy>();
    train(counter, 1, nullptr, counter.get());
    return {counter->tensors_inside(), counter->tensors_outside(), counter->bytes_inside,
            counter->bytes_outside};
  }
};

// Trains `steps` steps of `m` under `policy`, which recomputes op outputs: the reference's bits
// (`what` names the run), and in every step `per_step` outputs dropped and made again, no
// recompute segment and no warning. Returns the run.
inline TrainResult expect_op_level_recompute(const ParityModel& m,
                                             std::shared_ptr<memory::CachePolicy> policy, int steps,
                                             size_t per_step, const std::string& what) {
  auto cache = memory::TensorCache::create(m.options(), std::move(policy));
  TrainResult run = m.train(cache, steps, cache.get(), nullptr);
  expect_identical(m.reference(), run, what);
  for (const memory::CacheStats& s : run.stats) {
    EXPECT_EQ(s.op_recompute_drops, per_step);
    EXPECT_EQ(s.op_recomputes, per_step);
    EXPECT_EQ(s.segments, 0u);
    EXPECT_TRUE(s.warnings.empty()) << s.warnings.front();
  }
  return run;
}
// The same for a policy spec (memory::parse_cache_policy, nothing kept unsaved).
inline TrainResult expect_op_level_recompute(const ParityModel& m, const std::string& spec, int steps,
                                             size_t per_step, const std::string& what) {
  return expect_op_level_recompute(m, memory::parse_cache_policy(spec, 0), steps, per_step, what);
}

inline models::GPTConfig parity_gpt_config() {
  models::GPTConfig c = models::GPTConfig::preset("tiny");
  c.dropout = 0.1;
  return c;
}

inline models::BertConfig parity_bert_config() {
  models::BertConfig c = models::BertConfig::preset("tiny");
  c.hidden_dropout_prob = 0.1;
  return c;
}

namespace parity_detail {

inline std::pair<Tensor, Tensor> gpt_batch(int step) {
  return strata::testing::token_batch(2, 32, {.x_add = step * 7, .y_add = step * 5 + 1});
}

// Padded MLM batches (short samples, two segments) from fixed windows.
inline io::MlmBatch bert_batch(int step) {
  io::MlmOptions o;
  o.batch = 4, o.seq_len = 48, o.short_seq_prob = 0.5, o.seed = 11;
  std::vector<int64_t> w(size_t(o.batch * o.content_len()));
  for (size_t i = 0; i < w.size(); ++i) w[i] = int64_t((i * 29 + size_t(step) * 13) % 256);
  return io::make_mlm_batch(w, o, uint64_t(step));
}

constexpr int64_t kNodes = 97, kFeatures = 12, kClasses = 3;

struct GraphBatch {
  Graph graph;
  Tensor x, labels;
};

inline uint64_t lcg(uint64_t* st) {
  return (*st = *st * 6364136223846793005ull + 1442695040888963407ull) >> 33;
}

// A random graph with duplicates and loops, isolated nodes, and labels; the same for every step.
inline const GraphBatch& plain_graph() {
  static const GraphBatch b = [] {
    std::vector<int64_t> s, d, y;
    uint64_t st = 99;
    for (int e = 0; e < 500; ++e)
      s.push_back(int64_t(lcg(&st) % (kNodes - 3))), d.push_back(int64_t(lcg(&st) % (kNodes - 3)));
    for (int64_t v = 0; v < kNodes; ++v) y.push_back(int64_t(lcg(&st) % kClasses));
    GraphBatch out;
    out.graph = Graph::from_edges(kNodes, ops::from_vector(s, {int64_t(s.size())}),
                                  ops::from_vector(d, {int64_t(d.size())}));
    manual_seed(7);
    out.x = ops::randn({kNodes, kFeatures});
    out.labels = ops::from_vector(y, {kNodes});
    return out;
  }();
  return b;
}

// Types a (nodes 0-59) and b (60-96); relations a->a, a->b, b->a.
inline const std::vector<std::string> kTypes{"a", "b"};
inline const std::vector<Relation> kRelations{{0, "aa", 0}, {0, "ab", 1}, {1, "ba", 0}};

// A random typed graph with duplicate edges and nodes without in-edges, and labels.
inline const GraphBatch& typed_graph() {
  static const GraphBatch b = [] {
    std::vector<int64_t> s, d, r, y;
    uint64_t st = 99;
    for (int e = 0; e < 600; ++e) {
      const int64_t rel = int64_t(lcg(&st) % 3);
      auto pick = [&](int64_t type) {
        return type == 0 ? int64_t(lcg(&st) % 55) : 60 + int64_t(lcg(&st) % 37);
      };
      s.push_back(pick(kRelations[size_t(rel)].src_type));
      d.push_back(pick(kRelations[size_t(rel)].dst_type));
      r.push_back(rel);
    }
    for (int64_t v = 0; v < kNodes; ++v) y.push_back(int64_t(lcg(&st) % kClasses));
    GraphBatch out;
    const int64_t E = int64_t(s.size());
    out.graph = Graph::from_typed_edges(kTypes, {60, 37}, kRelations, ops::from_vector(s, {E}),
                                        ops::from_vector(d, {E}), ops::from_vector(r, {E}));
    manual_seed(7);
    out.x = ops::randn({kNodes, kFeatures});
    out.labels = ops::from_vector(y, {kNodes});
    return out;
  }();
  return b;
}

inline models::GNNConfig gnn_config(const std::string& conv) {
  models::GNNConfig c;
  c.conv = conv, c.in_channels = kFeatures, c.hidden_channels = 6, c.num_classes = kClasses, c.heads = 2;
  c.dropout = 0.2, c.attention_dropout = conv == "gat" ? 0.1 : 0.0, c.aggr = "max";
  if (c.relational())
    c.node_types = kTypes, c.relations = kRelations, c.num_bases = conv == "rgcn" ? 2 : 0,
    c.materialization = "compact";
  return c;
}

}  // namespace parity_detail

// "gpt", "bert", or a GNN conv: "gat", "sage", "rgcn", "rgat", "hgt".
inline ParityModel parity_model(const std::string& name) {
  using namespace parity_detail;
  ParityModel m;
  m.name = name;
  if (name == "gpt") {
    m.steps = 5;
    m.blocks = size_t(parity_gpt_config().n_layer);
    m.mixed_rules = "rules:transformer.h.0*=nvme;transformer.h.1*=recompute;*=host";
    m.options = [] { return parity_cache_options("cache", 8 << 20, 16 << 20); };
    m.train = [](std::shared_ptr<autograd::SavePolicy> policy, int steps, memory::TensorCache* cache,
                 CountingPolicy* counter) {
      manual_seed(1234);
      models::GPT model(parity_gpt_config());
      optim::AdamW opt(model.parameters(), optim::AdamWOptions(1e-2).weight_decay(0.1));
      return train_steps(policy, steps, cache, counter, model, opt, gpt_batch,
                         [&](const std::pair<Tensor, Tensor>& b) { return model.loss(b.first, b.second); });
    };
  } else if (name == "bert") {
    m.blocks = size_t(parity_bert_config().num_hidden_layers);
    m.mixed_rules = "rules:bert.encoder.layer.0*=nvme;bert.encoder.layer.1*=recompute;*=host";
    m.same_saves_every_step = false;  // later batches label a different number of rows
    m.options = [] { return parity_cache_options("bert_cache", 16 << 20, 32 << 20); };
    m.train = [](std::shared_ptr<autograd::SavePolicy> policy, int steps, memory::TensorCache* cache,
                 CountingPolicy* counter) {
      manual_seed(4321);
      models::BertForMaskedLM model(parity_bert_config());
      optim::AdamW opt(model.parameters(), optim::AdamWOptions(1e-2).weight_decay(0.01));
      return train_steps(policy, steps, cache, counter, model, opt, bert_batch, [&](const io::MlmBatch& b) {
        return model.loss(b.input_ids, b.token_type_ids, b.attention_mask, b.labels);
      });
    };
  } else {
    m.blocks = 2;
    m.options = [] { return parity_cache_options("gnn_cache", 16 << 20, 32 << 20); };
    m.train = [name](std::shared_ptr<autograd::SavePolicy> policy, int steps, memory::TensorCache* cache,
                     CountingPolicy* counter) {
      const models::GNNConfig c = gnn_config(name);
      const GraphBatch& data = c.relational() ? typed_graph() : plain_graph();  // made before the seed
      manual_seed(4321);
      models::GNN model(c);
      optim::AdamW opt(model.parameters(), optim::AdamWOptions(1e-2));
      return train_steps(
          policy, steps, cache, counter, model, opt, [&](int) { return data; },
          [&](const GraphBatch& b) { return ops::cross_entropy(model.forward(b.graph, b.x), b.labels); });
    };
  }
  return m;
}

}  // namespace strata::test
