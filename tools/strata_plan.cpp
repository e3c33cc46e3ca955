// strata_plan: for a model config (or a recorded trace), a hardware profile and a memory budget,
// prints each policy's predicted step time and peaks, the chosen plan per block or per tensor,
// and draws every policy's activation memory over the step as an SVG. With --step-budget the
// budget covers the whole step, and for a model config the plan also places its weights, gradients
// and optimizer state (device, host memory or NVMe), printing each placement it tried.
//
//   strata_plan --model gpt2-xl --batch 8 --seq 1024 --hardware
//   tools/hardware/h100-sxm-pcie5-1xgen4.textproto
//               --budget 50% --svg gpt2xl.svg --save-plan gpt2xl.plan
//   strata_plan --model gpt2-xl ... --budget 50%,25% --markdown    (the relative-throughput rows in
//   docs/benchmarks.md)
//   strata_plan --model gpt2-xl --batch 1 --seq 1024 --hardware ... --budget 16G --step-budget
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "strata/core/output_path.h"
#include "strata/memory/planner/cost_model.h"
#include "strata/memory/planner/model_state_plan.h"
#include "strata/memory/planner/planner.h"
#include "strata/memory/planner/tracer.h"
#include "strata/models/bert.h"
#include "strata/models/gpt.h"
#include "strata/models/resnet.h"
#include "strata/nn/meta_init.h"
#include "strata/strata.h"
#include "tools/cli_parse.h"

using namespace strata;
using namespace strata::memory;
using namespace strata::memory::planner;

namespace {

// "50%" -> 0.5: the whole text a positive, finite number followed by '%'.
double parse_fraction(const std::string& text) {
  STRATA_CHECK(text.size() >= 2 && text.back() == '%', ValueError, "--budget '", text,
               "' is not a percentage");
  const std::string number = text.substr(0, text.size() - 1);
  size_t end = 0;
  double v = -1;
  try {
    v = std::stod(number, &end);
  } catch (const std::exception&) {
  }
  STRATA_CHECK(end == number.size() && std::isfinite(v) && v > 0, ValueError, "--budget '", text,
               "' must be a positive percentage of the keep-all peak (e.g. 50%)");
  return v / 100.0;
}

// A model built on the Meta device (no memory, no initialization), kept alive for the process.
template <class M, class C>
std::shared_ptr<M> build(const C& cfg) {
  static std::vector<std::shared_ptr<void>> keep;
  std::shared_ptr<M> m;
  {
    nn::MetaInitGuard meta;
    m = std::make_shared<M>(cfg);
  }
  m->to(kMeta);  // anything a constructor made outside register_parameter/register_buffer
  keep.push_back(m);
  return m;
}

// A shape-only step of the model on the Meta device, timed by the profile's cost model.
// `state`: the model's weights per planner block, with `optimizer_state` bytes per weight byte.
StepTrace meta_trace(const std::string& model, int64_t batch, int64_t seq, int64_t image,
                     const HardwareProfile& hw, GemmPrecision precision, double optimizer_state,
                     ModelState& state) {
  TracerOptions o;
  o.cost_model = &hw;
  o.device = kMeta;
  o.precision = precision;
  auto tracer = std::make_shared<StepTracer>(nullptr, o);
  auto i64 = TensorOptions().dtype(DType::i64).device(kMeta);
  // One step of `model`, traced; its model state counted.
  auto run = [&](const nn::Module& model, auto&& step) {
    {
      OpObserverGuard obs(tracer.get());
      autograd::SavePolicyGuard save(tracer);
      tracer->begin();
      step();
    }
    state = model_state_of(model, optimizer_state);
  };
  std::string name = model;
  if (model.rfind("gpt2", 0) == 0) {
    models::GPTConfig cfg = models::GPTConfig::preset(model);
    cfg.block_size = std::max(cfg.block_size, seq);
    auto& m = *build<models::GPT>(cfg);
    Tensor idx = ops::zeros({batch, seq}, i64), targets = ops::zeros({batch, seq}, i64);
    run(m, [&] { m.loss(idx, targets).backward(); });
    name += " B=" + std::to_string(batch) + " T=" + std::to_string(seq);
  } else if (model.rfind("bert", 0) == 0) {
    models::BertConfig cfg = models::BertConfig::preset(model);
    auto& m = *build<models::BertForSequenceClassification>(cfg);  // the encoder; the MLM head needs the labels' values
    Tensor ids = ops::zeros({batch, seq}, i64), labels = ops::zeros({batch}, i64);
    run(m, [&] { m.loss(ids, Tensor(), Tensor(), labels).backward(); });
    name += " B=" + std::to_string(batch) + " T=" + std::to_string(seq);
  } else if (model.rfind("resnet", 0) == 0) {
    models::ResNetConfig cfg = models::ResNetConfig::preset(model);
    auto& m = *build<models::ResNet>(cfg);
    Tensor x = ops::zeros({batch, 3, image, image}, TensorOptions().device(kMeta));
    Tensor labels = ops::zeros({batch}, i64);
    run(m, [&] { ops::cross_entropy(m.forward(x), labels).backward(); });
    name += " B=" + std::to_string(batch) + " " + std::to_string(image) + "x" + std::to_string(image);
  } else {
    throw ValueError("strata_plan: unknown model '" + model + "' (gpt2*, bert*, resnet* presets)");
  }
  return tracer->finish(name);
}

std::string gb(uint64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", double(b) / 1e9);
  return buf;
}

// `base`: model state on the device, drawn as a band under every curve (0: activations alone).
void write_svg(const std::string& path, const std::vector<const PolicyResult*>& rs, uint64_t budget,
               const std::string& title, uint64_t base = 0, const std::string& base_label = "") {
  const double W = 900, H = 420, L = 70, R = 170, T = 40, B = 50;
  double tmax = 0;
  uint64_t ymax = budget;
  for (const auto* r : rs) {
    tmax = std::max(tmax, r->predicted.step_seconds);
    ymax = std::max(ymax, base + r->predicted.activation_peak);
  }
  if (tmax <= 0 || ymax == 0) return;
  auto x = [&](double t) { return L + (W - L - R) * t / tmax; };
  auto y = [&](double b) { return H - B - (H - T - B) * b / double(ymax); };
  const char* colors[] = {"#1f77b4", "#7f7f7f", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2"};
  std::ostringstream f;
  f << "<svg xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H << "' font-family='sans-serif' font-size='12'>\n";
  f << "<rect width='100%' height='100%' fill='white'/>\n";
  f << "<text x='" << L << "' y='20' font-size='14'>" << title << "</text>\n";
  f << "<line x1='" << L << "' y1='" << H - B << "' x2='" << W - R << "' y2='" << H - B << "' stroke='black'/>\n";
  f << "<line x1='" << L << "' y1='" << T << "' x2='" << L << "' y2='" << H - B << "' stroke='black'/>\n";
  for (int i = 0; i <= 4; ++i) {
    double v = double(ymax) * i / 4;
    f << "<text x='" << L - 8 << "' y='" << y(v) + 4 << "' text-anchor='end'>" << gb(uint64_t(v)) << "</text>\n";
    double tt = tmax * i / 4;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g s", tt);
    f << "<text x='" << x(tt) << "' y='" << H - B + 18 << "' text-anchor='middle'>" << buf << "</text>\n";
  }
  f << "<text x='" << 14 << "' y='" << (H - B + T) / 2 << "' transform='rotate(-90 14 " << (H - B + T) / 2
    << ")' text-anchor='middle'>"
    << (base > 0 ? "model state + saved activations (GB)" : "saved activations (GB)") << "</text>\n";
  if (base > 0) {
    f << "<rect x='" << L << "' y='" << y(double(base)) << "' width='" << W - R - L << "' height='"
      << y(0) - y(double(base)) << "' fill='#dddddd'/>\n";
    f << "<text x='" << L + 6 << "' y='" << y(double(base)) + 14 << "'>" << base_label << "</text>\n";
  }
  f << "<line x1='" << L << "' y1='" << y(double(budget)) << "' x2='" << W - R << "' y2='" << y(double(budget))
    << "' stroke='black' stroke-dasharray='6,4'/>\n";
  f << "<text x='" << W - R + 6 << "' y='" << y(double(budget)) + 4 << "'>budget</text>\n";
  for (size_t i = 0; i < rs.size(); ++i) {
    const char* c = colors[i % 8];
    f << "<polyline fill='none' stroke='" << c << "' stroke-width='1.5' points='";
    uint64_t prev = 0;
    for (const auto& [t, b] : rs[i]->predicted.activation_curve) {
      f << x(t) << "," << y(double(base + prev)) << " " << x(t) << "," << y(double(base + b)) << " ";
      prev = b;
    }
    f << "'/>\n";
    f << "<text x='" << W - R + 6 << "' y='" << T + 16 * double(i) << "' fill='" << c << "'>" << rs[i]->name
      << (rs[i]->fits ? "" : " (over)") << "</text>\n";
  }
  f << "</svg>\n";
  write_file_atomically(path, f.str(), "strata_plan --svg");
}

// What-if: tensors made by ops of these classes (op_class: "layer_norm", "matmul", ...) counted as
// op-level recomputable from their producer's inputs at the producer's time. The cache can only
// run op-level recompute where the op offers it (Node::can_recompute), so such plans are for
// deciding which ops should, never for --save-plan.
// Only an op's largest saved output counts (a layer norm's mean and rstd are by-products of
// the same run, not worth a run of their own).
size_t assume_recomputable(StepTrace& trace, const std::vector<std::string>& classes) {
  std::vector<int32_t> largest(trace.ops.size(), -1);
  for (size_t k = 0; k < trace.tensors.size(); ++k) {
    int32_t& l = largest[size_t(trace.tensors[k].producer)];
    if (l < 0 || trace.tensors[size_t(l)].bytes < trace.tensors[k].bytes) l = int32_t(k);
  }
  size_t n = 0;
  for (size_t k = 0; k < trace.tensors.size(); ++k) {
    TraceTensor& x = trace.tensors[k];
    if (x.op_recomputable || x.block_input || x.first_backward_use < 0 || largest[size_t(x.producer)] != int32_t(k)) continue;
    const TraceOp& producer = trace.ops[size_t(x.producer)];
    if (std::find(classes.begin(), classes.end(), op_class(producer.kind)) == classes.end()) continue;
    x.op_recomputable = true;
    x.recompute_seconds = producer.seconds;
    ++n;
  }
  return n;
}

// Where a plan's time goes beyond keep-all, and how busy the copy channel was.
void print_breakdown(const PolicyResult& p, const SimResult& keep) {
  const SimResult& s = p.predicted;
  std::printf("%s: step %.4g s = keep-all %.4g s + segments re-run %.4g s + op-level recompute %.4g s + stalls %.4g s"
              " + I/O threads' CPU %.4g s\n",
              p.name.c_str(), s.step_seconds, keep.step_seconds, s.segment_recompute_seconds,
              s.recompute_seconds - s.segment_recompute_seconds, s.stall_seconds, s.io_cpu_seconds);
  if (s.store_busy_seconds > 0)
    std::printf("  forward %.4g s; stores busy %.4g s (%.0f%% of forward), %s GB stored by forward's end; loads busy %.4g s\n",
                s.forward_seconds, s.store_busy_seconds, 100.0 * s.store_busy_seconds / std::max(s.forward_seconds, 1e-12),
                gb(s.stored_by_forward_end).c_str(), s.load_busy_seconds);
}

// What model state there is, and every placement plan_whole_step tried, the chosen one marked.
void print_placements(const WholeStepPlan& w, const ModelState& st, const std::string& optimizer) {
  std::printf(
      "\nmodel state: weights %s GB (%zu blocks, the largest %s GB; %s GB outside blocks), gradients %s GB, "
      "optimizer state %s GB (%s)\n",
      gb(st.weight_bytes()).c_str(), st.block_weight_bytes.size(), gb(st.largest_block()).c_str(),
      gb(st.outside_weight_bytes).c_str(), gb(st.weight_bytes()).c_str(), gb(st.optimizer_bytes()).c_str(),
      optimizer.c_str());
  std::printf("\n  %-8s %-9s %-9s %-5s %12s %12s %10s %9s %9s %9s  %s\n", "weights", "gradients", "optimizer",
              "fits", "state (GB)", "lowest (GB)", "step (s)", "link GB", "nvme rd", "nvme wr",
              "activations");
  for (size_t i = 0; i < w.candidates.size(); ++i) {
    const WholeStepCandidate& c = w.candidates[i];
    std::printf("%s %-8s %-9s %-9s %-5s %12s %12s %10.4g %9s %9s %9s  %s\n", i == w.chosen_index ? "*" : " ",
                optim::state_placement_name(c.placement.weights),
                optim::state_placement_name(c.placement.gradients),
                optim::state_placement_name(c.placement.optimizer_state), c.fits ? "yes" : "no",
                gb(c.state.device_bytes).c_str(), gb(c.lowest_step_peak).c_str(), c.step_seconds,
                gb(c.state.link_bytes).c_str(), gb(c.state.nvme_read_bytes).c_str(),
                gb(c.state.nvme_write_bytes).c_str(), c.activations.plan.block_summary.c_str());
  }
  std::printf(
      "  (state: model state on the device; lowest: the lowest step peak of the activation policies tried at "
      "this "
      "budget; link and nvme: model-state bytes moved per step)\n%s\n",
      w.explanation.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"strata_plan: the tensor cache's plan for a memory budget, beside the baseline policies"};
  std::string model = "gpt2", hardware, budget_text = "50%", trace_in, trace_out, svg, plan_out;
  int64_t batch = 8, seq = 1024, image = 224;
  bool step_budget = false, tensors = false, markdown = false;
  std::string precision_name = "fp32";
  std::vector<std::string> what_if;
  std::string optimizer = "adamw", weights_at = "auto", gradients_at = "auto", optimizer_at = "auto",
              host_memory;
  app.add_option("--model", model, "gpt2 / gpt2-medium / gpt2-large / gpt2-xl, bert-base / bert-large, resnet18 ... resnet152[-cifar]");
  app.add_option("--batch", batch, "batch size")->check(CLI::Range(int64_t(1), int64_t(1) << 30));
  app.add_option("--seq", seq, "sequence length (GPT, BERT)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 30));
  app.add_option("--image", image, "image side (ResNet)")->check(CLI::Range(int64_t(1), int64_t(1) << 30));
  app.add_option("--hardware", hardware, "hardware profile (tools/hardware/*.textproto)")->required();
  app.add_option(
      "--budget", budget_text,
      "bytes (e.g. 20G: K, M, G, T are powers of 1024) or a percentage of the keep-all peak (e.g. 50%); "
      "several, comma-separated, plan each");
  app.add_flag("--markdown", markdown, "end with one markdown row per budget: each policy's throughput relative to keep-all");
  app.add_option("--what-if-recomputable", what_if,
                 "what-if: outputs of these op classes (layer_norm, matmul, ...) count as op-level recomputable "
                 "(the cache cannot run such plans until the ops offer it)")
      ->delimiter(',');
  app.add_flag("--step-budget", step_budget, "bound the step peak (resident state + activations + workspace), not activations only");
  app.add_option("--trace", trace_in, "plan a recorded trace (binary or .textproto) instead of a shape-only run");
  app.add_option("--save-trace", trace_out, "write the trace");
  app.add_option("--svg", svg, "draw each policy's activation memory over the step");
  app.add_option("--save-plan", plan_out, "write the chosen plan for the cache (--cache-policy plan:FILE)");
  app.add_flag("--tensors", tensors, "print the plan per saved tensor");
  app.add_option("--precision", precision_name,
                 "how GEMMs multiply: fp32 (the default, f32 multiplies), tf32 (ops::AllowTf32Guard: the profile's "
                 "matmul_flops_tf32) or bf16 (ops::AutocastGuard: matmul_flops_bf16); activations stay f32")
      ->check(CLI::IsMember({"fp32", "tf32", "bf16"}));
  const auto placement = CLI::IsMember({"auto", "device", "host", "nvme"});
  app.add_option(
         "--optimizer", optimizer,
         "whose state --step-budget counts: adamw (two moments per weight), sgd-momentum (one), sgd (none)")
      ->check(CLI::IsMember({"adamw", "sgd-momentum", "sgd"}));
  app.add_option(
         "--weights", weights_at,
         "with --step-budget: where the blocks' weights live between uses: auto (the plan's choice), device, "
         "host, nvme")
      ->check(placement);
  app.add_option("--gradients", gradients_at,
                 "with --step-budget: where the blocks' gradients go (as --weights)")
      ->check(placement);
  app.add_option("--optimizer-state", optimizer_at,
                 "with --step-budget: where the optimizer's state lives (as --weights)")
      ->check(placement);
  app.add_option("--host-memory", host_memory,
                 "with --step-budget: the most model state may hold in host memory (default: the profile's "
                 "host memory)");
  STRATA_TOOL_PARSE(app, argc, argv);
  try {
    // Outputs checked before the planning they would otherwise wait for.
    for (const auto& [path, flag] : {std::pair<const std::string&, const char*>{plan_out, "--save-plan"},
                                     {svg, "--svg"},
                                     {trace_out, "--save-trace"}})
      if (!path.empty()) check_output_file(path, flag);
    const HardwareProfile hw = load_hardware_profile(hardware);
    auto t0 = std::chrono::steady_clock::now();
    ModelState state;
    const double per_weight = optimizer == "adamw" ? 2.0 : optimizer == "sgd-momentum" ? 1.0 : 0.0;
    StepTrace trace = trace_in.empty() ? meta_trace(model, batch, seq, image, hw,
                                                    parse_gemm_precision(precision_name), per_weight, state)
                                       : load_trace(trace_in);
    // With a model config and --step-budget the plan places model state too; a recorded trace only
    // knows the bytes its step held resident.
    const bool placing =
        weights_at != "auto" || gradients_at != "auto" || optimizer_at != "auto" || !host_memory.empty();
    STRATA_CHECK(
        !placing || step_budget, ValueError,
        "strata_plan: --weights, --gradients, --optimizer-state and --host-memory place model state under a "
        "--step-budget");
    STRATA_CHECK(
        !placing || trace_in.empty(), ValueError,
        "strata_plan: --weights, --gradients, --optimizer-state and --host-memory need --model: a recorded "
        "trace holds no model state");
    const bool whole_step = step_budget && trace_in.empty();
    WholeStepOptions whole;
    auto pinned = [](const std::string& text, const char* flag) -> std::optional<optim::StatePlacement> {
      if (text == "auto") return std::nullopt;
      return optim::parse_state_placement(text, flag);
    };
    whole.weights = pinned(weights_at, "--weights");
    whole.gradients = pinned(gradients_at, "--gradients");
    whole.optimizer_state = pinned(optimizer_at, "--optimizer-state");
    if (!host_memory.empty()) whole.host_memory_bytes = parse_byte_size(host_memory, "--host-memory");
    // The keep-all reference holds every weight, gradient and moment on the device.
    if (whole_step)
      trace.resident_bytes = model_state_cost(state, {}, hw, whole.prefetch_blocks).device_bytes;
    const double trace_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    STRATA_CHECK(!trace.ops.empty() && !trace.blocks.empty(), ValueError, "the trace of '", trace.model,
                 "' has ", trace.ops.size(), " ops and ", trace.blocks.size(), " blocks: nothing to plan");
    if (!trace_out.empty()) save_trace(trace, trace_out);
    if (!what_if.empty()) {
      STRATA_CHECK(plan_out.empty(), ValueError, "strata_plan: --save-plan with --what-if-recomputable: the cache cannot run that plan");
      const size_t n = assume_recomputable(trace, what_if);
      std::printf("WHAT-IF: %zu saved tensors made by ", n);
      for (const auto& c : what_if) std::printf("%s ", c.c_str());
      std::printf("counted as op-level recomputable (the cache cannot run this plan)\n");
    }
    PlannerOptions opt;
    opt.activations_only = !step_budget;
    const SimResult keep = simulate(trace, SimPlan::keep_all(trace), hw);
    const uint64_t keep_peak = budgeted_peak(keep, opt, hw);
    std::printf("strata_plan: %s on %s (%s), %zu ops, %zu saved tensors, %zu blocks, traced in %.1f s\n",
                trace.model.c_str(), hw.name.c_str(), trace.source.c_str(), trace.ops.size(), trace.tensors.size(),
                trace.blocks.size(), trace_s);
    std::vector<std::string> budgets;
    for (size_t a = 0; a <= budget_text.size();) {
      size_t comma = budget_text.find(',', a);
      if (comma == std::string::npos) comma = budget_text.size();
      if (comma > a) budgets.push_back(budget_text.substr(a, comma - a));
      a = comma + 1;
    }
    STRATA_CHECK(!budgets.empty(), ValueError, "strata_plan: no --budget");
    STRATA_CHECK(budgets.size() == 1 || (plan_out.empty() && svg.empty()), ValueError,
                 "strata_plan: --save-plan and --svg take one --budget");
    std::vector<std::string> rows;
    int rc = 0;
    for (const std::string& btext : budgets) {
      uint64_t budget = 0;
      if (btext.back() == '%')
        budget = uint64_t(double(keep_peak) * parse_fraction(btext));
      else
        budget = parse_byte_size(btext, "--budget");
      STRATA_CHECK(budget > 0, ValueError, "--budget '", btext, "' is zero");
      std::printf("\nkeep-all: step %.4g s, activation peak %s GB, step peak %s GB; budget (%s) %s GB = %s of keep-all\n",
                  keep.step_seconds, gb(keep.activation_peak).c_str(), gb(keep.step_peak).c_str(),
                  opt.activations_only ? "activations" : "step peak", gb(budget).c_str(), btext.c_str());
      std::optional<WholeStepPlan> w;
      if (whole_step) {
        w = plan_whole_step(trace, state, hw, budget, opt, whole);
        print_placements(*w, state, optimizer);
      }
      PlannerResult r = w ? w->chosen().activations : plan_step(trace, hw, budget, opt);
      std::printf("\n%-14s %-5s %10s %9s %10s %10s %9s %10s %9s %9s  %s\n", "policy", "fits", "step (s)", "vs ideal",
                  "act (GB)", "step (GB)", "stall (s)", "recomp (s)", "host GB", "nvme GB", "blocks");
      std::vector<const PolicyResult*> all{&r.plan};
      for (const auto& b : r.baselines) all.push_back(&b);
      for (const PolicyResult* p : all) {
        const SimResult& s = p->predicted;
        std::printf("%-14s %-5s %10.4g %8.1f%% %10s %10s %9.3g %10.3g %9s %9s  %s\n", p->name.c_str(), p->fits ? "yes" : "no",
                    s.step_seconds, 100.0 * keep.step_seconds / s.step_seconds, gb(s.activation_peak).c_str(),
                    gb(s.step_peak).c_str(), s.stall_seconds, s.recompute_seconds, gb(s.host_bytes_written).c_str(),
                    gb(s.nvme_bytes_written).c_str(), p->block_summary.c_str());
      }
      std::printf("\n%s\nplanner time: %.3f s (DP, repair, local search, baselines)\n", r.explanation.c_str(), r.solve_seconds);
      print_breakdown(r.plan, keep);
      {
        std::string row = "| " + trace.model + " | " + btext + " |";
        for (const PolicyResult* p : all) {
          char cell[32];
          std::snprintf(cell, sizeof cell, " %.1f%% |", 100.0 * keep.step_seconds / p->predicted.step_seconds);
          row += p->fits ? std::string(cell) : std::string(" over |");
        }
        rows.push_back(row);
      }
      if (!r.plan.fits || (w && !w->fits)) rc = 2;
      if (tensors) {
        std::printf("\n%-48s %12s  %s\n", "saved tensor", "bytes", "action");
        for (size_t k = 0; k < trace.tensors.size(); ++k) {
          const TraceTensor& x = trace.tensors[k];
          const bool seg = x.block >= 0 && r.plan.plan.segments[size_t(x.block)];
          std::string a = seg ? (x.block_input ? "keep (segment input)" : "recompute (segment)")
                              : cache_action_name(r.plan.plan.tensors[k]);
          std::printf("%-48s %12llu  %s\n", x.key.c_str(), (unsigned long long)x.bytes, a.c_str());
        }
      }
      if (!svg.empty()) {
        if (w)
          write_svg(svg, all, budget,
                    trace.model + " on " + hw.name + ": model state and saved activations over one step",
                    w->chosen().state.device_bytes,
                    "model state on the device: " + w->chosen().placement.describe() + ", " +
                        gb(w->chosen().state.device_bytes) + " GB");
        else
          write_svg(svg, all, budget, trace.model + " on " + hw.name + ": saved activations over one step");
        std::printf("wrote %s\n", svg.c_str());
      }
      if (!plan_out.empty()) {
        Plan plan = cache_plan_for(trace, r.plan.plan);
        plan.budget_bytes = budget;
        plan.predicted_activation_peak = r.plan.predicted.activation_peak;
        plan.predicted_step_peak = r.plan.predicted.step_peak;
        plan.solver = "strata_plan";
        plan.note = r.explanation;
        save_plan(plan, plan_out);
        std::printf("wrote %s\n", plan_out.c_str());
      }
    }
    if (markdown) {
      std::printf("\n| model | budget | strata | keep-all | recompute-all | selective | rockmate | ssdtrain | swap |\n"
                  "|---|---|---|---|---|---|---|---|---|\n");
      for (const auto& row : rows) std::printf("%s\n", row.c_str());
    }
    return rc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata_plan: %s\n", e.what());
    return 1;
  }
}
