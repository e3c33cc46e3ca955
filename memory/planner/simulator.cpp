#include "strata/memory/planner/simulator.h"

#include <algorithm>
#include <queue>
#include <span>
#include <unordered_map>

#include "strata/core/error.h"

namespace strata::memory::planner {

namespace {

// A transfer resource (one direction of a link, or of a drive): busy until free_at.
struct Channel {
  double free_at = 0;
};

// Reserves every channel in `chans` for one transfer ready at `ready`; returns {start, end}.
std::pair<double, double> reserve(std::initializer_list<Channel*> chans, double ready, double duration) {
  double start = ready;
  for (Channel* c : chans) start = std::max(start, c->free_at);
  double end = start + duration;
  for (Channel* c : chans) c->free_at = end;
  return {start, end};
}

struct AsyncEvent {
  double t;
  uint64_t seq;
  int64_t act, pool;
  int32_t tensor;  // whose event (for cancelling a pending free), -1 none
  bool operator>(const AsyncEvent& o) const { return t != o.t ? t > o.t : seq > o.seq; }
};

// Lists of tensor indices per op, in insertion order, stored flat (one allocation per list
// kind, not one per op: the planner runs the simulator thousands of times).
class Buckets {
 public:
  void add(int32_t op, int32_t tensor) { pairs_.emplace_back(op, tensor); }
  void build(size_t nops) {
    start_.assign(nops + 1, 0);
    for (const auto& [op, t] : pairs_) ++start_[size_t(op) + 1];
    for (size_t i = 0; i < nops; ++i) start_[i + 1] += start_[i];
    items_.resize(pairs_.size());
    std::vector<int32_t> fill(start_.begin(), start_.end() - 1);
    for (const auto& [op, t] : pairs_) items_[size_t(fill[size_t(op)]++)] = t;
  }
  std::span<const int32_t> operator[](size_t op) const {
    return {items_.data() + start_[op], size_t(start_[op + 1] - start_[op])};
  }

 private:
  std::vector<std::pair<int32_t, int32_t>> pairs_;
  std::vector<int32_t> start_, items_;
};

enum class TState : uint8_t { None, Resident, Storing, Stored, Loading, Loaded, Dropped };

class Replay {
 public:
  Replay(const StepTrace& tr, const SimPlan& plan, const HardwareProfile& hw, bool curve)
      : tr_(tr), plan_(plan), hw_(hw), curve_(curve) {}

  SimResult run();

 private:
  // Memory bookkeeping: compute-side changes at the compute clock, transfer-side ones queued.
  void flush(double upto) {
    while (!pending_.empty() && pending_.top().t <= upto) {
      AsyncEvent e = pending_.top();
      pending_.pop();
      if (e.tensor >= 0 && cancelled_free_[size_t(e.tensor)] && e.act < 0) continue;
      change(e.t, e.act, 0, e.pool);
    }
  }
  void at_now(int64_t act, int64_t temp, int64_t pool) {
    flush(t_);
    change(t_, act, temp, pool);
  }
  void later(double t, int64_t act, int64_t pool, int32_t tensor = -1) {
    pending_.push({t, seq_++, act, pool, tensor});
  }
  void change(double t, int64_t act, int64_t temp, int64_t pool) {
    act_ += act;
    temp_ += temp;
    pool_ += pool;
    if (act_ < 0 || temp_ < 0 || pool_ < 0)
      throw Error("simulate: memory bookkeeping went negative at t=" + std::to_string(t) + " (a bug)");
    res_.activation_peak = std::max(res_.activation_peak, uint64_t(act_));
    res_.host_pool_peak = std::max(res_.host_pool_peak, uint64_t(pool_));
    res_.activation_and_pool_peak = std::max(res_.activation_and_pool_peak, uint64_t(act_ + pool_));
    uint64_t step = tr_.resident_bytes + uint64_t(act_) + uint64_t(temp_) + (hw_.gpu ? 0 : uint64_t(pool_));
    res_.step_peak = std::max(res_.step_peak, step);
    if (act != 0 && curve_) {
      if (!res_.activation_curve.empty() && res_.activation_curve.back().first == t)
        res_.activation_curve.back().second = uint64_t(act_);
      else
        res_.activation_curve.emplace_back(t, uint64_t(act_));
    }
  }

  // What happens to tensor i: a segment's own tensors are dropped and re-made by the segment;
  // a tensor backward never reads is simply freed after forward.
  CacheAction action(int32_t i) const {
    if (segment_dropped(i)) return CacheAction::Recompute;
    if (tr_.tensors[size_t(i)].first_backward_use < 0) return CacheAction::Keep;
    return plan_.tensors[size_t(i)];
  }
  bool segment_dropped(int32_t i) const {
    const TraceTensor& x = tr_.tensors[size_t(i)];
    return x.block >= 0 && plan_.segments[size_t(x.block)] && !x.block_input;
  }
  bool offloaded(int32_t i) const {
    CacheAction a = action(i);
    return a == CacheAction::Host || a == CacheAction::Nvme;
  }

  // On a CPU the I/O threads copy and checksum every offloaded byte on compute's cores: a transfer
  // goes no faster than they do, and compute loses io_compute_steal seconds per second of their
  // checksum work (measured by strata_calibrate; charged when the transfer is issued).
  double io_limited(double rate) const {
    return !hw_.gpu && hw_.io_cpu_bytes_per_second.set() ? std::min(rate, hw_.io_cpu_bytes_per_second.value) : rate;
  }
  void steal_compute(double bytes) {
    if (hw_.gpu || !hw_.io_cpu_bytes_per_second.set()) return;
    const double lost = hw_.io_compute_steal.value * bytes / hw_.io_cpu_bytes_per_second.value;
    t_ += lost;
    res_.io_cpu_seconds += lost;
  }

  void store(int32_t i);
  void load(int32_t i);
  void wait_for(int32_t i);
  void release_after_forward(int32_t i);
  void recompute_segment(int32_t b);
  void run_op(int32_t op);

  const StepTrace& tr_;
  const SimPlan& plan_;
  const HardwareProfile& hw_;
  const bool curve_;
  SimResult res_;
  double t_ = 0;
  int64_t act_ = 0, temp_ = 0, pool_ = 0;
  uint64_t seq_ = 0;
  std::priority_queue<AsyncEvent, std::vector<AsyncEvent>, std::greater<AsyncEvent>> pending_;
  std::vector<char> cancelled_free_;
  std::vector<TState> state_;
  std::vector<double> store_end_, load_end_;
  Channel to_host_, from_host_, nvme_write_, nvme_read_;
  Buckets produced_, last_fwd_, first_bwd_, last_bwd_, prefetch_;
  std::vector<int32_t> segment_at_;  // per op: the segment block whose recompute precedes it, or -1
};

void Replay::store(int32_t i) {
  const TraceTensor& x = tr_.tensors[size_t(i)];
  const double bytes = double(x.bytes);
  std::pair<double, double> span;
  if (action(i) == CacheAction::Host) {
    double dur = (hw_.gpu ? hw_.link_latency_seconds.value : 0) + bytes / io_limited(hw_.to_host_bytes_per_second());
    span = reserve({&to_host_}, t_, dur);
    at_now(0, 0, int64_t(x.bytes));  // the extent is taken when the tensor is saved
  } else {
    double rate = io_limited(hw_.nvme_write_bytes_per_second());
    double lat = hw_.nvme_write_latency_seconds();
    if (hw_.gpu) {
      rate = std::min(rate, hw_.device_to_host_bytes_per_second.value);
      lat += hw_.link_latency_seconds.value;
      span = reserve({&to_host_, &nvme_write_}, t_, lat + bytes / rate);
    } else {
      span = reserve({&nvme_write_}, t_, lat + bytes / rate);
    }
  }
  store_end_[size_t(i)] = span.second;
  res_.store_busy_seconds += span.second - span.first;
  steal_compute(bytes);
  state_[size_t(i)] = TState::Storing;
}

// The memory copy of an offloaded tensor goes once its store is done and forward is past it.
void Replay::release_after_forward(int32_t i) {
  const TraceTensor& x = tr_.tensors[size_t(i)];
  if (store_end_[size_t(i)] <= t_) {
    at_now(-int64_t(x.bytes), 0, 0);
    state_[size_t(i)] = TState::Stored;
  } else {
    later(store_end_[size_t(i)], -int64_t(x.bytes), 0, i);  // cancelled if backward forwards it first
  }
}

void Replay::load(int32_t i) {
  const TraceTensor& x = tr_.tensors[size_t(i)];
  const double bytes = double(x.bytes);
  std::pair<double, double> span;
  if (action(i) == CacheAction::Host) {
    double dur = (hw_.gpu ? hw_.link_latency_seconds.value : 0) + bytes / io_limited(hw_.from_host_bytes_per_second());
    span = reserve({&from_host_}, t_, dur);
    res_.host_bytes_read += x.bytes;
  } else {
    double rate = io_limited(hw_.nvme_read_bytes_per_second());
    double lat = hw_.nvme_read_latency_seconds();
    if (hw_.gpu) {
      rate = std::min(rate, hw_.host_to_device_bytes_per_second.value);
      lat += hw_.link_latency_seconds.value;
      span = reserve({&nvme_read_, &from_host_}, t_, lat + bytes / rate);
    } else {
      span = reserve({&nvme_read_}, t_, lat + bytes / rate);
    }
    res_.nvme_bytes_read += x.bytes;
  }
  later(span.first, int64_t(x.bytes), 0);  // the destination is allocated when the load starts
  if (action(i) == CacheAction::Host) later(span.second, 0, -int64_t(x.bytes));  // the extent is freed
  load_end_[size_t(i)] = span.second;
  res_.load_busy_seconds += span.second - span.first;
  steal_compute(bytes);
  state_[size_t(i)] = TState::Loading;
}

// Backward is about to unpack tensor i: make it resident, waiting or recomputing as needed.
void Replay::wait_for(int32_t i) {
  const TraceTensor& x = tr_.tensors[size_t(i)];
  CacheAction a = action(i);
  if (a == CacheAction::Keep || segment_dropped(i)) return;  // resident (or re-made by its segment)
  if (a == CacheAction::Recompute) {  // op level: its producer makes it again
    at_now(int64_t(x.bytes), 0, 0);
    t_ += x.recompute_seconds;
    res_.recompute_seconds += x.recompute_seconds;
    state_[size_t(i)] = TState::Loaded;
    return;
  }
  TState s = state_[size_t(i)];
  if (s == TState::Storing && store_end_[size_t(i)] > t_) {
    // Still in memory: forwarded, the store is cancelled (its bytes never count as written).
    cancelled_free_[size_t(i)] = 1;
    if (a == CacheAction::Host) at_now(0, 0, -int64_t(x.bytes));
    state_[size_t(i)] = TState::Resident;
    return;
  }
  if (s == TState::Storing) {  // the store finished: its pending free has been applied by now
    flush(t_);
    s = state_[size_t(i)] = TState::Stored;
  }
  if (s == TState::Stored) load(i);
  double end = load_end_[size_t(i)];
  if (end > t_) {
    res_.stall_seconds += end - t_;
    t_ = end;
  }
  flush(t_);
  state_[size_t(i)] = TState::Loaded;
}

void Replay::recompute_segment(int32_t b) {
  const TraceBlock& blk = tr_.blocks[size_t(b)];
  for (int32_t op = blk.first_forward_op; op <= blk.last_forward_op; ++op) {
    const TraceOp& o = tr_.ops[size_t(op)];
    int64_t made = 0;
    for (int32_t i : produced_[size_t(op)])
      if (segment_dropped(i)) made += int64_t(tr_.tensors[size_t(i)].bytes);
    at_now(made, int64_t(o.temp_bytes), 0);
    t_ += o.seconds;
    res_.recompute_seconds += o.seconds;
    res_.segment_recompute_seconds += o.seconds;
    at_now(0, -int64_t(o.temp_bytes), 0);
  }
}

void Replay::run_op(int32_t op) {
  const TraceOp& o = tr_.ops[size_t(op)];
  const bool fwd = o.phase == TracePhase::Forward;
  if (!fwd && op > 0 && tr_.ops[size_t(op) - 1].phase == TracePhase::Forward) {
    res_.forward_seconds = t_;
    for (size_t k = 0; k < tr_.tensors.size(); ++k)
      if (offloaded(int32_t(k)) && state_[k] != TState::None && store_end_[k] <= t_)
        res_.stored_by_forward_end += tr_.tensors[k].bytes;
  }
  if (!fwd) {
    if (segment_at_[size_t(op)] >= 0) recompute_segment(segment_at_[size_t(op)]);
    for (int32_t i : prefetch_[size_t(op)]) {
      flush(t_);
      if (state_[size_t(i)] == TState::Storing && store_end_[size_t(i)] <= t_) state_[size_t(i)] = TState::Stored;
      if (state_[size_t(i)] == TState::Stored) load(i);  // a store still running is not prefetched
    }
    for (int32_t i : first_bwd_[size_t(op)]) wait_for(i);
  }
  int64_t made = 0;
  if (fwd)
    for (int32_t i : produced_[size_t(op)]) made += int64_t(tr_.tensors[size_t(i)].bytes);
  at_now(made, int64_t(o.temp_bytes), 0);
  t_ += o.seconds;
  res_.compute_seconds += o.seconds;
  at_now(0, -int64_t(o.temp_bytes), 0);
  if (fwd) {
    for (int32_t i : produced_[size_t(op)]) {
      state_[size_t(i)] = TState::Resident;
      if (offloaded(i)) store(i);
    }
    for (int32_t i : last_fwd_[size_t(op)]) {
      CacheAction a = action(i);
      if (a == CacheAction::Recompute || tr_.tensors[size_t(i)].first_backward_use < 0) {
        at_now(-int64_t(tr_.tensors[size_t(i)].bytes), 0, 0);
        state_[size_t(i)] = TState::Dropped;
      } else if (a == CacheAction::Host || a == CacheAction::Nvme) {
        release_after_forward(i);
      }
    }
  } else {
    for (int32_t i : last_bwd_[size_t(op)]) at_now(-int64_t(tr_.tensors[size_t(i)].bytes), 0, 0);
  }
}

SimResult Replay::run() {
  const size_t nops = tr_.ops.size(), nt = tr_.tensors.size();
  STRATA_CHECK(plan_.tensors.size() == nt && plan_.segments.size() == tr_.blocks.size() &&
                   (plan_.prefetch_at.empty() || plan_.prefetch_at.size() == nt),
               ValueError, "simulate: the plan has ", plan_.tensors.size(), " tensors and ", plan_.segments.size(),
               " blocks, the trace ", nt, " and ", tr_.blocks.size());
  segment_at_.assign(nops, -1);
  state_.assign(nt, TState::None);
  store_end_.assign(nt, 0);
  load_end_.assign(nt, 0);
  cancelled_free_.assign(nt, 0);
  int32_t first_backward_op = -1;
  for (size_t op = 0; op < nops && first_backward_op < 0; ++op)
    if (tr_.ops[op].phase == TracePhase::Backward) first_backward_op = int32_t(op);
  for (size_t b = 0; b < tr_.blocks.size(); ++b)
    if (plan_.segments[b] && tr_.blocks[b].first_backward_op >= 0)
      segment_at_[size_t(tr_.blocks[b].first_backward_op)] = int32_t(b);
  for (size_t k = 0; k < nt; ++k) {
    const TraceTensor& x = tr_.tensors[k];
    const int32_t i = int32_t(k);
    CacheAction a = action(i);
    STRATA_CHECK(a != CacheAction::Recompute || segment_dropped(i) || x.op_recomputable, ValueError, "simulate: tensor '",
                 x.key, "' is planned for op-level recompute but its producer cannot make it again");
    STRATA_CHECK(a != CacheAction::Nvme || !hw_.drives.empty(), ValueError, "simulate: tensor '", x.key,
                 "' is planned for NVMe but the hardware profile '", hw_.name, "' has no drives");
    STRATA_CHECK(a != CacheAction::Host || hw_.to_host_bytes_per_second() > 0, ValueError, "simulate: tensor '", x.key,
                 "' is planned for the host tier but '", hw_.name, "' has no host copy rate");
    produced_.add(x.producer, i);
    last_fwd_.add(std::max(x.last_forward_use, x.producer), i);
    if (x.first_backward_use >= 0) {
      first_bwd_.add(x.first_backward_use, i);
      last_bwd_.add(std::max(x.last_backward_use, x.first_backward_use), i);
    }
    if (!offloaded(i)) continue;
    int32_t at = plan_.prefetch_at.empty() ? -1 : plan_.prefetch_at[k];
    if (at < 0 && x.block >= 0) {  // the cache's rule
      const size_t ahead = size_t(x.block) + std::max<size_t>(plan_.prefetch_blocks, 1);
      at = ahead < tr_.blocks.size() ? tr_.blocks[ahead].first_backward_op : first_backward_op;
    }
    if (at >= 0 && at < x.first_backward_use) prefetch_.add(at, i);
  }
  for (Buckets* b : {&produced_, &last_fwd_, &first_bwd_, &last_bwd_, &prefetch_}) b->build(nops);
  for (size_t op = 0; op < nops; ++op) run_op(int32_t(op));
  flush(1e300);
  res_.step_seconds = t_;
  for (size_t k = 0; k < nt; ++k) {
    if (!offloaded(int32_t(k)) || cancelled_free_[k]) continue;
    if (action(int32_t(k)) == CacheAction::Host)
      res_.host_bytes_written += tr_.tensors[k].bytes;
    else
      res_.nvme_bytes_written += tr_.tensors[k].bytes;
  }
  return res_;
}

}  // namespace

SimPlan SimPlan::keep_all(const StepTrace& trace) {
  SimPlan p;
  p.tensors.assign(trace.tensors.size(), CacheAction::Keep);
  p.segments.assign(trace.blocks.size(), false);
  return p;
}

SimPlan sim_plan_from(const StepTrace& trace, const Plan& plan) {
  SimPlan p = SimPlan::keep_all(trace);
  for (size_t b = 0; b < trace.blocks.size(); ++b) {
    auto it = plan.blocks.find(trace.blocks[b].path);
    if (it != plan.blocks.end() && it->second == CacheAction::Recompute) p.segments[b] = true;
  }
  if (plan.prefetch_blocks > 0) p.prefetch_blocks = plan.prefetch_blocks;
  for (size_t k = 0; k < trace.tensors.size(); ++k) {
    const TraceTensor& x = trace.tensors[k];
    CacheAction a = plan.outside_blocks;
    if (x.block >= 0) {
      auto it = plan.blocks.find(trace.blocks[size_t(x.block)].path);
      a = it == plan.blocks.end() || it->second == CacheAction::Recompute ? CacheAction::Keep : it->second;
    }
    auto t = plan.tensors.find(x.key);
    if (t != plan.tensors.end()) a = t->second;
    p.tensors[k] = a;
  }
  return p;
}

SimResult simulate(const StepTrace& trace, const SimPlan& plan, const HardwareProfile& hw, bool curve) {
  trace.validate();
  return Replay(trace, plan, hw, curve).run();
}

}  // namespace strata::memory::planner
