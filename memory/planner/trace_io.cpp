// save_trace / load_trace: StepTrace <-> memory/planner/trace.proto.
#include <google/protobuf/text_format.h>

#include <sstream>

#include "memory/planner/trace.pb.h"
#include "memory/read_file.h"
#include "strata/core/error.h"
#include "strata/core/output_path.h"
#include "strata/memory/planner/trace.h"

namespace strata::memory::planner {

namespace {

bool is_text(const std::string& path) {
  const std::string ext = ".textproto";
  return path.size() >= ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0;
}

// Each record's fields that its message holds under the same name (an op's phase is the
// message's `backward` flag), read and written from this one list.
#define STRATA_TRACE_FIELDS(X) X(model) X(source) X(resident_bytes)
#define STRATA_TRACE_OP_FIELDS(X) X(kind) X(scope) X(block) X(seconds) X(flops) X(bytes) X(temp_bytes)
#define STRATA_TRACE_TENSOR_FIELDS(X) \
  X(key)                              \
  X(bytes)                            \
  X(producer)                         \
  X(last_forward_use)                 \
  X(first_backward_use)               \
  X(last_backward_use)                \
  X(block)                            \
  X(op_recomputable)                  \
  X(recompute_seconds)                \
  X(block_input)
#define STRATA_TRACE_BLOCK_FIELDS(X) \
  X(path) X(first_forward_op) X(last_forward_op) X(first_backward_op) X(last_backward_op)
// Record x into message q, and back.
#define STRATA_TO_PROTO(f) q->set_##f(x.f);
#define STRATA_FROM_PROTO(f) x.f = q.f();

proto::StepTrace to_proto(const StepTrace& t) {
  proto::StepTrace p;
  {
    const StepTrace& x = t;
    proto::StepTrace* q = &p;
    STRATA_TRACE_FIELDS(STRATA_TO_PROTO)
  }
  for (const TraceOp& x : t.ops) {
    auto* q = p.add_ops();
    STRATA_TRACE_OP_FIELDS(STRATA_TO_PROTO)
    q->set_backward(x.phase == TracePhase::Backward);
  }
  for (const TraceTensor& x : t.tensors) {
    auto* q = p.add_tensors();
    STRATA_TRACE_TENSOR_FIELDS(STRATA_TO_PROTO)
  }
  for (const TraceBlock& x : t.blocks) {
    auto* q = p.add_blocks();
    STRATA_TRACE_BLOCK_FIELDS(STRATA_TO_PROTO)
  }
  return p;
}

StepTrace from_proto(const proto::StepTrace& p) {
  StepTrace t;
  {
    StepTrace& x = t;
    const proto::StepTrace& q = p;
    STRATA_TRACE_FIELDS(STRATA_FROM_PROTO)
  }
  for (const auto& q : p.ops()) {
    TraceOp x;
    STRATA_TRACE_OP_FIELDS(STRATA_FROM_PROTO)
    x.phase = q.backward() ? TracePhase::Backward : TracePhase::Forward;
    t.ops.push_back(std::move(x));
  }
  for (const auto& q : p.tensors()) {
    TraceTensor x;
    STRATA_TRACE_TENSOR_FIELDS(STRATA_FROM_PROTO)
    t.tensors.push_back(std::move(x));
  }
  for (const auto& q : p.blocks()) {
    TraceBlock x;
    STRATA_TRACE_BLOCK_FIELDS(STRATA_FROM_PROTO)
    t.blocks.push_back(std::move(x));
  }
  return t;
}

#undef STRATA_FROM_PROTO
#undef STRATA_TO_PROTO
#undef STRATA_TRACE_BLOCK_FIELDS
#undef STRATA_TRACE_TENSOR_FIELDS
#undef STRATA_TRACE_OP_FIELDS
#undef STRATA_TRACE_FIELDS

}  // namespace

void save_trace(const StepTrace& trace, const std::string& path) {
  proto::StepTrace p = to_proto(trace);
  std::string bytes;
  if (is_text(path))
    google::protobuf::TextFormat::PrintToString(p, &bytes);
  else
    STRATA_CHECK(p.SerializeToString(&bytes), IoError, "save_trace: cannot serialize the trace of '",
                 trace.model, "'");
  write_file_atomically(path, bytes, "save_trace");
}

StepTrace load_trace(const std::string& path) {
  const std::string bytes = read_whole_file(path, "load_trace");
  proto::StepTrace p;
  const bool ok =
      is_text(path) ? google::protobuf::TextFormat::ParseFromString(bytes, &p) : p.ParseFromString(bytes);
  STRATA_CHECK(ok, ValueError, "load_trace: '", path, "' is not a step trace");
  StepTrace t = from_proto(p);
  try {
    t.validate();
  } catch (const ValueError& e) {
    throw ValueError("load_trace: '" + path + "': " + e.what());
  }
  return t;
}

}  // namespace strata::memory::planner
