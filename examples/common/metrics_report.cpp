#include "examples/common/metrics_report.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "strata/core/error.h"

namespace strata::examples {

namespace {

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

MetricsReport::MetricsReport(const std::string& dir)
    : events_(std::make_unique<io::EventFileWriter>(dir, wall_seconds())),
      csv_path_((std::filesystem::path(dir) / "metrics.csv").string()) {
  const bool fresh = !std::filesystem::exists(csv_path_) || std::filesystem::file_size(csv_path_) == 0;
  csv_ = std::fopen(csv_path_.c_str(), "a");
  STRATA_CHECK(csv_ != nullptr, IoError, "--report: cannot write '", csv_path_, "' (", std::strerror(errno),
               ")");
  if (fresh) std::fputs("step,wall_time,tag,value\n", csv_);
}

MetricsReport::~MetricsReport() {
  if (csv_) std::fclose(csv_);
}

void MetricsReport::add(const std::string& tag, double value, int64_t step) {
  const double now = wall_seconds();
  events_->add_scalar(tag, float(value), step, now);
  std::fprintf(csv_, "%ld,%.3f,%s,%.9g\n", long(step), now, tag.c_str(), value);
}

void MetricsReport::flush() {
  events_->flush();
  STRATA_CHECK(std::fflush(csv_) == 0, IoError, "--report: writing '", csv_path_, "' failed (",
               std::strerror(errno), ")");
}

}  // namespace strata::examples
