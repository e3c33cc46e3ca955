// train_gnn: trains a GNN node classifier (GCN, GraphSAGE, GAT). With no arguments it trains a
// 2-layer GraphSAGE on a degree-corrected stochastic block model with planted classes (or on
// polblogs when data/graphs/polblogs.gt.gz exists: tools/setup.sh with STRATA_GRAPH_DATA=1) for
// 200 full-graph epochs with Adam, printing step, loss, train/validation/test accuracy and the
// three memory figures, and at the end the test accuracy at the best validation accuracy.
// Graph-tool files, edge lists, OGB raw folders and Planetoid raw text load with the flags of
// --help; --fanouts trains on sampled minibatches made on loader threads, their features gathered
// from memory, a feature file or page-locked memory (--feature-store). --model rgcn|rgat|hgt
// classifies the labelled entities of a typed graph (a typed R-MAT by default); --task link
// trains a link predictor on knowledge-graph triples (link_prediction.cpp). See --help.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "examples/common/checkpointing.h"
#include "examples/common/lr_schedule.h"
#include "examples/common/trainer_loop.h"
#include "examples/common/trainer_setup.h"
#include "examples/train_gnn/gnn_data.h"
#include "examples/train_gnn/link_prediction.h"
#include "examples/train_gnn/train_options.h"
#include "strata/core/output_path.h"
#include "strata/io/checkpoint/checkpoint.h"
#include "strata/io/graphs/graph_loader.h"
#include "strata/models/gnn.h"
#include "strata/strata.h"

using namespace strata;
using strata::examples::GnnTrainOptions;

namespace {

// The nodes of a boolean mask, i64 [K] on the CPU.
Tensor nodes_of(const Tensor& mask) {
  std::vector<int64_t> out;
  const std::vector<double> m = mask.to_double_vector();
  for (size_t i = 0; i < m.size(); ++i)
    if (m[i] != 0) out.push_back(int64_t(i));
  return ops::from_vector(out, {int64_t(out.size())});
}

double accuracy(const Tensor& logits, const Tensor& labels) {
  if (labels.numel() == 0) return NAN;
  const std::vector<int64_t> pred = ops::argmax(logits, 1).to_vector<int64_t>(),
                             y = labels.to_vector<int64_t>();
  int64_t correct = 0;
  for (size_t i = 0; i < y.size(); ++i) correct += pred[i] == y[i];
  return double(correct) / double(y.size());
}

// The node classifier being trained: models::GNN (gcn, sage, gat: full graph or sampled blocks;
// rgcn, rgat, hgt: full graph, over the typed graph's node types and relations).
// A typed graph whose node types differ in feature width (or where some have none) starts with a
// typed input that brings every type to --hidden (GNNConfig::type_in_channels).
std::shared_ptr<models::GNN> make_classifier(const GnnTrainOptions& o, const io::GraphDataset& data) {
  models::GNNConfig g = o.model;
  const Graph& graph = data.graph;
  STRATA_CHECK(data.typed_features.empty() || o.relational(), ValueError, "--model ", o.model.conv, ": ",
               data.name, "'s node types differ in feature width or some have none, and ", o.model.conv,
               " reads one feature row per node; rgcn, rgat and hgt project each type first");
  g.in_channels = data.typed_features.empty() ? data.features.size(1) : g.hidden_channels;
  for (int64_t t = 0; t < graph.num_node_types() && !data.typed_features.empty(); ++t) {
    const auto it = data.typed_features.find(graph.node_types()[size_t(t)]);
    g.type_in_channels.push_back(it == data.typed_features.end() ? 0 : it->second.size(1));
    g.type_num_nodes.push_back(graph.nodes_of_type(t));
  }
  g.num_classes = data.num_classes;
  if (o.relational()) {
    g.node_types = data.graph.node_types();
    g.relations = data.graph.relations();
    g.num_bases = o.config.num_bases();
    g.materialization = o.config.materialization();
    g.reorder = o.config.reorder();
  }
  return std::make_shared<models::GNN>(g);
}

struct Split {
  Tensor nodes, labels;  // on the device
};

// The dataset the flags name, written to --save-data when asked for (its path checked before a long
// load); `seconds` is the time the load took.
std::shared_ptr<io::GraphDataset> load_data(const examples::TrainGnnConfig& c, double* seconds) {
  if (!c.save_data().empty()) check_output_file(c.save_data(), "--save-data");
  const auto t0 = std::chrono::steady_clock::now();
  std::shared_ptr<io::GraphDataset> data = examples::make_gnn_data(c);
  *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!c.save_data().empty()) {
    examples::save_gnn_data(*data, c.save_data());
    std::printf("dataset written to %s\n", c.save_data().c_str());
  }
  return data;
}

// The training, validation and test nodes, and the training nodes on the CPU (the sampler's seeds).
struct Splits {
  Split train, val, test;
  Tensor train_nodes;
};

Splits make_splits(const io::GraphDataset& data, Device device) {
  Splits s;
  s.train_nodes = nodes_of(data.train_mask);
  STRATA_CHECK(s.train_nodes.numel() > 0, ValueError, data.name, ": no training nodes");
  auto split = [&](const Tensor& nodes) {
    return Split{nodes.to(device), ops::index_select(data.labels, 0, nodes).to(device)};
  };
  s.train = split(s.train_nodes), s.val = split(nodes_of(data.val_mask)),
  s.test = split(nodes_of(data.test_mask));
  return s;
}

// The training batches, from one pipeline. Without --fanouts: the whole graph, one batch of every
// training node per epoch, made when the step asks (no blocks: the step runs on the whole graph,
// typed or not). With --fanouts: sampled minibatches made on loader threads; with --feature-store
// file|pinned those threads gather each batch's input rows from the store onto the device, instead
// of from the dataset's tensor (which the loader then does not see).
struct Batches {
  std::unique_ptr<io::FeatureStore> store;
  std::unique_ptr<io::GraphBatchLoader> loader;
  bool sampled() const { return !loader->options().full_graph; }
};

Batches make_batches(const GnnTrainOptions& o, const std::shared_ptr<io::GraphDataset>& data,
                     const Tensor& train_nodes, Device device, const dist::ProcessGroup* pg) {
  Batches m;
  const examples::TrainGnnConfig& c = o.config;
  if (o.fanouts.empty()) {
    m.loader = std::make_unique<io::GraphBatchLoader>(
        data, train_nodes, io::GraphLoaderOptions{.fanouts = {}, .full_graph = true, .num_workers = 0});
    return m;
  }
  m.store = examples::open_feature_store(c, o.feature_budget_bytes, *data, device);
  io::GraphLoaderOptions lo{.batch = c.run().batch_size(),
                            .fanouts = o.fanouts,
                            .shuffle = true,
                            .seed = c.run().seed(),
                            .num_workers = int(c.workers()),
                            .prefetch = c.prefetch(),
                            .rank = pg ? pg->rank() : 0,
                            .world_size = pg ? pg->size() : 1};
  std::shared_ptr<const io::GraphDataset> loader_data = data;
  if (m.store) {
    auto without_features = std::make_shared<io::GraphDataset>(*data);
    without_features->features = Tensor();
    loader_data = without_features;
    lo.transform = [s = m.store.get(), device](io::GraphMiniBatch& b) {
      const io::SampledBlock& input = b.blocks.front();
      b.features = s->gather(input.nodes.narrow(0, 0, input.num_src()), device);
    };
  }
  m.loader = std::make_unique<io::GraphBatchLoader>(loader_data, train_nodes, lo);
  return m;
}

// The whole graph's input features on the device: one row per node, or each node type's rows.
struct NodeFeatures {
  Tensor rows;
  std::map<std::string, Tensor> typed;
  NodeFeatures(const io::GraphDataset& data, Device device) {
    if (data.features.defined()) rows = data.features.to(device);
    for (const auto& [type, x] : data.typed_features) typed[type] = x.to(device);
  }
  Tensor logits(models::GNN& model, const Graph& g) const {
    return typed.empty() ? model.forward(g, rows) : model.forward(g, typed);
  }
};

struct Scores {
  double train = NAN, val = NAN, test = NAN, loss = NAN;
};

// Full-graph forward in eval mode: accuracy on each split, and the validation loss.
Scores evaluate(models::GNN& model, const Graph& g, const NodeFeatures& x, const Splits& splits) {
  const Split &train = splits.train, &val = splits.val, &test = splits.test;
  NoGradGuard ng;
  model.eval();
  Tensor logits = x.logits(model, g);
  Scores s;
  auto on = [&](const Split& sp) { return ops::gather_rows(logits, sp.nodes); };
  s.train = accuracy(on(train), train.labels);
  if (val.labels.numel()) {
    s.val = accuracy(on(val), val.labels);
    s.loss = ops::cross_entropy(on(val), val.labels).item();
  }
  if (test.labels.numel()) s.test = accuracy(on(test), test.labels);
  model.train();
  return s;
}

// The latest evaluation, and the one with the best validation accuracy so far and its step.
struct EvalHistory {
  Scores last, best;
  int64_t best_step = -1;
  void add(const Scores& s, int64_t step) {
    last = s;
    if (best_step < 0 || s.val > best.val) best = s, best_step = step;
  }
};

// What the run prints before the first step: the model, the data and its split, the minibatches,
// a relational model's plans, the device.
void print_run(const GnnTrainOptions& o, const models::GNN& model, const io::GraphDataset& data,
               const Splits& splits, const Batches& m, double load_seconds, const Graph& graph,
               const examples::DataParallel& ranks) {
  const examples::TrainGnnConfig& c = o.config;
  std::string features = detail::concat(data.features.defined() ? data.features.size(1) : 0, " features");
  if (model.input) {  // per node type: its width, or "learned" for a type without features
    const std::vector<nn::TypedNodeInput::NodeType>& types = model.input->node_types();
    features = "features per type (";
    for (size_t t = 0; t < types.size(); ++t)
      features += detail::concat(t ? ", " : "", types[t].name, " ",
                                 types[t].width ? std::to_string(types[t].width) : std::string("learned"));
    features += detail::concat("; each projected to ", model.config().in_channels, ")");
  }
  std::printf(
      "%s\n  %ld parameters; data: %s: %ld nodes, %ld edges, %s, %ld classes (loaded in %.1f s)\n"
      "  split: %ld train, %ld val, %ld test nodes\n",
      o.describe().c_str(), long(model.num_parameters()), data.name.c_str(), long(data.graph.num_nodes()),
      long(data.graph.num_edges()), features.c_str(), long(data.num_classes), load_seconds,
      long(splits.train.nodes.numel()), long(splits.val.nodes.numel()), long(splits.test.nodes.numel()));
  if (m.sampled())
    std::printf("  %ld minibatches/epoch, %ld sampler thread(s), %ld prefetched\n",
                long(m.loader->batches_per_epoch()), long(c.workers()), long(c.prefetch()));
  if (m.store)
    std::printf("  features: %s store, %s (%.1f MB)\n", c.feature_store().c_str(), m.store->source().c_str(),
                double(m.store->num_rows() * m.store->row_bytes()) / 1e6);
  if (o.relational()) {
    std::printf("  %ld node types, %ld relations\n", long(data.graph.num_node_types()),
                long(data.graph.num_relations()));
    const std::vector<std::string> plans = model.plans(graph);
    for (size_t l = 0; l < plans.size(); ++l) std::printf("  convs.%zu: %s\n", l, plans[l].c_str());
  }
  if (ranks.group()) std::printf("  %s\n", ranks.describe().c_str());
}

std::string percent(double v) {
  return std::isnan(v) ? std::string("  -  ") : detail::concat(std::lround(1000 * v) / 10.0, "%");
}

int train_gnn(GnnTrainOptions& o, examples::TrainerRun& trainer_run) {
  examples::refuse_zero_stage_3(o.config.data_parallel(), "train_gnn");
  STRATA_CHECK(
      !dist::launch_env().launched() || o.link_prediction() || !o.fanouts.empty(), ValueError,
      "train_gnn under mpirun shares each step's batches across the ranks, and a full-graph step has "
      "one: give --fanouts (sampled minibatches, seeds sharded across the ranks), or start it without "
      "mpirun");
  if (o.link_prediction()) return examples::train_link_prediction(o, trainer_run);
  const examples::TrainGnnConfig& c = o.config;
  const examples::RunConfig& run = c.run();
  const examples::TrainerStart start = examples::start_trainer(run, c.data_parallel(), trainer_run);
  const Device device = start.dev.device;
  dist::ProcessGroup* pg = start.group;
  const bool lead = start.lead;  // logs, evaluates, writes checkpoints
  const std::string ckpt_dir = examples::checkpoint_dir(run);

  // ---- data ----
  double load_seconds = 0;
  const std::shared_ptr<io::GraphDataset> data = load_data(c, &load_seconds);
  const Splits splits = make_splits(*data, device);
  const Graph graph = data->graph.to(device);
  const NodeFeatures features(*data, device);
  const examples::RunRecord record{o.describe(), io::data_identity(*data), run.allow_other_data()};

  // ---- model and optimizer ----
  manual_seed(run.seed());
  const std::shared_ptr<models::GNN> classifier = make_classifier(o, *data);
  models::GNN& model = *classifier;
  // Paged weights go straight from the CPU to where they live: the device never holds them all.
  const examples::PlacedModel placed = examples::place_with_adamw(c, start, trainer_run, classifier, 1e-8);
  const examples::DataParallel& ranks = *placed.ranks;
  const examples::TrainerAdamW& opt = placed.opt;
  examples::LrScheduleOptions schedule = examples::lr_schedule_options(c.schedule(), run);
  schedule.timed_steps = 4;
  examples::LrSchedule sched(schedule);

  const Batches batches = make_batches(o, data, splits.train_nodes, device, pg);
  io::GraphBatchLoader& loader = *batches.loader;

  int64_t first_step = 0;
  if (run.resume()) {
    const io::CheckpointState st = examples::resume_ranks(ckpt_dir, record, model, ranks);
    opt.load(st.optimizer);
    first_step = st.step;
    loader.set_cursor(st.data);
  }
  auto save = [&](int64_t at_step) {
    // opt.checkpoint() is collective under ZeRO: every rank calls save().
    const io::CheckpointState st = opt.checkpoint(record, at_step, loader.cursor(), model, ranks.world());
    if (lead) io::save_checkpoint(ckpt_dir, st);
  };

  if (lead) print_run(o, model, *data, splits, batches, load_seconds, graph, ranks);

  examples::TrainLoop loop(examples::loop_parts(c, start, placed, sched, o.cache, trainer_run, first_step));
  int64_t epoch = 0;
  EvalHistory history;
  bool reached = false;
  while (loop.keep_going()) {
    loop.run_step([&] {
      const io::GraphMiniBatch batch = loader.next();
      epoch = batch.epoch;
      const Tensor labels = batch.labels.to(device);
      if (batch.blocks.empty())  // the whole graph: every node's logits, the seeds' rows
        return ops::cross_entropy(ops::gather_rows(features.logits(model, graph), batch.seeds.to(device)),
                                  labels);
      std::vector<nn::GraphBlock> blocks;
      for (const io::SampledBlock& b : batch.blocks) blocks.emplace_back(b.graph.to(device), b.num_dst);
      return ops::cross_entropy(model.forward(blocks, batch.features.to(device)), labels);
    });
    const bool eval_now =
        lead && (loop.eval_due() || (run.eval_every() > 0 && loop.step() == run.max_steps()));
    if (eval_now) {
      history.add(evaluate(model, graph, features, splits), loop.step());
      loop.report("train/accuracy", history.last.train);
      loop.report("val/accuracy", history.last.val);
      loop.report("val/loss", history.last.loss);
    }
    const Scores& last = history.last;
    if (loop.log_due(eval_now))
      loop.print_step_line(
          {examples::field("epoch %ld", long(epoch)), examples::field("loss %.4f", loop.last_loss()),
           "acc train " + percent(last.train) + " val " + percent(last.val) + " test " + percent(last.test),
           examples::field("%7.1f ms/step", 1e3 * loop.step_seconds())});
    if (loop.checkpoint_due()) save(loop.step());
    // Rank 0's evaluation decides, so that every rank stops at the same step.
    reached = c.target_accuracy() > 0 && eval_now && last.val >= c.target_accuracy();
    if (pg && c.target_accuracy() > 0) reached = pg->all_reduce_scalar(reached ? 1.0 : 0.0) > 0;
    if (reached) {
      if (lead)
        std::printf("reached %.1f%% validation accuracy at step %ld, %.1f s\n", 100 * last.val,
                    long(loop.step()), loop.elapsed());
      break;
    }
  }
  loop.finish();
  const double train_seconds = loop.elapsed();
  const int64_t step = loop.step();
  if (loop.steps_run() > 0) save(step);
  if (!lead) return 0;
  const Scores final_scores = evaluate(model, graph, features, splits);
  history.add(final_scores, step);
  const Scores& best = history.best;
  std::printf(
      "final: step %ld, train loss %.4f, accuracy train %s, val %s, test %s; best val %s at step %ld "
      "(test %s there), %.1f s\n",
      long(step), loop.last_loss(), percent(final_scores.train).c_str(), percent(final_scores.val).c_str(),
      percent(final_scores.test).c_str(), percent(best.val).c_str(), long(history.best_step),
      percent(best.test).c_str(), train_seconds);
  if (c.target_accuracy() > 0 && !reached)
    std::printf("target %.1f%% validation accuracy not reached\n", 100 * c.target_accuracy());
  std::printf("checkpoint: %s\n", ckpt_dir.c_str());
  loop.print_timing(nullptr, 0,
                    batches.sampled() ? examples::field("; the sampler kept the trainer waiting %g s",
                                                        loader.wait_seconds())
                                      : "");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return examples::run_trainer_main("train_gnn", argc, argv, &examples::parse_gnn_train_options, &train_gnn);
}
