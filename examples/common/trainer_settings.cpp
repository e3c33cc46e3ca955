#include "examples/common/trainer_settings.h"

#include <google/protobuf/text_format.h>

#include <sstream>

#include "examples/common/trainer_common.pb.h"
#include "strata/core/error.h"

namespace strata::examples {

void merge_over_defaults(const std::string& defaults, const google::protobuf::Message& set,
                         google::protobuf::Message* settings) {
  STRATA_CHECK(google::protobuf::TextFormat::ParseFromString(defaults, settings), ValueError,
               "the defaults are not a ", "valid ", settings->GetDescriptor()->name(),
               " in protobuf text format");
  settings->MergeFrom(set);
}

void resolve_run_length(const RunConfig& set, RunConfig* run) {
  run->set_max_steps(set.has_max_steps() ? set.max_steps() : kUnlimitedSteps);
  run->set_max_seconds(set.has_max_seconds() ? set.max_seconds() : set.has_max_steps() ? 0.0 : 300.0);
}

bool time_bounded(const RunConfig& run) {
  return run.max_seconds() > 0 && run.max_steps() >= kUnlimitedSteps;
}

std::string describe_schedule(const LrScheduleConfig& schedule, const OptimizerConfig& optim) {
  std::ostringstream os;
  os << "lr " << schedule.lr() << " -> " << schedule.min_lr() << " warmup " << schedule.warmup_steps()
     << ", wd " << optim.weight_decay();
  return os.str();
}

}  // namespace strata::examples
