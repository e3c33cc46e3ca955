// strata_report: reads a --report folder's TensorBoard event files.
//   strata_report DIR --scalars   every scalar of every event file in DIR (in file-name order) as
//                                 "<tag> <step> <value>" lines, each record's CRCs checked
// Exit 1 with one line naming the file and the byte offset of a bad record.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "strata/core/error.h"
#include "strata/io/report/event_file.h"

int main(int argc, char** argv) {
  CLI::App app{"Read a --report folder (TensorBoard event files and metrics.csv)."};
  std::string dir;
  bool scalars = false;
  app.add_option("dir", dir, "the --report folder")->required();
  app.add_flag("--scalars", scalars, "print every scalar of the event files: tag, step, value");
  CLI11_PARSE(app, argc, argv);
  try {
    STRATA_CHECK(std::filesystem::is_directory(dir), strata::IoError, "'", dir, "' is not a folder");
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().filename().string().rfind("events.out.tfevents.", 0) == 0)
        files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
    STRATA_CHECK(!files.empty(), strata::IoError, "'", dir, "' holds no event file (events.out.tfevents.*)");
    for (const std::string& f : files)
      for (const strata::io::ScalarEvent& s : strata::io::read_scalar_events(f))
        if (scalars) std::printf("%s %ld %.9g\n", s.tag.c_str(), long(s.step), double(s.value));
    if (!scalars) std::printf("%zu event file(s) in %s\n", files.size(), dir.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata_report: %s\n", e.what());
    return 1;
  }
}
