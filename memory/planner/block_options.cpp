// The block options the chain DP chooses from (chain_problem), what a choice means per saved
// tensor (sim_plan_for), and the per-block figures both are made of.
#include "memory/planner/block_options.h"

#include <algorithm>
#include <string>

#include "strata/core/error.h"
#include "strata/memory/planner/cost_model.h"
#include "strata/memory/planner/planner.h"

namespace strata::memory::planner {

int32_t producer_block(const StepTrace& t, const TraceTensor& x) {
  return x.producer >= 0 ? t.ops[size_t(x.producer)].block : -1;
}

bool selective_drops(const StepTrace& t, const TraceTensor& x) {
  if (!x.op_recomputable) return false;
  if (!x.block_input) return true;
  const int32_t pb = producer_block(t, x);
  return pb >= 0 && pb < x.block;
}

namespace {

// Whether op kind `kind` is GEMM-like (its output takes a matrix product to make again).
bool gemm_like(const std::string& kind) {
  const std::string c = op_class(kind);
  return c == "matmul" || c == "attention" || c == "conv2d";
}

}  // namespace

std::vector<char> cheapest_recomputes(const StepTrace& t) {
  // Tiny outputs (a norm's statistics) do not set the scale.
  uint64_t largest = 0;
  for (const TraceTensor& x : t.tensors)
    if (selective_drops(t, x)) largest = std::max(largest, x.bytes);
  const uint64_t sizable = std::min<uint64_t>(uint64_t(1) << 20, largest / 4);
  double lowest = 0;
  for (const TraceTensor& x : t.tensors)
    if (selective_drops(t, x) && x.bytes >= sizable) {
      const double c = x.recompute_seconds / double(x.bytes);
      if (lowest == 0 || c < lowest) lowest = c;
    }
  std::vector<char> cheap(t.tensors.size(), 0);
  for (size_t k = 0; k < t.tensors.size(); ++k) {
    const TraceTensor& x = t.tensors[k];
    cheap[k] = selective_drops(t, x) && !gemm_like(t.ops[size_t(x.producer)].kind) &&
               (lowest == 0 || x.recompute_seconds / double(std::max<uint64_t>(x.bytes, 1)) <= 2 * lowest);
  }
  return cheap;
}

std::vector<BlockFigures> figures(const StepTrace& t) {
  std::vector<BlockFigures> f(t.blocks.size());
  const std::vector<char> cheap = cheapest_recomputes(t);
  for (size_t k = 0; k < t.tensors.size(); ++k) {
    const TraceTensor& x = t.tensors[k];
    if (x.block < 0 || x.first_backward_use < 0) continue;
    BlockFigures& b = f[size_t(x.block)];
    b.saved += x.bytes;
    if (x.block_input) b.inputs += x.bytes;
    if (selective_drops(t, x)) {
      b.recomputable += x.bytes;
      b.recompute_ops += x.recompute_seconds;
      if (cheap[k]) {
        b.cheap += x.bytes;
        b.cheap_ops += x.recompute_seconds;
      }
    }
  }
  for (const TraceOp& o : t.ops) {
    if (o.block < 0) continue;
    BlockFigures& b = f[size_t(o.block)];
    b.workspace = std::max(b.workspace, o.temp_bytes);
    (o.phase == TracePhase::Forward ? b.forward : b.backward) += o.seconds;
  }
  return f;
}

uint64_t kept_out(const BlockFigures& b, Selective s) {
  return s == Selective::All ? b.recomputable : s == Selective::Cheap ? b.cheap : 0;
}

double recompute_cost(const BlockFigures& b, Selective s) {
  return s == Selective::All ? b.recompute_ops : s == Selective::Cheap ? b.cheap_ops : 0.0;
}

std::vector<uint64_t> held_at_forward_end(const StepTrace& t, Selective selective, double rate, double latency) {
  const std::vector<char> cheap = cheapest_recomputes(t);
  std::vector<double> end_of(t.ops.size(), 0.0);
  double clock = 0, forward_end = 0;
  for (size_t i = 0; i < t.ops.size(); ++i) {
    clock += t.ops[i].seconds;
    end_of[i] = clock;
    if (t.ops[i].phase == TracePhase::Forward) forward_end = clock;
  }
  std::vector<std::vector<const TraceTensor*>> by_block(t.blocks.size());
  for (size_t k = 0; k < t.tensors.size(); ++k) {
    const TraceTensor& x = t.tensors[k];
    const bool dropped = selective == Selective::All ? selective_drops(t, x) : selective == Selective::Cheap && cheap[k];
    if (x.block >= 0 && x.first_backward_use >= 0 && !dropped) by_block[size_t(x.block)].push_back(&x);
  }
  std::vector<uint64_t> held(t.blocks.size(), 0);
  double channel = 0;
  for (size_t b = 0; b < t.blocks.size(); ++b) {
    auto& xs = by_block[b];
    std::stable_sort(xs.begin(), xs.end(), [](const TraceTensor* a, const TraceTensor* c) { return a->producer < c->producer; });
    for (const TraceTensor* x : xs) {
      channel = std::max(channel, end_of[size_t(x->producer)]) + latency + double(x->bytes) / rate;
      if (channel > forward_end) held[b] += x->bytes;
    }
  }
  return held;
}

std::vector<double> load_stalls(const StepTrace& t, const std::vector<BlockFigures>& f, const OffloadVariant& v,
                                size_t depth) {
  const size_t L = t.blocks.size();
  std::vector<double> stall(L, 0.0);
  if (L == 0) return stall;
  std::vector<double> enter(L + 1, 0.0);  // from backward's start, when backward enters block b
  {
    double clock = 0;
    std::vector<double> start(t.ops.size(), 0.0);
    bool started = false;
    for (size_t i = 0; i < t.ops.size(); ++i) {
      if (t.ops[i].phase == TracePhase::Backward) started = true;
      start[i] = clock;
      if (started) clock += t.ops[i].seconds;
    }
    for (size_t b = 0; b < L; ++b)
      enter[b] = t.blocks[b].first_backward_op >= 0 ? start[size_t(t.blocks[b].first_backward_op)] : clock;
  }
  auto bytes_of = [&](size_t b) { return double(f[b].saved - kept_out(f[b], v.selective)); };
  size_t K = 0;
  while (K < L && v.held[K] == 0) ++K;
  K = std::min(L, K + 1);
  double channel = 0, shift = 0;
  for (size_t b = K; b-- > 0;) {
    const double issue = (b + depth < L ? enter[b + depth] : 0.0) + shift;
    const double end = std::max(issue, channel) + v.load_latency + bytes_of(b) / v.load_rate;
    channel = end;
    const double need = enter[b] + shift;
    if (end > need) {
      stall[b] = end - need;
      shift += stall[b];
    }
  }
  for (size_t b = K; b < L; ++b) {
    double window = 0;
    for (size_t i = 1; i <= depth && b + i < L; ++i) window += f[b + i].backward;
    stall[b] = std::max(0.0, bytes_of(b) / v.load_rate + v.load_latency - window);
  }
  return stall;
}

uint64_t outside_bytes(const StepTrace& t) {
  uint64_t s = 0;
  for (const TraceTensor& x : t.tensors)
    if (x.block < 0 && x.first_backward_use >= 0) s += x.bytes;
  return s;
}

ChainProblem chain_problem(const StepTrace& t, const HardwareProfile& hw, uint64_t budget, const PlannerOptions& o,
                           size_t prefetch_blocks, bool prefix_offload) {
  const size_t k = std::max<size_t>(prefetch_blocks, 1);
  const std::vector<BlockFigures> f = figures(t);
  ChainProblem p;
  p.budget_bytes = budget;
  p.base_bytes = outside_bytes(t) + (o.activations_only ? 0 : t.resident_bytes);
  // On a CPU the host pool is the same RAM: offloading there saves nothing.
  const bool host = o.allow_host && hw.gpu && hw.to_host_bytes_per_second() > 0 && hw.from_host_bytes_per_second() > 0;
  const bool nvme = o.allow_nvme && !hw.drives.empty();
  std::vector<double> forward_after(f.size() + 1, 0.0);  // forward time of the blocks after b
  for (size_t b = f.size(); b-- > 0;) forward_after[b] = forward_after[b + 1] + (b + 1 < f.size() ? f[b + 1].forward : 0.0);
  std::vector<OffloadVariant> variants;
  // A cheaper selective level only where some block has recomputable outputs of both kinds.
  bool cheap_differs = false;
  for (const BlockFigures& x : f) cheap_differs = cheap_differs || (x.cheap > 0 && x.cheap < x.recomputable);
  // On a CPU the I/O threads' copies and checksums bound each transfer and take compute time.
  const bool io_cpu = !hw.gpu && hw.io_cpu_bytes_per_second.set();
  const double io_rate = io_cpu ? hw.io_cpu_bytes_per_second.value : 0.0;
  const double io_steal = io_cpu ? hw.io_compute_steal.value * 2.0 / io_rate : 0.0;  // per byte, out and back
  auto add_variant = [&](const std::string& tier, double store_rate, double store_latency, double load_rate,
                         double load_latency) {
    if (io_cpu) {
      store_rate = std::min(store_rate, io_rate);
      load_rate = std::min(load_rate, io_rate);
    }
    for (Selective sel : {Selective::None, Selective::All, Selective::Cheap}) {
      if (sel != Selective::None && !o.allow_selective) continue;
      if (sel == Selective::Cheap && !cheap_differs) continue;
      const std::string name = sel == Selective::None  ? tier
                               : sel == Selective::All ? "selective+" + tier
                                                       : "selective-cheap+" + tier;
      OffloadVariant v{name, sel, prefix_offload ? int(variants.size()) + 1 : 0,
                       load_rate, load_latency, store_rate, {}, {}};
      v.held = held_at_forward_end(t, sel, store_rate, store_latency);
      v.stall = load_stalls(t, f, v, k);
      variants.push_back(std::move(v));
    }
  };
  if (host)
    add_variant("host", hw.to_host_bytes_per_second(), hw.gpu ? hw.link_latency_seconds.value : 0,
                hw.from_host_bytes_per_second(), hw.gpu ? hw.link_latency_seconds.value : 0);
  if (nvme) {
    double load = hw.nvme_read_bytes_per_second(), store = hw.nvme_write_bytes_per_second();
    if (hw.gpu) {
      load = std::min(load, hw.host_to_device_bytes_per_second.value);
      store = std::min(store, hw.device_to_host_bytes_per_second.value);
    }
    const double link = hw.gpu ? hw.link_latency_seconds.value : 0;
    add_variant("nvme", store, hw.nvme_write_latency_seconds() + link, load, hw.nvme_read_latency_seconds() + link);
  }
  for (size_t b = 0; b < t.blocks.size(); ++b) {
    const BlockFigures& x = f[b];
    const uint64_t work = o.activations_only ? 0 : x.workspace;
    ChainBlock cb;
    cb.path = t.blocks[b].path;
    cb.options.push_back({"keep", x.saved, x.saved + work, 0.0});
    if (o.allow_selective && x.recomputable > 0)
      cb.options.push_back({"selective", x.saved - x.recomputable, x.saved + work, x.recompute_ops});
    if (o.allow_selective && x.cheap > 0 && x.cheap < x.recomputable)
      cb.options.push_back({"selective-cheap", x.saved - x.cheap, x.saved + work, x.cheap_ops});
    if (o.allow_recompute) cb.options.push_back({"recompute", x.inputs, x.saved + work, x.forward});
    // Offloaded: in backward the block is back in memory while the k blocks before it are being
    // prefetched; its extra time is its wait for its load (load_stalls). What it holds at the peak
    // (forward's end) is what the shared store channel has not finished by then, with every block
    // before it offloaded the same way.
    // Without prefix groups (prefix_offload false) every block is judged alone, as if it had the
    // channels to itself: optimistic where many blocks offload (the simulator and the repair
    // loop correct it), but it reaches plans that offload later, smaller blocks (ResNet).
    double window = 0;
    for (size_t i = 1; i <= k && b + i < f.size(); ++i) window += f[b + i].backward;
    for (OffloadVariant& v : variants) {
      const uint64_t bytes = x.saved - kept_out(x, v.selective);
      // What the k blocks before it bring back: what they offloaded (their selective drops are
      // made again in their own backward, not loaded).
      uint64_t ahead = 0;
      for (size_t i = 1; i <= k && i <= b; ++i) ahead += f[b - i].saved - kept_out(f[b - i], v.selective);
      uint64_t held = v.held[b];
      double stall = v.stall[b];
      if (!prefix_offload) {
        const double store = double(bytes) / v.store_rate;
        held = store <= forward_after[b] ? 0 : uint64_t(double(bytes) * (1.0 - forward_after[b] / store));
        stall = std::max(0.0, double(bytes) / v.load_rate + v.load_latency - window);
      }
      cb.options.push_back({v.name, held, x.saved + ahead + work,
                            recompute_cost(x, v.selective) + stall + io_steal * double(bytes), v.group});
    }
    p.blocks.push_back(std::move(cb));
  }
  return p;
}

SimPlan sim_plan_for(const StepTrace& t, const ChainProblem& problem, const std::vector<int>& choice,
                     size_t prefetch_blocks) {
  STRATA_CHECK(choice.size() == t.blocks.size() && problem.blocks.size() == t.blocks.size(), ValueError,
               "sim_plan_for: ", choice.size(), " choices for ", t.blocks.size(), " blocks");
  SimPlan p = SimPlan::keep_all(t);
  p.prefetch_blocks = std::max<size_t>(prefetch_blocks, 1);
  std::vector<std::string> what(t.blocks.size());
  for (size_t b = 0; b < t.blocks.size(); ++b) {
    what[b] = problem.blocks[b].options.at(size_t(choice[b])).name;
    p.segments[b] = what[b] == "recompute";
  }
  const std::vector<char> cheap = cheapest_recomputes(t);
  auto ends_with = [](const std::string& w, const char* tail) {
    const size_t n = std::char_traits<char>::length(tail);
    return w.size() >= n && w.compare(w.size() - n, n, tail) == 0;
  };
  for (size_t k = 0; k < t.tensors.size(); ++k) {
    const TraceTensor& x = t.tensors[k];
    if (x.block < 0) continue;
    const std::string& w = what[size_t(x.block)];
    bool sel = w.rfind("selective-cheap", 0) == 0 ? bool(cheap[k])
                                                  : w.rfind("selective", 0) == 0 && selective_drops(t, x);
    if (sel && x.block_input && p.segments[size_t(producer_block(t, x))]) sel = false;
    if (w == "host" || ends_with(w, "+host")) p.tensors[k] = CacheAction::Host;
    if (w == "nvme" || ends_with(w, "+nvme")) p.tensors[k] = CacheAction::Nvme;
    if (sel) p.tensors[k] = CacheAction::Recompute;
  }
  return p;
}

}  // namespace strata::memory::planner
