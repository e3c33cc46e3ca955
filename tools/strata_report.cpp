// strata_report: reads a trainer's --report folder.
//   strata_report DIR                 renders DIR/report.html: one self-contained page (inline SVG) with
//                                     the run's loss and evaluations, step time, memory by category
//                                     and tier, cache traffic and the --memory-budget plan's decisions
//   strata_report DIR --html FILE     the page written to FILE instead
//   strata_report DIR --scalars       every scalar of every event file in DIR (in file-name order) as
//                                     "<tag> <step> <value>" lines, each record's CRCs checked
// Exit 1 with one line naming the file and the byte offset of a bad record.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <string>

#include "strata/core/error.h"
#include "strata/core/output_path.h"
#include "strata/io/report/event_file.h"
#include "tools/report/html_report.h"

int main(int argc, char** argv) {
  CLI::App app{"Read a --report folder (TensorBoard event files, metrics.csv, plan.textproto)."};
  std::string dir, html;
  bool scalars = false;
  app.add_option("dir", dir, "the --report folder")->required();
  app.add_option("--html", html, "write the page here (default: DIR/report.html)");
  app.add_flag("--scalars", scalars, "print every scalar of the event files: tag, step, value");
  CLI11_PARSE(app, argc, argv);
  try {
    const strata::tools::ReportFolder report = strata::tools::read_report_folder(dir);
    if (scalars) {
      for (const std::string& f : report.event_files)
        for (const strata::io::ScalarEvent& s : strata::io::read_scalar_events(f))
          std::printf("%s %ld %.9g\n", s.tag.c_str(), long(s.step), double(s.value));
      return 0;
    }
    if (html.empty()) html = (std::filesystem::path(dir) / "report.html").string();
    strata::write_file_atomically(html, strata::tools::render_html_report(report), "strata_report --html");
    std::printf("wrote %s: %zu event file(s), %zu tags%s\n", html.c_str(), report.event_files.size(),
                report.scalars.size(), report.plan ? ", the plan" : "");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata_report: %s\n", e.what());
    return 1;
  }
}
