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

proto::StepTrace to_proto(const StepTrace& t) {
  proto::StepTrace p;
  p.set_model(t.model);
  p.set_source(t.source);
  p.set_resident_bytes(t.resident_bytes);
  for (const TraceOp& o : t.ops) {
    auto* q = p.add_ops();
    q->set_kind(o.kind);
    q->set_scope(o.scope);
    q->set_block(o.block);
    q->set_backward(o.phase == TracePhase::Backward);
    q->set_seconds(o.seconds);
    q->set_flops(o.flops);
    q->set_bytes(o.bytes);
    q->set_temp_bytes(o.temp_bytes);
  }
  for (const TraceTensor& x : t.tensors) {
    auto* q = p.add_tensors();
    q->set_key(x.key);
    q->set_bytes(x.bytes);
    q->set_producer(x.producer);
    q->set_last_forward_use(x.last_forward_use);
    q->set_first_backward_use(x.first_backward_use);
    q->set_last_backward_use(x.last_backward_use);
    q->set_block(x.block);
    q->set_op_recomputable(x.op_recomputable);
    q->set_recompute_seconds(x.recompute_seconds);
    q->set_block_input(x.block_input);
  }
  for (const TraceBlock& b : t.blocks) {
    auto* q = p.add_blocks();
    q->set_path(b.path);
    q->set_first_forward_op(b.first_forward_op);
    q->set_last_forward_op(b.last_forward_op);
    q->set_first_backward_op(b.first_backward_op);
    q->set_last_backward_op(b.last_backward_op);
  }
  return p;
}

StepTrace from_proto(const proto::StepTrace& p) {
  StepTrace t;
  t.model = p.model();
  t.source = p.source();
  t.resident_bytes = p.resident_bytes();
  for (const auto& q : p.ops()) {
    TraceOp o;
    o.kind = q.kind();
    o.scope = q.scope();
    o.block = q.block();
    o.phase = q.backward() ? TracePhase::Backward : TracePhase::Forward;
    o.seconds = q.seconds();
    o.flops = q.flops();
    o.bytes = q.bytes();
    o.temp_bytes = q.temp_bytes();
    t.ops.push_back(std::move(o));
  }
  for (const auto& q : p.tensors()) {
    TraceTensor x;
    x.key = q.key();
    x.bytes = q.bytes();
    x.producer = q.producer();
    x.last_forward_use = q.last_forward_use();
    x.first_backward_use = q.first_backward_use();
    x.last_backward_use = q.last_backward_use();
    x.block = q.block();
    x.op_recomputable = q.op_recomputable();
    x.recompute_seconds = q.recompute_seconds();
    x.block_input = q.block_input();
    t.tensors.push_back(std::move(x));
  }
  for (const auto& q : p.blocks())
    t.blocks.push_back({q.path(), q.first_forward_op(), q.last_forward_op(), q.first_backward_op(), q.last_backward_op()});
  return t;
}

}  // namespace

void save_trace(const StepTrace& trace, const std::string& path) {
  proto::StepTrace p = to_proto(trace);
  std::string bytes;
  if (is_text(path))
    google::protobuf::TextFormat::PrintToString(p, &bytes);
  else
    STRATA_CHECK(p.SerializeToString(&bytes), IoError, "save_trace: cannot serialize the trace of '", trace.model, "'");
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
