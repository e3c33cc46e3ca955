// MetricsReport: --report DIR, a run's per-step metrics as TensorBoard event files and a CSV.
#pragma once

#include <cstdio>
#include <memory>
#include <string>

#include "strata/io/report/event_file.h"

namespace strata::examples {

// Rank 0 writes it. <dir>/metrics.csv holds "step,wall_time,tag,value" rows and is appended to by a
// resumed run; each run adds an event file beside it (TensorBoard reads every file in the folder,
// as it does for PyTorch's SummaryWriter). Tags are TensorBoard's "group/name": train/loss, train/lr,
// memory/<category>_peak_mb, cache/nvme_written_mb, ...
class MetricsReport {
 public:
  // IoError naming the path where the folder or its files cannot be made.
  explicit MetricsReport(const std::string& dir);
  ~MetricsReport();
  MetricsReport(const MetricsReport&) = delete;
  MetricsReport& operator=(const MetricsReport&) = delete;

  void add(const std::string& tag, double value, int64_t step);
  // Both files pushed to disk, after each step.
  void flush();

 private:
  std::unique_ptr<io::EventFileWriter> events_;
  std::string csv_path_;
  std::FILE* csv_ = nullptr;
};

}  // namespace strata::examples
