#include "strata/memory/planner/trace.h"

#include "strata/core/error.h"

namespace strata::memory::planner {

void StepTrace::recompute_costs_from_ops() {
  for (TraceTensor& x : tensors)
    if (x.op_recomputable) x.recompute_seconds = ops[size_t(x.producer)].seconds;
}

double StepTrace::block_forward_seconds(int32_t b) const {
  const TraceBlock& blk = blocks.at(size_t(b));
  double s = 0;
  for (int32_t op = blk.first_forward_op; op >= 0 && op <= blk.last_forward_op; ++op) s += ops[size_t(op)].seconds;
  return s;
}

void StepTrace::validate() const {
  const int32_t nops = int32_t(ops.size());
  auto in_phase = [&](int32_t op, TracePhase ph) { return op >= 0 && op < nops && ops[size_t(op)].phase == ph; };
  for (int32_t i = 1; i < nops; ++i)
    STRATA_CHECK(!(ops[size_t(i - 1)].phase == TracePhase::Backward && ops[size_t(i)].phase == TracePhase::Forward),
                 ValueError, "trace '", model, "': forward op ", i, " (", ops[size_t(i)].kind, ") comes after backward");
  for (const TraceOp& o : ops)
    STRATA_CHECK(o.seconds >= 0 && o.block < int32_t(blocks.size()), ValueError, "trace '", model, "': op '", o.kind,
                 "' in '", o.scope, "' has time ", o.seconds, " or block ", o.block, " out of range");
  for (const TraceTensor& x : tensors) {
    const bool uses_ok = in_phase(x.producer, TracePhase::Forward) &&
                         (x.last_forward_use < 0 || (in_phase(x.last_forward_use, TracePhase::Forward) &&
                                                     x.last_forward_use >= x.producer)) &&
                         (x.first_backward_use < 0 || (in_phase(x.first_backward_use, TracePhase::Backward) &&
                                                       x.last_backward_use >= x.first_backward_use &&
                                                       in_phase(x.last_backward_use, TracePhase::Backward)));
    STRATA_CHECK(uses_ok, ValueError, "trace '", model, "': saved tensor '", x.key, "' has inconsistent uses (producer ",
                 x.producer, ", last forward use ", x.last_forward_use, ", backward uses ", x.first_backward_use, "..",
                 x.last_backward_use, ")");
    STRATA_CHECK(x.block < int32_t(blocks.size()), ValueError, "trace '", model, "': saved tensor '", x.key,
                 "' names block ", x.block, " of ", blocks.size());
  }
  for (const TraceBlock& b : blocks)
    STRATA_CHECK(in_phase(b.first_forward_op, TracePhase::Forward) && in_phase(b.last_forward_op, TracePhase::Forward) &&
                     b.first_forward_op <= b.last_forward_op &&
                     (b.first_backward_op < 0 || (in_phase(b.first_backward_op, TracePhase::Backward) &&
                                                  in_phase(b.last_backward_op, TracePhase::Backward))),
                 ValueError, "trace '", model, "': block '", b.path, "' has inconsistent op ranges");
}

}  // namespace strata::memory::planner
