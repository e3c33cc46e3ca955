#include "tools/report/html_report.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "strata/core/error.h"
#include "strata/io/report/event_file.h"
#include "tools/report/line_chart.h"

namespace strata::tools {

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// The series of every tag `pick` accepts, in tag order, each named by its tag less the plot's common
// `strip_prefix` and `strip_suffix` ("memory/saved_activations_peak_mb" -> "saved_activations").
template <class Pick>
std::vector<Series> series_of(const ReportFolder& r, Pick pick, double scale = 1,
                              const std::string& strip_prefix = "", const std::string& strip_suffix = "") {
  std::vector<Series> out;
  for (const auto& [tag, by_step] : r.scalars) {
    if (!pick(tag)) continue;
    std::string name = tag;
    if (name.starts_with(strip_prefix)) name.erase(0, strip_prefix.size());
    if (name.ends_with(strip_suffix)) name.resize(name.size() - strip_suffix.size());
    Series s{name, {}};
    for (const auto& [step, v] : by_step) s.points.emplace_back(double(step), v * scale);
    out.push_back(std::move(s));
  }
  return out;
}

Series renamed(const ReportFolder& r, const std::string& tag, const std::string& name) {
  Series s{name, {}};
  if (auto it = r.scalars.find(tag); it != r.scalars.end())
    for (const auto& [step, v] : it->second) s.points.emplace_back(double(step), v);
  return s;
}

// Blocks in the model's order: "h.2" before "h.10".
bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t ie = i, je = j;
      while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie]))) ++ie;
      while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je]))) ++je;
      const std::string na = a.substr(i, ie - i), nb = b.substr(j, je - j);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = ie, j = je;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i, ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

const char* action_color(memory::CacheAction a) {
  switch (a) {
    case memory::CacheAction::Keep: return "#9ecae1";
    case memory::CacheAction::Recompute: return "#fdae6b";
    case memory::CacheAction::Host: return "#a1d99b";
    case memory::CacheAction::Nvme: return "#bcbddc";
  }
  return "#ddd";
}

// The plan's decision for each block as a strip of cells, with its budget and prediction.
std::string plan_section(const ReportFolder& r) {
  std::ostringstream f;
  if (!r.plan) {
    f << "<section id=\"plan\" data-blocks=\"0\">\n<h2>Plan</h2>\n<p>No plan: the run had no --memory-budget "
         "(plan.textproto is written beside the metrics when it has one).</p>\n</section>\n";
    return f.str();
  }
  const memory::Plan& p = *r.plan;
  std::vector<std::pair<std::string, memory::CacheAction>> blocks(p.blocks.begin(), p.blocks.end());
  std::sort(blocks.begin(), blocks.end(),
            [](const auto& a, const auto& b) { return natural_less(a.first, b.first); });
  std::map<std::string, int> overrides;  // per-tensor decisions by their block (the key's prefix)
  for (const auto& [key, action] : p.tensors) ++overrides[key.substr(0, key.find('#'))];
  // Cells show what follows the names' common prefix ("transformer.h.3" -> "3").
  std::string prefix = blocks.empty() ? "" : blocks.front().first;
  for (const auto& b : blocks)
    prefix.resize(std::mismatch(prefix.begin(), prefix.end(), b.first.begin(), b.first.end()).first -
                  prefix.begin());
  prefix.resize(prefix.rfind('.') == std::string::npos ? 0 : prefix.rfind('.') + 1);
  f << "<section id=\"plan\" data-blocks=\"" << blocks.size() << "\">\n<h2>Plan: per-block decisions"
    << (prefix.empty() ? "" : " (blocks " + html_escape(prefix) + "N)") << "</h2>\n";
  f << "<p>Solver " << html_escape(p.solver) << ", budget " << fmt("%.1f", double(p.budget_bytes) / 1e6)
    << " MB, predicted step peak " << fmt("%.1f", double(p.predicted_step_peak) / 1e6)
    << " MB, predicted activation peak " << fmt("%.1f", double(p.predicted_activation_peak) / 1e6)
    << " MB; outside blocks: " << memory::cache_action_name(p.outside_blocks) << "; " << p.tensors.size()
    << " per-tensor decision(s). " << html_escape(p.note) << "</p>\n";
  const double cell = 76, H = 64, W = std::max(400.0, cell * double(blocks.size()) + 20);
  f << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H + 30
    << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  for (size_t i = 0; i < blocks.size(); ++i) {
    const auto& [name, action] = blocks[i];
    const double x = 10 + cell * double(i);
    f << "<rect class=\"block\" x=\"" << x << "\" y=\"4\" width=\"" << cell - 4 << "\" height=\"" << H - 8
      << "\" fill=\"" << action_color(action) << "\"><title>" << html_escape(name) << ": "
      << memory::cache_action_name(action) << "</title></rect>\n";
    f << "<text x=\"" << x + (cell - 4) / 2 << "\" y=\"" << H / 2 - 2 << "\" text-anchor=\"middle\">"
      << html_escape(name.substr(prefix.size())) << "</text>\n";
    f << "<text x=\"" << x + (cell - 4) / 2 << "\" y=\"" << H / 2 + 12 << "\" text-anchor=\"middle\">"
      << memory::cache_action_name(action) << "</text>\n";
  }
  double lx = 10;
  for (memory::CacheAction a : {memory::CacheAction::Keep, memory::CacheAction::Recompute,
                                memory::CacheAction::Host, memory::CacheAction::Nvme}) {
    f << "<rect x=\"" << lx << "\" y=\"" << H + 8 << "\" width=\"12\" height=\"12\" fill=\""
      << action_color(a) << "\"/><text x=\"" << lx + 16 << "\" y=\"" << H + 18 << "\">"
      << memory::cache_action_name(a) << "</text>\n";
    lx += 90;
  }
  f << "</svg>\n";
  if (!overrides.empty()) {
    f << "<p>Per-tensor decisions by block:";
    for (const auto& [block, n] : overrides) f << " " << html_escape(block) << " (" << n << ")";
    f << "</p>\n";
  }
  f << "</section>\n";
  return f.str();
}

std::string summary(const ReportFolder& r) {
  std::ostringstream f;
  auto last = [&](const std::string& tag) -> const std::map<int64_t, double>* {
    auto it = r.scalars.find(tag);
    return it == r.scalars.end() || it->second.empty() ? nullptr : &it->second;
  };
  f << "<table class=\"summary\">\n";
  auto row = [&](const std::string& k, const std::string& v) {
    f << "<tr><th>" << html_escape(k) << "</th><td>" << html_escape(v) << "</td></tr>\n";
  };
  row("folder", r.dir);
  row("event files", std::to_string(r.event_files.size()));
  if (const auto* loss = last("train/loss")) {
    row("steps", std::to_string(loss->begin()->first) + " to " + std::to_string(loss->rbegin()->first));
    row("train loss, first and last",
        fmt("%.4f", loss->begin()->second) + " -> " + fmt("%.4f", loss->rbegin()->second));
  }
  for (const auto& [tag, by_step] : r.scalars)
    if (tag.starts_with("val/") && !by_step.empty())
      row(tag + ", last",
          fmt("%.4f", by_step.rbegin()->second) + " at step " + std::to_string(by_step.rbegin()->first));
  if (const auto* t = last("time/step_seconds")) {
    std::vector<double> v;
    for (const auto& [step, s] : *t) v.push_back(s);
    std::sort(v.begin(), v.end());
    row("step time, median", fmt("%.1f ms", 1e3 * v[v.size() / 2]));
  }
  if (const auto* m = last("memory/step_peak_mb")) {
    double peak = 0;
    for (const auto& [step, v] : *m) peak = std::max(peak, v);
    row("device step peak, highest", fmt("%.1f MB", peak));
  }
  if (r.last_wall_time > r.first_wall_time)
    row("wall time covered", fmt("%.1f s", r.last_wall_time - r.first_wall_time));
  f << "</table>\n";
  return f.str();
}

}  // namespace

ReportFolder read_report_folder(const std::string& dir) {
  STRATA_CHECK(std::filesystem::is_directory(dir), IoError, "'", dir, "' is not a folder");
  ReportFolder r;
  r.dir = dir;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().starts_with("events.out.tfevents."))
      r.event_files.push_back(e.path().string());
  std::sort(r.event_files.begin(), r.event_files.end());
  STRATA_CHECK(!r.event_files.empty(), IoError, "'", dir, "' holds no event file (events.out.tfevents.*)");
  bool first = true;
  for (const std::string& file : r.event_files)
    for (const io::ScalarEvent& s : io::read_scalar_events(file)) {
      r.scalars[s.tag][s.step] = double(s.value);
      if (first || s.wall_time < r.first_wall_time) r.first_wall_time = s.wall_time;
      r.last_wall_time = std::max(r.last_wall_time, s.wall_time);
      first = false;
    }
  const std::string plan = (std::filesystem::path(dir) / "plan.textproto").string();
  if (std::filesystem::exists(plan)) r.plan = memory::load_plan(plan);
  return r;
}

std::string render_html_report(const ReportFolder& r) {
  auto has = [&](const std::string& tag) { return r.scalars.count(tag) > 0; };
  std::vector<LineChart> charts;
  auto add = [&](LineChart c, bool always = false) {
    if (always || c.num_points() > 0) charts.push_back(std::move(c));
  };
  add({"loss", "Loss: training and held-out", "step", "loss",
       series_of(r, [](const std::string& t) { return t.ends_with("loss"); }), false},
      true);
  add({"evaluation", "Accuracy: training and held-out", "step", "accuracy",
       series_of(r, [](const std::string& t) { return t.find("accuracy") != std::string::npos; })});
  add({"step_time", "Step time", "step", "seconds", {renamed(r, "time/step_seconds", "step")}}, true);
  add({"throughput", "Throughput", "step", "items per second",
       series_of(r, [](const std::string& t) { return t.starts_with("train/") && t.ends_with("_per_s"); })});
  add({"mfu", "Model FLOPs utilization (--hardware's matmul peak)", "step", "percent",
       series_of(
           r, [](const std::string& t) { return t == "train/mfu"; }, 100.0)});
  add({"learning_rate", "Learning rate", "step", "lr", {renamed(r, "train/lr", "train/lr")}});
  add({"grad_norm",
       "Gradient norm (before clipping)",
       "step",
       "norm",
       {renamed(r, "train/grad_norm", "train/grad_norm")},
       false});
  add({"memory_by_category", "Device memory by category: each step's peak", "step", "MB",
       series_of(
           r,
           [](const std::string& t) {
             return t.starts_with("memory/") && t.ends_with("_peak_mb") && t != "memory/rss_peak_mb";
           },
           1, "memory/", "_peak_mb")},
      true);
  std::vector<Series> tiers;
  for (const auto& [tag, name] :
       {std::pair<std::string, std::string>{"memory/step_peak_mb", "device (step peak)"},
        {"cache/host_pool_peak_mb", "host pool (peak in use)"},
        {"cache/spill_arena_peak_mb", "NVMe spill arena (peak in use)"},
        {"memory/rss_peak_mb", "process RSS (peak)"}})
    if (has(tag)) tiers.push_back(renamed(r, tag, name));
  add({"memory_by_tier", "Memory by tier", "step", "MB", std::move(tiers)}, true);
  add({"cache_traffic", "Cache traffic per step", "step", "MB",
       series_of(
           r,
           [](const std::string& t) {
             return t.starts_with("cache/") && (t.ends_with("_written_mb") || t.ends_with("_read_mb"));
           },
           1, "cache/", "_mb")});
  add({"cache_time", "Cache time per step: waits and recompute", "step", "seconds",
       series_of(
           r, [](const std::string& t) { return t.starts_with("cache/") && t.ends_with("_seconds"); }, 1,
           "cache/", "_seconds")});

  std::ostringstream f;
  f << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Strata run report: "
    << html_escape(r.dir) << "</title>\n<style>\n"
    << "body{font-family:sans-serif;margin:16px;color:#222}\n"
    << "table.summary{border-collapse:collapse;margin-bottom:12px}\n"
    << "table.summary th{text-align:left;padding:2px 12px 2px 0;font-weight:normal;color:#555}\n"
    << ".plots{display:flex;flex-wrap:wrap;gap:8px}\n"
    << "figure.plot{margin:0;border:1px solid #ddd;padding:4px}\n"
    << "figcaption{font-size:13px;text-align:center}\n"
    << "</style>\n</head>\n<body>\n<h1>Strata run report</h1>\n";
  f << summary(r);
  f << "<div class=\"plots\">\n";
  for (const LineChart& c : charts) f << c.to_html();
  f << "</div>\n";
  f << plan_section(r);
  f << "</body>\n</html>\n";
  return f.str();
}

}  // namespace strata::tools
