#include "strata/memory/planner/tracer.h"

#include <algorithm>

#include "strata/autograd/node.h"
#include "strata/autograd/scope.h"
#include "strata/core/allocator.h"
#include "strata/core/backend.h"
#include "strata/memory/planner/cost_model.h"
#include "strata/core/error.h"
#include "strata/core/storage.h"

namespace strata::memory::planner {

StepTracer::StepTracer(std::shared_ptr<autograd::SavePolicy> inner, TracerOptions options)
    : inner_(inner ? std::move(inner) : std::make_shared<autograd::KeepAllPolicy>()), opt_(options) {}

namespace {
MemoryStats& stats_of(Device d) { return backend_for(d).allocator(d.index).stats(); }
}  // namespace

void StepTracer::begin() {
  trace_ = StepTrace{};
  trace_.source = opt_.cost_model ? "cost model: " + opt_.cost_model->name + ", " +
                                        gemm_precision_name(opt_.precision) + " GEMMs"
                                  : "profiled";
  backward_ = in_node_ = false;
  ids_after_.clear();
  external_.clear();
  ids_at_begin_ = StorageImpl::next_id();
  tensor_of_storage_.clear();
  autograd::restart_save_keys();
  block_ids_.clear();
  scope_blocks_.clear();
  lap();
}

double StepTracer::lap() {
  auto now = Clock::now();
  double s = std::chrono::duration<double>(now - last_).count();
  last_ = now;
  stats_of(opt_.device).reset_peaks();
  return s;
}

uint64_t StepTracer::temp_since_reset() const {
  return uint64_t(std::max<int64_t>(0, stats_of(opt_.device).snapshot().peak_of(MemoryCategory::Temporary)));
}

int32_t StepTracer::block_index(const std::string& path) {
  if (path.empty()) return -1;
  auto it = block_ids_.find(path);
  if (it != block_ids_.end()) return it->second;
  int32_t id = int32_t(trace_.blocks.size());
  TraceBlock b;
  b.path = path;
  trace_.blocks.push_back(b);
  block_ids_.emplace(path, id);
  return id;
}

int32_t StepTracer::block_of_scope(const std::string& scope) const {
  // The scope itself, else its closest recorded ancestor ("transformer.h.3.attn.c_proj" -> "transformer.h.3.attn" -> "transformer.h.3").
  std::string s = scope;
  for (;;) {
    auto it = scope_blocks_.find(s);
    if (it != scope_blocks_.end()) return it->second;
    size_t dot = s.rfind('.');
    if (dot == std::string::npos) return -1;
    s.resize(dot);
  }
}

void StepTracer::on_op(const OpRecord& r) {
  if (backward_) {  // backward is traced per node: its ops' costs add up to the node's
    if (in_node_) {
      trace_.ops.back().flops += r.cost.flops;
      trace_.ops.back().bytes += r.cost.bytes_read + r.cost.bytes_written;
    }
    return;
  }
  if (autograd::current_phase() != autograd::Phase::Forward) return;
  TraceOp op;
  op.kind = r.op;
  op.scope = autograd::current_scope_path();
  op.block = block_index(autograd::current_block_path());
  scope_blocks_.emplace(op.scope, op.block);
  op.phase = TracePhase::Forward;
  op.flops = r.cost.flops;
  op.bytes = r.cost.bytes_read + r.cost.bytes_written;
  op.temp_bytes = temp_since_reset();
  op.seconds = lap();
  if (opt_.cost_model) op.seconds = op_seconds(*opt_.cost_model, op.kind, op.flops, op.bytes, opt_.precision);
  trace_.ops.push_back(std::move(op));
  ids_after_.push_back(StorageImpl::next_id());
}

void StepTracer::on_node_begin(const std::string& node) {
  if (!backward_) {
    backward_ = true;
    lap();  // the gap between forward's last op and backward's first node is nobody's
  }
  in_node_ = true;
  TraceOp op;
  op.kind = node;
  op.scope = backward_scope_;
  op.block = block_of_scope(backward_scope_);
  op.phase = TracePhase::Backward;
  trace_.ops.push_back(std::move(op));
}

void StepTracer::on_node_end() {
  if (!in_node_) return;
  in_node_ = false;
  TraceOp& op = trace_.ops.back();
  op.temp_bytes = temp_since_reset();
  op.seconds = lap();  // includes the engine's time since the previous node
  if (opt_.cost_model) op.seconds = op_seconds(*opt_.cost_model, op.kind, op.flops, op.bytes, opt_.precision);
}

void StepTracer::on_scope(autograd::ScopeEvent e, autograd::Phase phase, const std::string& path) {
  if (phase == autograd::Phase::Backward && e == autograd::ScopeEvent::Enter) backward_scope_ = path;
  inner_->on_scope(e, phase, path);
}

autograd::Packed StepTracer::pack(const Tensor& t, const autograd::SaveInfo& info) {
  autograd::Packed p = inner_->pack(t, info);
  if (!t.defined() || !info.cacheable() || backward_) return p;
  const uint64_t sid = t.storage()->id();
  const int32_t saving_op = int32_t(trace_.ops.size());  // the op now running reports after it saves
  auto it = tensor_of_storage_.find(sid);
  if (it != tensor_of_storage_.end()) {
    TraceTensor& x = trace_.tensors[size_t(it->second)];
    x.last_forward_use = std::max(x.last_forward_use, saving_op);
    return p;
  }
  TraceTensor x;
  x.key = info.key;
  x.bytes = t.storage()->nbytes();
  // The storage was made by the first op after which the id watermark passed it.
  auto made = std::upper_bound(ids_after_.begin(), ids_after_.end(), sid);
  x.producer = made == ids_after_.end() ? saving_op : int32_t(made - ids_after_.begin());
  x.last_forward_use = saving_op;
  x.block = block_index(info.block);
  x.op_recomputable = info.producer && info.producer->can_recompute(t.output_nr());
  external_.push_back(sid < ids_at_begin_);
  tensor_of_storage_.emplace(sid, int32_t(trace_.tensors.size()));
  trace_.tensors.push_back(std::move(x));
  return p;
}

Tensor StepTracer::unpack(autograd::Packed& p, const autograd::SaveInfo& info) {
  if (backward_ && in_node_) {
    auto it = tensor_of_storage_.find(info.storage_id);
    if (it != tensor_of_storage_.end()) {
      TraceTensor& x = trace_.tensors[size_t(it->second)];
      const int32_t op = int32_t(trace_.ops.size()) - 1;
      if (x.first_backward_use < 0) x.first_backward_use = op;
      x.last_backward_use = op;
    }
  }
  return inner_->unpack(p, info);
}

StepTrace StepTracer::finish(const std::string& model, uint64_t resident_bytes) {
  StepTrace t = std::move(trace_);
  trace_ = StepTrace{};
  t.model = model;
  if (resident_bytes == 0) {
    MemorySnapshot s = stats_of(opt_.device).snapshot();
    resident_bytes = uint64_t(s.current_of(MemoryCategory::Parameter) + s.current_of(MemoryCategory::Gradient) +
                              s.current_of(MemoryCategory::OptimizerState));
  }
  t.resident_bytes = resident_bytes;
  // A forward op reported before any tensor it saved existed cannot be after its saving op.
  // An op that saves without reporting itself afterwards leaves its saves on the next index.
  int32_t last_forward = -1;
  for (size_t i = 0; i < t.ops.size() && t.ops[i].phase == TracePhase::Forward; ++i) last_forward = int32_t(i);
  STRATA_CHECK(last_forward >= 0 || t.tensors.empty(), ValueError, "StepTracer: no forward op was reported for '",
               model, "' (was the tracer installed as the op observer?)");
  for (size_t k = 0; k < t.tensors.size(); ++k) {
    TraceTensor& x = t.tensors[k];
    x.last_forward_use = std::min(x.last_forward_use, last_forward);
    x.producer = std::min(x.producer, x.last_forward_use);
    const int32_t pb = t.ops[size_t(x.producer)].block;
    // Made outside the block it is saved in, or before the step (the batch): a segment keeps it.
    x.block_input = x.block >= 0 && (pb != x.block || external_[k]);
  }
  t.recompute_costs_from_ops();
  // Workspace: the op's peak of temporaries, less what it made and saved (counted as saved).
  std::vector<uint64_t> made(t.ops.size(), 0);
  for (const TraceTensor& x : t.tensors) made[size_t(x.producer)] += x.bytes;
  for (size_t i = 0; i < t.ops.size(); ++i) t.ops[i].temp_bytes -= std::min(t.ops[i].temp_bytes, made[i]);
  for (size_t i = 0; i < t.ops.size(); ++i) {
    const TraceOp& o = t.ops[i];
    if (o.block < 0) continue;
    TraceBlock& b = t.blocks[size_t(o.block)];
    int32_t& first = o.phase == TracePhase::Forward ? b.first_forward_op : b.first_backward_op;
    int32_t& last = o.phase == TracePhase::Forward ? b.last_forward_op : b.last_backward_op;
    if (first < 0) first = int32_t(i);
    last = int32_t(i);
  }
  t.validate();
  return t;
}

}  // namespace strata::memory::planner
