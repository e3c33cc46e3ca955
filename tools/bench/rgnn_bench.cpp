// rgnn_bench: one relational GNN layer (nn::RGCNConv, nn::RGATConv or nn::HGTConv, in = out = d)
// over a whole typed graph, inference (forward under NoGradGuard) or training (forward, loss
// sum(out * a fixed random tensor), backward, AdamW on the layer's parameters), with the layer's
// materialization and reordering forced or left to its estimate (Hector's protocol: Wu et al.,
// "Hector: An Efficient Programming and Compilation Framework for Implementing Relational Graph
// Neural Networks in GPU Architectures", ASPLOS 2024). One process per configuration, so that its
// peak RSS is its own; tools/bench/rgnn_bench.py drives it beside rgnn_pyg.py (PyTorch Geometric).
//
//   strata_rgnn_bench --kg data/kg/umls --model rgat --dim 64 --mode train --materialization compact
//   strata_rgnn_bench --edges 1000000 --save-graph /tmp/g.safetensors --iters 0   # write the graph
//   strata_rgnn_bench --graph-file /tmp/g.safetensors --model hgt --materialization edge --reorder off
//
// The graph: a PyKEEN triples folder (--kg: the training triples with reverse relations), the typed
// R-MAT shaped like ogbn-mag (--edges: its total_edges, reverse relations added, so E = 2 x that),
// or a file --save-graph wrote (--graph-file; what rgnn_pyg.py reads too). Node features are random,
// width d. Prints one `RESULT {json}` line: the graph's counts, the plan, the median ms of the
// timed iterations, and two peak RSS figures: setup_peak_rss_mb (building or loading the graph) and
// peak_rss_mb (the iterations, the graph and features resident; the peak is reset in between
// through /proc/self/clear_refs). Running out of memory prints a line with "status": "oom".
#include <omp.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "step_timing.h"
#include "strata/io/graphs/graph_generators.h"
#include "strata/io/graphs/knowledge_graph.h"
#include "strata/io/weights/safetensors.h"
#include "strata/models/layers/graph/hgt_conv.h"
#include "strata/models/layers/graph/materialization.h"
#include "strata/models/layers/graph/rgat_conv.h"
#include "strata/models/layers/graph/rgcn_conv.h"
#include "strata/strata.h"

using namespace strata;
using namespace strata::bench;

namespace {

struct Args {
  std::string kg, graph_file, save_graph;
  std::string model = "rgcn", mode = "infer", materialization = "auto", reorder = "auto", device = "cpu";
  int64_t edges = 1'000'000, dim = 64, heads = 1;
  int iters = 5, warmup = 1, threads = 2;
  int profile = 0;  // profiled training steps after the timed ones
  uint64_t seed = 0;
  bool check = false;
};

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\', out += c;
    else if (c == '\n')
      out += "\\n";
    else if (static_cast<unsigned char>(c) < 0x20)
      out += ' ';
    else
      out += c;
  }
  return out;
}

// Lets the next getrusage peak start from the current RSS (Linux >= 4.0; false where refused).
bool reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
  f.flush();
  return bool(f);
}

// The resident set now, MB (/proc/self/statm; 0 where unreadable).
double current_rss_mb() {
  std::ifstream f("/proc/self/statm");
  long long pages = 0, resident = 0;
  if (!(f >> pages >> resident)) return 0;
  return double(resident) * double(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

std::string join_lines(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i ? "\n" : "") + names[i];
  return s;
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

struct NamedGraph {
  std::string name;
  Graph g;
};

NamedGraph build_graph(const Args& a) {
  if (!a.graph_file.empty()) {
    io::Safetensors f = io::read_safetensors(a.graph_file);
    const Tensor off = f.tensors.at("node_type_offsets").to(DType::i64);
    const Tensor rt = f.tensors.at("relation_types").to(DType::i64);
    const std::vector<std::string> types = split_lines(f.metadata.at("node_types"));
    const std::vector<std::string> rel_names = split_lines(f.metadata.at("relation_names"));
    std::vector<int64_t> counts;
    for (size_t t = 0; t < types.size(); ++t)
      counts.push_back(off.data<int64_t>()[t + 1] - off.data<int64_t>()[t]);
    std::vector<Relation> relations;
    for (size_t r = 0; r < rel_names.size(); ++r)
      relations.push_back(Relation{rt.data<int64_t>()[2 * r], rel_names[r], rt.data<int64_t>()[2 * r + 1]});
    const Tensor ei = f.tensors.at("edge_index");
    Graph g = Graph::from_typed_edges(types, counts, relations, ops::select(ei, 0, 0).contiguous(),
                                      ops::select(ei, 0, 1).contiguous(), f.tensors.at("edge_type"));
    return {f.metadata.at("name"), g};
  }
  if (!a.kg.empty()) {
    const io::KnowledgeGraph kg = io::load_triples(a.kg);
    return {kg.name, kg.training_graph(/*reverse_relations=*/true)};
  }
  io::TypedRmatOptions t;
  t.total_edges = a.edges;
  t.reverse_relations = true;
  t.feature_dim = 0;  // the layer reads random features of width d
  t.seed = a.seed;
  io::GraphDataset data = io::generate_typed_rmat(t);
  return {data.name, data.graph};
}

// What rgnn_pyg.py reads: edge_index [2, E] (global ids, CSC order: by relation, destination),
// edge_type [E], node_type_offsets [T + 1], relation_types [R, 2] (source type, destination
// type); metadata: name, node_types and relation_names (one per line).
void save_graph(const NamedGraph& ng, const std::string& path) {
  const Graph& g = ng.g;
  std::vector<int64_t> off, rt;
  std::vector<std::string> rel_names;
  for (int64_t t = 0; t <= g.num_node_types(); ++t) off.push_back(g.type_offset(t));
  for (const Relation& r : g.relations())
    rt.push_back(r.src_type), rt.push_back(r.dst_type), rel_names.push_back(r.name);
  nn::StateDict t;
  t.insert("edge_index", ops::stack({g.src(), g.dst()}, 0));
  t.insert("edge_type", g.edge_relations().to(DType::i32));
  t.insert("node_type_offsets", ops::from_vector(off, {int64_t(off.size())}));
  t.insert("relation_types", ops::from_vector(rt, {g.num_relations(), 2}));
  io::write_safetensors(path, t,
                        {{"name", ng.name},
                         {"node_types", join_lines(g.node_types())},
                         {"relation_names", join_lines(rel_names)}});
}

// The three layers behind one face: forward, the plan, and the strategy overrides.
struct RelationalLayer {
  std::shared_ptr<nn::Module> module;
  std::function<Tensor(const Graph&, const Tensor&)> forward;
  std::function<nn::MaterializationPlan(const Graph&)> plan;
  std::function<void(nn::Materialization)> set_materialization;
  std::function<void(std::optional<bool>)> set_reorder;  // a no-op for RGCNConv (nothing to reorder)
  int64_t out_width = 0;
};

template <class Layer>
RelationalLayer wrap(std::shared_ptr<Layer> m, int64_t out_width) {
  RelationalLayer L;
  L.module = m;
  L.forward = [m](const Graph& g, const Tensor& x) { return m->forward(g, x); };
  L.plan = [m](const Graph& g) { return m->plan(g); };
  L.set_materialization = [m](nn::Materialization s) { m->set_materialization(s); };
  if constexpr (requires { m->set_reorder(std::optional<bool>()); })
    L.set_reorder = [m](std::optional<bool> r) { m->set_reorder(r); };
  else
    L.set_reorder = [](std::optional<bool>) {};
  L.out_width = out_width;
  return L;
}

RelationalLayer make_layer(const Args& a, const Graph& g) {
  if (a.model == "rgcn") return wrap(std::make_shared<nn::RGCNConv>(a.dim, a.dim, g.num_relations()), a.dim);
  if (a.model == "rgat")  // heads x (d / heads) = d wide, as HGT's
    return wrap(std::make_shared<nn::RGATConv>(a.dim, a.dim / a.heads, g.num_relations(),
                                               nn::RGATConvOptions{.heads = a.heads}),
                a.dim);
  return wrap(std::make_shared<nn::HGTConv>(a.dim, a.dim, g.node_types(), g.relations(),
                                            nn::HGTConvOptions{.heads = a.heads}),
              a.dim);
}

std::optional<bool> reorder_of(const std::string& s) {
  if (s == "on") return true;
  if (s == "off") return false;
  return std::nullopt;
}

// The fields every RESULT line starts with.
std::string head_fields(const Args& a) {
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "\"side\": \"strata\", \"model\": \"%s\", \"dim\": %lld, \"heads\": %lld, \"mode\": \"%s\", "
                "\"materialization\": \"%s\", \"reorder\": \"%s\", \"threads\": %d, \"device\": \"%s\"",
                a.model.c_str(), (long long)a.dim, (long long)a.heads, a.mode.c_str(),
                a.materialization.c_str(), a.reorder.c_str(), omp_get_max_threads(), a.device.c_str());
  return buf;
}

std::string graph_fields(const NamedGraph& ng) {
  const Graph& g = ng.g;
  char buf[1024];
  std::snprintf(
      buf, sizeof buf,
      "\"graph\": \"%s\", \"nodes\": %lld, \"edges\": %lld, \"relations\": %lld, \"node_types\": %lld",
      json_escape(ng.name).c_str(), (long long)g.num_nodes(), (long long)g.num_edges(),
      (long long)g.num_relations(), (long long)g.num_node_types());
  return buf;
}

int run(const Args& a, std::string* graph_json) {
  const double t_graph = now_s();
  NamedGraph ng = build_graph(a);
  const double graph_s = now_s() - t_graph;
  *graph_json = graph_fields(ng);
  if (!a.save_graph.empty()) save_graph(ng, a.save_graph);
  if (a.iters <= 0) {  // the graph alone (written for rgnn_pyg.py)
    const nn::MaterializationPlan counts = nn::plan_counts("graph", ng.g);
    std::printf(
        "RESULT {%s, %s, \"status\": \"graph\", \"source_pairs\": %lld, \"destination_pairs\": %lld, "
        "\"compaction\": %.6f, \"graph_s\": %.3f, \"setup_peak_rss_mb\": %.1f, \"setup_rss_mb\": %.1f}\n",
        head_fields(a).c_str(), graph_json->c_str(), (long long)counts.source_pairs,
        (long long)counts.destination_pairs, counts.compaction_ratio(), graph_s, peak_rss_mb(),
        current_rss_mb());
    return 0;
  }
  const Device dev = Device::parse(a.device);
  manual_seed(a.seed);
  RelationalLayer layer = make_layer(a, ng.g);
  const Tensor x = ops::randn({ng.g.num_nodes(), a.dim}).to(dev);
  const Tensor seed = ops::randn({ng.g.num_nodes(), layer.out_width}).to(dev);

  // The graph's (node, relation) pairs are built once and kept with it (moving with it to the
  // device): time that apart.
  double t0 = now_s();
  layer.plan(ng.g);
  const Graph g = ng.g.to(dev);
  layer.module->to(dev);
  const double prep_ms = (now_s() - t0) * 1e3;
  auto sync = [&] {
    if (!dev.is_cpu()) backend_for(dev).synchronize(dev.index);
  };

  double check = -1;  // max |out - out_edge| / max |out_edge| against the edge-wise, unreordered forward
  if (a.check) {
    NoGradGuard no_grad;
    layer.set_materialization(nn::Materialization::kEdgeWise);
    layer.set_reorder(false);
    const Tensor ref = layer.forward(g, x);
    layer.set_materialization(nn::materialization_from_name(a.materialization));
    layer.set_reorder(reorder_of(a.reorder));
    const Tensor out = layer.forward(g, x);
    check = ops::max(ops::abs(ops::sub(out, ref))).item() / std::max(1e-30, ops::max(ops::abs(ref)).item());
  }
  layer.set_materialization(nn::materialization_from_name(a.materialization));
  layer.set_reorder(reorder_of(a.reorder));
  const nn::MaterializationPlan plan = layer.plan(g);

  const double setup_peak = peak_rss_mb(), setup_rss = current_rss_mb();
  const bool peak_reset = reset_peak_rss();
  const bool train = a.mode == "train";
  std::unique_ptr<optim::AdamW> opt;
  if (train) opt = std::make_unique<optim::AdamW>(layer.module->parameters(), optim::AdamWOptions(1e-3));
  auto loss_of = [&] { return ops::sum(ops::mul(layer.forward(g, x), seed)); };
  std::vector<double> times;
  double loss = 0;
  for (int i = 0; i < a.warmup + a.iters; ++i) {
    t0 = now_s();
    if (train) {
      opt->zero_grad();
      Tensor l = loss_of();
      l.backward();
      opt->step();
      loss = l.item();
    } else {
      NoGradGuard no_grad;
      Tensor out = layer.forward(g, x);
    }
    sync();
    if (i >= a.warmup) times.push_back(now_s() - t0);
  }
  const StepTimes st = summarize(times);
  std::printf(
      "RESULT {%s, %s, \"status\": \"ok\", \"source_pairs\": %lld, \"destination_pairs\": %lld, "
      "\"compaction\": %.6f, \"plan\": \"%s\", \"strategy\": \"%s\", \"reordered\": %s, \"params\": %lld, "
      "\"graph_s\": %.3f, \"prep_ms\": %.3f, \"median_ms\": %.3f, \"min_ms\": %.3f, \"times_ms\": [%s], "
      "\"loss\": %.6g, \"check\": %.3g, \"setup_peak_rss_mb\": %.1f, \"setup_rss_mb\": %.1f, "
      "\"peak_rss_mb\": %.1f, \"peak_reset\": %s}\n",
      head_fields(a).c_str(), graph_json->c_str(), (long long)plan.source_pairs,
      (long long)plan.destination_pairs, plan.compaction_ratio(), json_escape(plan.str()).c_str(),
      nn::materialization_name(plan.strategy).c_str(), plan.reorder ? "true" : "false",
      (long long)layer.module->num_parameters(), graph_s, prep_ms, st.median_ms, st.min_ms,
      st.times_ms.c_str(), loss, check, setup_peak, setup_rss, peak_rss_mb(), peak_reset ? "true" : "false");
  if (train && a.profile > 0) {
    std::fflush(stdout);
    profile_steps(a.profile, *opt, loss_of, /*trace=*/"", /*zero_grad_phase=*/true, dev);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"One relational GNN layer (RGCN, RGAT, HGT) over a whole typed graph: time and peak RSS"};
  Args a;
  auto* src = app.add_option_group("graph", "where the graph comes from (default: the typed R-MAT)");
  src->add_option("--kg", a.kg,
                  "a PyKEEN triples folder (data/kg/umls): its training graph, reverse relations");
  src->add_option("--graph-file", a.graph_file, "a graph --save-graph wrote");
  app.add_option("--edges", a.edges, "typed R-MAT: total_edges (0.05M to 60M), reverse relations doubling E");
  app.add_option("--seed", a.seed, "the generator's, the features' and the parameters' seed");
  app.add_option("--save-graph", a.save_graph, "write the graph used (safetensors) for rgnn_pyg.py");
  app.add_option("--model", a.model)->check(CLI::IsMember({"rgcn", "rgat", "hgt"}));
  app.add_option("--dim", a.dim, "in = out width d");
  app.add_option("--heads", a.heads, "attention heads (rgat, hgt), each d / heads wide");
  app.add_option("--mode", a.mode)->check(CLI::IsMember({"infer", "train"}));
  app.add_option("--materialization", a.materialization)
      ->check(CLI::IsMember({"auto", "edge", "compact", "aggregate_first"}));
  app.add_option("--reorder", a.reorder, "rgat, hgt: fold adjacent linears")
      ->check(CLI::IsMember({"auto", "on", "off"}));
  app.add_option("--iters", a.iters, "timed iterations (0: build and save the graph only)");
  app.add_option("--warmup", a.warmup, "untimed iterations first");
  app.add_option("--profile", a.profile,
                 "train: profile this many steps after the timed ones (per-op table)");
  app.add_option("--threads", a.threads, "OpenMP threads");
  app.add_option("--device", a.device,
                 "cpu (default), cuda, cuda:N, sim: where the layer, the graph and x live");
  app.add_flag("--check", a.check, "compare the output with the edge-wise, unreordered forward first");
  CLI11_PARSE(app, argc, argv);
  if (!a.kg.empty() && !a.graph_file.empty()) {
    std::fprintf(stderr, "rgnn_bench: --kg and --graph-file exclude each other\n");
    return 2;
  }
  if (a.dim < 1 || a.heads < 1 || a.dim % a.heads != 0) {
    std::fprintf(stderr, "rgnn_bench: --dim %lld must be a positive multiple of --heads %lld\n",
                 (long long)a.dim, (long long)a.heads);
    return 2;
  }
  omp_set_num_threads(a.threads);
  std::string graph_json = "\"graph\": null";
  auto report = [&](const char* status, const std::string& what) {
    std::printf("RESULT {%s, %s, \"status\": \"%s\", \"error\": \"%s\", \"peak_rss_mb\": %.1f}\n",
                head_fields(a).c_str(), graph_json.c_str(), status, json_escape(what).c_str(), peak_rss_mb());
    return std::string(status) == "oom" ? 0 : 1;
  };
  try {
    return run(a, &graph_json);
  } catch (const std::bad_alloc& e) {
    return report("oom", e.what());
  } catch (const Error& e) {
    const std::string what = e.what();
    const bool oom =
        dynamic_cast<const OutOfMemoryError*>(&e) || what.find("out of memory") != std::string::npos;
    return report(oom ? "oom" : "error", what);
  } catch (const std::exception& e) {  // a graph file without the expected tensors, ...
    return report("error", e.what());
  }
}
