// The HTML page of a --report folder: one self-contained file (inline SVG, no scripts, no links).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "strata/memory/plan.h"

namespace strata::tools {

struct ReportFolder {
  std::string dir;
  std::vector<std::string> event_files;  // in name order (a resumed run's come after)
  // tag -> step -> value; a step written twice (a run resumed before its last report) keeps the
  // later file's value.
  std::map<std::string, std::map<int64_t, double>> scalars;
  double first_wall_time = 0, last_wall_time = 0;
  std::optional<memory::Plan> plan;  // <dir>/plan.textproto, written under --memory-budget
};

// Reads every events.out.tfevents.* file of `dir` through its CRCs, and plan.textproto where
// present. IoError naming the folder when it is not one or holds no event file, or naming the
// file and offset of a bad record.
ReportFolder read_report_folder(const std::string& dir);

// The page: a summary, then plots of loss and evaluations, step time and throughput, learning
// rate and gradient norm, memory by category and by tier, cache traffic and time, and the plan's
// per-block decisions. A plot whose tags the run did not write is left out, except the four every
// run writes (loss, step_time, memory_by_category, memory_by_tier).
std::string render_html_report(const ReportFolder& report);

}  // namespace strata::tools
