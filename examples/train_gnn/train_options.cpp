#include "examples/train_gnn/train_options.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <sstream>

#include "examples/common/cache_settings.h"
#include "examples/common/config_flags.h"
#include "examples/common/shared_flags.h"
#include "examples/common/trainer_settings.h"
#include "strata/core/byte_size.h"

namespace strata::examples {

namespace {

// train_gnn's defaults, in the config file's format; what is left out is 0, false or empty. 200
// full-graph epochs of a 2-layer GraphSAGE with Adam (PyG's examples' recipe).
constexpr const char* kDefaults = R"pb(
  task: "node"
  model: "sage"
  hidden: 64
  layers: 2
  heads: 8
  aggr: "mean"
  dropout: 0.5
  dcsbm_nodes: 3000
  dcsbm_classes: 5
  dcsbm_degree: 10
  dcsbm_mixing: 0.2
  dcsbm_features: 32
  dcsbm_signal: 1.0
  rmat_edge_factor: 16
  undirected: true
  label_property: "value"
  train_fraction: 0.6
  val_fraction: 0.2
  workers: 2
  prefetch: 4
  feature_store: "memory"
  num_bases: 0
  materialization: "auto"
  reorder: "auto"
  typed_rmat_edges: 50000
  typed_rmat_classes: 16
  encoder: "rgcn"
  negatives: 32
  filter_negatives: true
  link_loss: "1-n"
  run { batch_size: 512 max_steps: 200 seed: 1337 eval_every: 10 log_every: 10 out_dir: "out/train_gnn" }
  schedule { lr: 0.01 warmup_steps: 0 min_lr: 0.01 }
  optim { weight_decay: 5e-4 }
)pb";

std::vector<int64_t> parse_fanouts(const std::string& text) {
  std::vector<int64_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      out.push_back(std::stoll(item, &used));
      STRATA_CHECK(used == item.size() && (out.back() > 0 || out.back() == -1), ValueError, "");
    } catch (const std::exception&) {
      throw ValueError("--fanouts '" + text + "' is not a comma-separated list of positive counts (or -1)");
    }
  }
  return out;
}

// Whether `set` (the flags and the config file) sets `field`, and the flag that sets it.
bool is_set(const TrainGnnConfig& set, const std::string& field) {
  return set.GetReflection()->HasField(set, set.GetDescriptor()->FindFieldByName(field));
}
std::string flag_of(std::string field) {
  std::replace(field.begin(), field.end(), '_', '-');
  return "--" + field;
}

// --task link's defaults where the flags and the config file leave them: DistMult's usual width,
// one rgcn layer of 10 bases, no dropout between rgcn layers, and a run that trains UMLS and
// Kinships in a minute. The embeddings overfit those sets within a few epochs, so each loss has
// the regularization that gave it the best validation MRR there (tools/bench/link_prediction.py):
// 1-N scoring large batches, query dropout 0.5 and decoupled weight decay 0.3; negative sampling
// weight decay 1.0.
void apply_link_defaults(const TrainGnnConfig& set, TrainGnnConfig* c) {
  const bool one_to_n = c->link_loss() == "1-n";
  if (!set.has_hidden()) c->set_hidden(200);
  if (!set.has_layers()) c->set_layers(1);
  if (!set.has_num_bases()) c->set_num_bases(10);
  if (!set.has_dropout()) c->set_dropout(0.0);
  if (!set.has_query_dropout()) c->set_query_dropout(one_to_n ? 0.5 : 0.0);
  RunConfig& run = *c->mutable_run();
  if (!set.run().has_batch_size()) run.set_batch_size(one_to_n ? 2048 : 512);
  if (!set.run().has_max_steps() && !set.run().has_max_seconds()) run.set_max_steps(1000);
  if (!set.run().has_eval_every()) run.set_eval_every(100);
  if (!set.run().has_log_every()) run.set_log_every(100);
  if (!set.run().has_out_dir()) run.set_out_dir("out/train_gnn_link");
  if (!set.optim().has_weight_decay()) c->mutable_optim()->set_weight_decay(one_to_n ? 0.3 : 1.0);
}

// The settings node classification reads, checked together.
void check_node_options(const TrainGnnConfig& set, const GnnTrainOptions& o) {
  const TrainGnnConfig& c = o.config;
  STRATA_CHECK(c.model() == "gcn" || c.model() == "sage" || c.model() == "gat" || o.relational(), ValueError,
               "--model '", c.model(), "' is not one of gcn, sage, gat, rgcn, rgat, hgt");
  for (const char* field : {"kg", "encoder", "negatives", "filter_negatives", "link_loss", "query_dropout"})
    STRATA_CHECK(!is_set(set, field), ValueError, flag_of(field), " applies to --task link");
  if (o.relational()) {
    STRATA_CHECK(o.fanouts.empty(), ValueError, "--fanouts: --model ", c.model(),
                 " trains on the full graph (sampled minibatches of a typed graph are not supported; leave "
                 "--fanouts out)");
  } else {
    STRATA_CHECK(!set.has_typed_rmat_edges() && !set.has_typed_rmat_classes(), ValueError,
                 "--typed-rmat-edges and --typed-rmat-classes need --model rgcn, rgat or hgt");
    STRATA_CHECK(!set.has_num_bases() && !set.has_materialization() && !set.has_reorder(), ValueError,
                 "--num-bases, --materialization and --reorder need --model rgcn, rgat or hgt");
  }
  const bool attention = c.model() == "rgat" || c.model() == "hgt";
  STRATA_CHECK(attention || o.reorder == std::nullopt, ValueError, "--reorder ", c.reorder(),
               " applies to --model rgat and hgt");
  STRATA_CHECK(!attention || o.materialization != nn::Materialization::kAggregateFirst, ValueError,
               "--materialization aggregate_first does not apply to --model ", c.model(),
               " (attention weighs each edge's message)");
  STRATA_CHECK(!attention || c.num_bases() == 0, ValueError, "--num-bases applies to --model rgcn");
  // The model's own checks (GNNConfig::validate) run after the data loads and name its fields:
  // the flags are checked here, first, by their names.
  STRATA_CHECK(c.layers() >= 1, ValueError, "--layers ", c.layers(), " must be at least 1");
  STRATA_CHECK(c.hidden() >= 1, ValueError, "--hidden ", c.hidden(), " must be at least 1");
  STRATA_CHECK(c.heads() >= 1, ValueError, "--heads ", c.heads(), " must be at least 1");
  STRATA_CHECK(c.aggr() == "mean" || c.aggr() == "sum" || c.aggr() == "max" || c.aggr() == "min", ValueError,
               "--aggr '", c.aggr(), "' is not one of mean, sum, max, min");
  STRATA_CHECK(o.model.dropout >= 0 && o.model.dropout < 1, ValueError, "--dropout ", o.model.dropout,
               " must be in [0, 1)");
  STRATA_CHECK(c.attention_dropout() >= 0 && c.attention_dropout() < 1, ValueError, "--attention-dropout ",
               c.attention_dropout(), " must be in [0, 1)");
  STRATA_CHECK(c.train_fraction() >= 0 && c.train_fraction() <= 1 && c.val_fraction() >= 0 &&
                   c.val_fraction() <= 1 && c.train_fraction() + c.val_fraction() <= 1,
               ValueError, "--train-fraction ", c.train_fraction(), " and --val-fraction ", c.val_fraction(),
               " must be fractions in [0, 1] with a sum of at most 1");
  STRATA_CHECK(c.model() != "hgt" || o.model.hidden_channels % o.model.heads == 0, ValueError, "--hidden ",
               o.model.hidden_channels, " must be divisible by --heads ", o.model.heads, " for --model hgt");
  STRATA_CHECK(c.num_bases() >= 0, ValueError, "--num-bases ", c.num_bases(), " must be at least 0");
  STRATA_CHECK(c.feature_store() == "memory" || c.feature_store() == "file" || c.feature_store() == "pinned",
               ValueError, "--feature-store '", c.feature_store(), "' is not one of memory, file, pinned");
  STRATA_CHECK(c.feature_store() == "memory" || !o.fanouts.empty(), ValueError, "--feature-store ",
               c.feature_store(), " gathers sampled minibatches' features: it needs --fanouts");
  STRATA_CHECK(c.feature_store() != "file" || !c.feature_file().empty(), ValueError,
               "--feature-store file needs --feature-file PATH (.npy)");
  STRATA_CHECK(c.feature_store() != "memory" || c.feature_file().empty(), ValueError,
               "--feature-file applies to --feature-store file or pinned");
  STRATA_CHECK(c.feature_store() == "file" || !set.has_feature_budget(), ValueError,
               "--feature-budget applies to --feature-store file");
  STRATA_CHECK(c.typed_rmat_edges() > 0 && c.typed_rmat_classes() >= 2, ValueError, "--typed-rmat-edges ",
               c.typed_rmat_edges(), " must be positive and --typed-rmat-classes ", c.typed_rmat_classes(),
               " at least 2");
}

// The settings link prediction reads, checked together; the node task's flags are refused.
void check_link_options(const TrainGnnConfig& set, const GnnTrainOptions& o) {
  const TrainGnnConfig& c = o.config;
  STRATA_CHECK(!c.kg().empty(), ValueError, "--task link needs --kg DIR (train.txt, valid.txt, test.txt)");
  STRATA_CHECK(c.encoder() == "rgcn" || c.encoder() == "none", ValueError, "--encoder '", c.encoder(),
               "' is not one of rgcn, none");
  for (const char* field : {"model",
                            "graph",
                            "edge_list",
                            "node_file",
                            "ogb",
                            "ogb_split",
                            "planetoid",
                            "max_nodes",
                            "rmat_scale",
                            "fanouts",
                            "reorder",
                            "typed_rmat_edges",
                            "typed_rmat_classes",
                            "target_accuracy",
                            "random_labels",
                            "save_data",
                            "hetero_data",
                            "feature_store",
                            "feature_file",
                            "feature_budget"})
    STRATA_CHECK(!is_set(set, field), ValueError, flag_of(field),
                 " applies to --task node (--task link reads the --kg triples, a DistMult decoder over "
                 "--encoder rgcn|none)");
  STRATA_CHECK(c.link_loss() == "1-n" || c.link_loss() == "negative-sampling", ValueError, "--link-loss '",
               c.link_loss(), "' is not one of 1-n, negative-sampling");
  STRATA_CHECK(c.link_loss() == "negative-sampling" || (!set.has_negatives() && !set.has_filter_negatives()),
               ValueError, "--negatives and --filter-negatives apply to --link-loss negative-sampling");
  STRATA_CHECK(c.negatives() >= 1, ValueError, "--negatives ", c.negatives(), " must be at least 1");
  STRATA_CHECK(c.num_bases() >= 0, ValueError, "--num-bases ", c.num_bases(), " must be at least 0");
  STRATA_CHECK(c.layers() >= 1 && c.hidden() >= 1, ValueError, "--layers and --hidden must be positive");
  STRATA_CHECK(c.dropout() >= 0 && c.dropout() < 1, ValueError, "--dropout ", c.dropout(),
               " must be in [0, 1)");
  STRATA_CHECK(c.query_dropout() >= 0 && c.query_dropout() < 1, ValueError, "--query-dropout ",
               c.query_dropout(), " must be in [0, 1)");
}

}  // namespace

bool is_relational_model(const std::string& model) {
  models::GNNConfig c;
  c.conv = model;
  return c.relational();
}

bool GnnTrainOptions::relational() const { return !link_prediction() && is_relational_model(config.model()); }

std::string GnnTrainOptions::describe() const {
  const TrainGnnConfig& c = config;
  std::ostringstream os;
  if (link_prediction()) {
    os << "link prediction: DistMult over " << (c.encoder() == "rgcn" ? "rgcn-encoded" : "plain")
       << " entity embeddings (dim " << model.hidden_channels;
    if (c.encoder() == "rgcn")
      os << ", " << model.num_layers << " rgcn layers, bases " << c.num_bases() << ", materialization "
         << c.materialization() << ", dropout " << model.dropout;
    os << "), ";
    if (c.link_loss() == "1-n")
      os << "1-N scoring with reciprocal relations";
    else
      os << c.negatives() << (c.filter_negatives() ? " filtered" : "") << " corrupted per triple";
    if (c.query_dropout() > 0) os << ", query dropout " << c.query_dropout();
    os << ", B=" << c.run().batch_size() << ", adamw " << describe_schedule(c.schedule(), c.optim())
       << ", seed " << c.run().seed();
    return os.str();
  }
  os << "model " << c.model() << " (" << model.num_layers << " layers, hidden " << model.hidden_channels;
  if (c.model() == "gat" || c.model() == "rgat") os << " x " << model.heads << " heads";
  if (c.model() == "hgt") os << ", " << model.heads << " heads";
  if (c.model() == "sage") os << ", " << model.aggr;
  if (c.model() == "rgcn") os << ", bases " << c.num_bases();
  if (relational()) os << ", materialization " << c.materialization();
  if (c.model() == "rgat" || c.model() == "hgt") os << ", reorder " << c.reorder();
  os << ", dropout " << model.dropout << ")";
  if (fanouts.empty()) {
    os << ", full graph";
  } else {
    os << ", sampled: fanouts ";
    for (size_t i = 0; i < fanouts.size(); ++i) os << (i ? "," : "") << fanouts[i];
    os << ", B=" << c.run().batch_size();
    if (c.feature_store() != "memory") os << ", features from " << c.feature_store();
  }
  os << ", adamw " << describe_schedule(c.schedule(), c.optim()) << ", seed " << c.run().seed();
  return os.str();
}

bool parse_gnn_train_options(int argc, char** argv, GnnTrainOptions* out) {
  CLI::App app{
      "Train a graph neural network node classifier (GCN, GraphSAGE, GAT), a relational entity classifier "
      "(R-GCN, R-GAT, HGT) on a typed graph, or a link predictor on a knowledge graph (DistMult, with or "
      "without "
      "an "
      "R-GCN encoder). With no arguments: a 2-layer GraphSAGE on a degree-corrected stochastic block model "
      "with "
      "planted classes (or on polblogs when data/graphs/polblogs.gt.gz exists), 200 full-graph epochs with "
      "Adam."};
  TrainGnnConfig flags;
  ConfigFlags f(app, "train_gnn", &flags);
  f.option(&flags, "task", "",
           "node (node classification) or link (link prediction on the --kg triples: DistMult scores, "
           "filtered MRR and Hits@1/3/10 on valid and test)");
  f.option(&flags, "model", "",
           "gcn, sage or gat; rgcn, rgat or hgt: entity classification on a typed graph (a typed "
           "R-MAT unless a graph is given), full graph only");
  f.option(&flags, "hidden", "",
           "hidden width (gat, rgat: per head; hgt: all heads); --task link: the entity "
           "embedding width (default "
           "200)");
  f.option(&flags, "layers", "", "message-passing layers (--task link: rgcn encoder layers)");
  f.option(&flags, "heads", "", "gat, rgat, hgt: attention heads of the hidden layers");
  f.option(&flags, "aggr", "", "sage: mean, sum, max or min");
  f.option(&flags, "dropout", "",
           "dropout on every layer's input features; the link task's encoder: on every hidden "
           "layer's output (default 0)");
  f.option(&flags, "num_bases", "",
           "rgcn: relation weights from this many shared bases (0: one per relation; --task link: 10)");
  f.option(&flags, "materialization", "",
           "rgcn, rgat, hgt: how the typed linears are computed: auto (the layer's cost estimate), "
           "edge, compact or aggregate_first (rgcn only)");
  f.option(&flags, "reorder", "",
           "rgat: multiply the attention vectors into the relation weights first; hgt: fold the type "
           "projections into the relation matrices: auto (by the estimate), on or off");
  f.option(&flags, "typed_rmat_edges", "",
           "rgcn, rgat, hgt: the typed R-MAT's edges (ogbn-mag's node types and relations, each relation's "
           "reverse "
           "added; default 50000)");
  f.option(&flags, "typed_rmat_classes", "", "rgcn, rgat, hgt: the typed R-MAT's planted paper classes");
  f.option(
      &flags, "kg", "",
      "--task link: a folder of train.txt, valid.txt and test.txt head<TAB>relation<TAB>tail triples, e.g. "
      "data/kg/umls (STRATA_KG_DATA=1 tools/setup.sh)");
  f.option(&flags, "encoder", "",
           "--task link: rgcn (entity embeddings through rgcn layers over the training triples and "
           "their reverses) or none (the embeddings alone)");
  f.option(&flags, "negatives", "",
           "--task link --link-loss negative-sampling: corrupted triples per training triple, head or tail "
           "replaced by a uniform entity");
  f.option(&flags, "filter_negatives", "",
           "--task link --link-loss negative-sampling: draw a corrupted triple again when it is a training "
           "triple (default true)");
  f.option(&flags, "link_loss", "",
           "--task link: 1-n (each training triple's tail and head scored against every entity, "
           "softmax cross-entropy, head queries through reciprocal relations) or negative-sampling (binary "
           "cross-entropy on each triple and its --negatives corrupted copies)");
  f.option(&flags, "query_dropout", "",
           "--task link: dropout on each query's head-times-relation vector while training (default 0.5 "
           "with --link-loss 1-n, else 0)");
  f.option(&flags, "attention_dropout", "", "gat: dropout on the attention coefficients");
  f.option(&flags, "graph", "", "graph-tool file (.gt or .gt.gz), e.g. data/graphs/football.gt.gz");
  f.option(&flags, "label_property", "", "the graph-tool vertex property holding the labels");
  f.option(&flags, "edge_list", "", "edge list or CSV file, one 'src dst' per line");
  f.option(&flags, "node_file", "", "with --edge-list: 'id,label,f0,f1,...' lines");
  f.option(&flags, "ogb", "", "an OGB dataset folder in its raw layout (raw/, split/)");
  f.option(&flags, "ogb_split", "",
           "--ogb: the folder under split/ to use, e.g. time (default: the only one there)");
  f.option(&flags, "planetoid", "", "DIR/NAME of Planetoid's raw NAME.content and NAME.cites");
  f.option(&flags, "hetero_data", "",
           "a typed graph file for rgcn, rgat, hgt (tools/pyg_hetero_to_safetensors.py writes one from a PyG "
           "HeteroData; --save-data writes one for a typed graph)");
  f.option(&flags, "max_nodes", "",
           "the most nodes a loaded graph may have (--graph, --edge-list, --ogb; default max(2^20, 8 x its "
           "edges))");
  f.option(&flags, "dcsbm_nodes", "", "generated block model: nodes");
  f.option(&flags, "dcsbm_classes", "", "generated block model: planted classes");
  f.option(&flags, "dcsbm_degree", "", "generated block model: mean degree");
  f.option(&flags, "dcsbm_mixing", "", "generated block model: fraction of edges leaving a class");
  f.option(&flags, "dcsbm_features", "", "generated block model: feature dimensions");
  f.option(&flags, "dcsbm_signal", "", "generated block model: distance of the class means");
  f.option(&flags, "rmat_scale", "",
           "train on an R-MAT graph of 2^scale nodes instead (random labels: a scale test)");
  f.option(&flags, "rmat_edge_factor", "", "R-MAT edges per node");
  f.option(&flags, "features", "", "when the data has none: identity, degree or random:D");
  f.option(&flags, "undirected", "", "add reverse edges, drop duplicates and self loops");
  f.option(&flags, "train_fraction", "", "the split when the data has none: training fraction (0.6)");
  f.option(&flags, "val_fraction", "", "the split when the data has none: validation fraction (0.2)");
  f.option(&flags, "fanouts", "",
           "sampled minibatches: fanout per layer, input layer first, e.g. 15,10 (gcn, sage, gat: rgcn, rgat "
           "and hgt "
           "train on the full graph)");
  f.option(&flags, "workers", "", "sampler threads (0: sample on the training thread)");
  f.option(&flags, "prefetch", "", "ready minibatches the sampler keeps ahead");
  f.option(&flags, "feature_store", "",
           "sampled minibatches: gather each batch's features from memory (the dataset's tensor), "
           "file (--feature-file, read where it lies) or pinned (page-locked host memory a GPU reads)");
  f.option(&flags, "feature_file", "",
           "--feature-store file or pinned: a .npy feature file, written from the dataset's features when "
           "it does not exist");
  f.option(&flags, "feature_budget", "",
           "--feature-store file: the most bytes of the file held in memory, e.g. 64M (default: no limit, "
           "mapped); a larger file is read through a row cache of this size");
  add_training_flags(f, &flags);
  f.option(&flags, "target_accuracy", "", "stop once the validation accuracy reaches this fraction");
  f.option(&flags, "random_labels", "",
           "uniform random labels in this many classes instead of the data's (timing and memory runs)");
  f.option(&flags, "save_data", "",
           "write the prepared graph, features, labels and split to this safetensors file (edge_index, x, y, "
           "train_mask, val_mask, test_mask; a typed graph per type, as --hetero-data reads it)");
  add_profile_flag(f, flags.mutable_run());
  add_tensor_cache_flags(f, flags.mutable_cache(), "layer", "layers are convs.0, convs.1, ...");
  app.get_option("--max-steps")->description("optimizer steps (full graph: epochs; --task link: 1000)");
  app.get_option("--batch-size")
      ->description(
          "sampled minibatches: seed nodes per step; --task link: training triples per step "
          "(default 2048 with --link-loss 1-n, else 512)");
  app.get_option("--eval-every")
      ->description(
          "train/val/test accuracy every N steps; --task link: valid and test ranking (default "
          "100)");
  app.get_option("--lr")->description("learning rate (constant: --min-lr defaults to it)");
  app.get_option("--weight-decay")
      ->description("AdamW's decoupled weight decay (--task link: 0.3 with --link-loss 1-n, else 1.0)");
  TrainGnnConfig set;
  const TrainGnnConfig defaults = defaults_of<TrainGnnConfig>(kDefaults);
  if (!f.parse(argc, argv, &set, &defaults)) return false;

  TrainGnnConfig& c = out->config;
  c = settings_from(kDefaults, set);
  if (!set.run().has_max_steps() && !set.run().has_max_seconds())  // 200 epochs, not 5 minutes
    c.mutable_run()->set_max_steps(200), c.mutable_run()->set_max_seconds(0);
  STRATA_CHECK(c.task() == "node" || c.task() == "link", ValueError, "--task '", c.task(),
               "' is not one of node, link");
  if (c.task() == "link") apply_link_defaults(set, &c);
  if (set.schedule().has_lr() && !set.schedule().has_min_lr())
    c.mutable_schedule()->set_min_lr(c.schedule().lr());
  models::GNNConfig& m = out->model;
  m.conv = c.model(), m.hidden_channels = c.hidden(), m.num_layers = c.layers(), m.heads = c.heads();
  m.aggr = c.aggr(), m.dropout = c.dropout(), m.attention_dropout = c.attention_dropout();
  const bool attention = c.model() == "gat" || c.model() == "rgat";
  if (attention && !set.has_hidden()) m.hidden_channels = 8;  // 8 heads x 8, PyG's GAT example
  if (c.model() == "gat" && !set.has_dropout()) m.dropout = 0.6;
  out->fanouts = c.fanouts().empty() ? std::vector<int64_t>{} : parse_fanouts(c.fanouts());
  STRATA_CHECK(c.run().grad_accum() == 1 || !out->fanouts.empty() || c.task() == "link", ValueError,
               "--grad-accum ", c.run().grad_accum(),
               ": a full-graph step has one batch, the whole graph (--fanouts samples minibatches)");
  out->cache = cache_settings(c.cache());
  try {
    out->materialization = nn::materialization_from_name(c.materialization());
  } catch (const ValueError&) {
    throw ValueError("--materialization '" + c.materialization() +
                     "' is not one of auto, edge, compact, aggregate_first");
  }
  STRATA_CHECK(c.reorder() == "auto" || c.reorder() == "on" || c.reorder() == "off", ValueError,
               "--reorder '", c.reorder(), "' is not one of auto, on, off");
  if (c.reorder() != "auto") out->reorder = c.reorder() == "on";
  if (c.task() == "link")
    check_link_options(set, *out);
  else
    check_node_options(set, *out);

  int sources = 0;
  for (bool s : {!c.graph().empty(), !c.edge_list().empty(), !c.ogb().empty(), !c.planetoid().empty(),
                 c.rmat_scale() > 0, !c.hetero_data().empty()})
    sources += s;
  STRATA_CHECK(sources <= 1, ValueError,
               "give one of --graph, --edge-list, --ogb, --planetoid, --rmat-scale, --hetero-data");
  STRATA_CHECK(c.node_file().empty() || !c.edge_list().empty(), ValueError, "--node-file needs --edge-list");
  STRATA_CHECK(c.ogb_split().empty() || !c.ogb().empty(), ValueError, "--ogb-split needs --ogb");
  STRATA_CHECK(!set.has_label_property() || !c.graph().empty(), ValueError,
               "--label-property names a graph-tool vertex property: it needs --graph");
  STRATA_CHECK(!set.has_max_nodes() ||
                   (c.max_nodes() >= 1 && sources == 1 && c.rmat_scale() == 0 && c.planetoid().empty()),
               ValueError, "--max-nodes ", c.max_nodes(),
               " applies to a loaded graph (--graph, --edge-list, --ogb) and must be at least 1");
  STRATA_CHECK(out->fanouts.empty() || int64_t(out->fanouts.size()) == c.layers(), ValueError,
               "--fanouts has ", out->fanouts.size(), " entries for ", c.layers(), " layers");
  STRATA_CHECK(c.run().batch_size() > 0, ValueError, "--batch-size must be positive");
  STRATA_CHECK(c.workers() >= 0 && c.prefetch() >= 1, ValueError,
               "--workers must be >= 0 and --prefetch >= 1");
  STRATA_CHECK(c.target_accuracy() >= 0 && c.target_accuracy() <= 1, ValueError, "--target-accuracy ",
               c.target_accuracy(), " is not a fraction in [0, 1]");
  STRATA_CHECK(c.random_labels() == 0 || c.random_labels() >= 2, ValueError, "--random-labels ",
               c.random_labels(), " must be at least 2 classes");
  STRATA_CHECK(c.rmat_scale() >= 0 && c.rmat_scale() <= 26, ValueError, "--rmat-scale ", c.rmat_scale(),
               " is not in [1, 26]");
  STRATA_CHECK(c.dcsbm_nodes() >= 2 && c.dcsbm_classes() >= 2 && c.dcsbm_features() >= 0, ValueError,
               "--dcsbm-nodes and --dcsbm-classes must be at least 2, --dcsbm-features at least 0");
  STRATA_CHECK(std::isfinite(c.dcsbm_degree()) && c.dcsbm_degree() > 0, ValueError, "--dcsbm-degree ",
               c.dcsbm_degree(), " must be a positive number");
  STRATA_CHECK(std::isfinite(c.dcsbm_mixing()) && c.dcsbm_mixing() >= 0 && c.dcsbm_mixing() <= 1, ValueError,
               "--dcsbm-mixing ", c.dcsbm_mixing(), " is not in [0, 1]");
  STRATA_CHECK(std::isfinite(c.dcsbm_signal()), ValueError, "--dcsbm-signal ", c.dcsbm_signal(),
               " is not a number");
  if (set.has_feature_budget()) {
    out->feature_budget_bytes = parse_byte_size(c.feature_budget(), "--feature-budget");
    STRATA_CHECK(out->feature_budget_bytes > 0, ValueError, "--feature-budget '", c.feature_budget(),
                 "' must be positive");
  }
  STRATA_CHECK(c.schedule().lr() > 0 && c.optim().weight_decay() >= 0, ValueError,
               "--lr must be positive and --weight-decay >= 0");
  return true;
}

}  // namespace strata::examples
