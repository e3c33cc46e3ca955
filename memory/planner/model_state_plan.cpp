#include "strata/memory/planner/model_state_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "strata/core/byte_size.h"
#include "strata/core/error.h"
#include "strata/nn/planner_blocks.h"

namespace strata::memory::planner {

using optim::StatePlacement;

uint64_t ModelState::block_bytes() const {
  uint64_t s = 0;
  for (uint64_t b : block_weight_bytes) s += b;
  return s;
}

uint64_t ModelState::largest_block() const {
  uint64_t m = 0;
  for (uint64_t b : block_weight_bytes) m = std::max(m, b);
  return m;
}

uint64_t ModelState::weight_bytes() const { return block_bytes() + outside_weight_bytes; }

uint64_t ModelState::optimizer_bytes() const {
  return uint64_t(std::llround(double(weight_bytes()) * optimizer_state_per_weight_byte));
}

ModelState model_state_of(const nn::Module& model, double optimizer_state_per_weight_byte) {
  ModelState s;
  s.optimizer_state_per_weight_byte = optimizer_state_per_weight_byte;
  const nn::PlannerBlocks blocks = nn::planner_blocks(model);
  s.block_weight_bytes.assign(blocks.paths.size(), 0);
  for (const auto& [name, p] : model.named_parameters()) {
    auto it = blocks.block_of.find(p.impl());
    (it == blocks.block_of.end() ? s.outside_weight_bytes : s.block_weight_bytes[it->second]) +=
        uint64_t(p.nbytes());
  }
  return s;
}

std::string ModelStatePlacement::describe() const {
  return std::string("weights ") + optim::state_placement_name(weights) + ", gradients " +
         optim::state_placement_name(gradients) + ", optimizer state " +
         optim::state_placement_name(optimizer_state);
}

namespace {

double seconds(double bytes, double rate) { return bytes <= 0 ? 0 : bytes / std::max(rate, 1.0); }

}  // namespace

uint64_t model_state_device_bytes(const ModelState& st, const ModelStatePlacement& p,
                                  size_t prefetch_blocks) {
  const uint64_t all = st.weight_bytes();
  const uint64_t window =
      std::min<uint64_t>(st.block_weight_bytes.size(), prefetch_blocks + 1) * st.largest_block();
  uint64_t on_device = 0;
  for (StatePlacement kind : {p.weights, p.gradients})
    on_device += kind == StatePlacement::Device ? all : st.outside_weight_bytes + window;
  if (p.optimizer_state == StatePlacement::Device) on_device += st.optimizer_bytes();
  return on_device;
}

ModelStateCost model_state_cost(const ModelState& st, const ModelStatePlacement& p, const HardwareProfile& hw,
                                size_t prefetch_blocks) {
  ModelStateCost c;
  const uint64_t blocks = st.block_bytes(), all = st.weight_bytes(), moments = st.optimizer_bytes();
  c.device_bytes = model_state_device_bytes(st, p, prefetch_blocks);
  // Forward's and backward's traffic per channel, and the update's.
  double link_fb = 0, read_fb = 0, write_fb = 0, link_up = 0, read_up = 0, write_up = 0;
  auto hold = [&](StatePlacement where, uint64_t bytes) {
    if (where == StatePlacement::Host) c.host_bytes += bytes;
    if (where == StatePlacement::Nvme) c.nvme_bytes += bytes;
  };
  // Weights: in for forward and for backward, home after the update.
  if (p.weights != StatePlacement::Device) {
    hold(p.weights, blocks);
    (p.weights == StatePlacement::Host ? link_fb : read_fb) += 2.0 * double(blocks);
    (p.weights == StatePlacement::Host ? link_up : write_up) += double(blocks);
  }
  // Gradients: home as backward leaves each block, back for the update.
  if (p.gradients != StatePlacement::Device) {
    hold(p.gradients, blocks);
    (p.gradients == StatePlacement::Host ? link_fb : write_fb) += double(blocks);
    (p.gradients == StatePlacement::Host ? link_up : read_up) += double(blocks);
  }
  // The update: on the device it streams weights, gradients and moments through device memory; on
  // the host through host memory, with the weights and gradients on the device crossing the link.
  const double touched = 2.0 * double(all) + double(all) + 2.0 * double(moments);
  double update_compute = 0;
  if (p.optimizer_state == StatePlacement::Device) {
    update_compute = seconds(
        touched, hw.gpu ? hw.device_memory_bytes_per_second.value : hw.host_memcpy_bytes_per_second.value);
  } else {
    hold(p.optimizer_state, moments);
    update_compute = seconds(touched, hw.host_memcpy_bytes_per_second.value);
    if (hw.gpu) {
      if (p.weights == StatePlacement::Device) link_up += 2.0 * double(all);
      if (p.gradients == StatePlacement::Device) link_up += double(all);
    }
    if (p.optimizer_state == StatePlacement::Nvme) read_up += double(moments), write_up += double(moments);
  }
  c.link_bytes = uint64_t(link_fb + link_up);
  c.nvme_read_bytes = uint64_t(read_fb + read_up);
  c.nvme_write_bytes = uint64_t(write_fb + write_up);
  const double link_rate = std::min(hw.from_host_bytes_per_second(), hw.to_host_bytes_per_second());
  c.transfer_seconds =
      std::max({seconds(link_fb, link_rate), seconds(read_fb, hw.nvme_read_bytes_per_second()),
                seconds(write_fb, hw.nvme_write_bytes_per_second())});
  c.update_seconds = std::max({update_compute, seconds(link_up, link_rate),
                               seconds(read_up, hw.nvme_read_bytes_per_second()) +
                                   seconds(write_up, hw.nvme_write_bytes_per_second())});
  return c;
}

std::vector<ModelStatePlacement> placement_ladder(const ModelState& st, const WholeStepOptions& w,
                                                  const ModelStateTiers& tiers) {
  const bool host = tiers.host, nvme = tiers.nvme, host_update = tiers.host_update;
  auto offered = [&](std::optional<StatePlacement> pinned, const char* what) {
    if (!pinned) return;
    STRATA_CHECK(*pinned != StatePlacement::Host || host, ValueError, "plan_whole_step: ", what,
                 " in host memory, but there is no host tier (on a CPU device host memory is the device's)");
    STRATA_CHECK(*pinned != StatePlacement::Nvme || nvme, ValueError, "plan_whole_step: ", what,
                 " on NVMe, but there is no NVMe tier");
  };
  offered(w.weights, "weights");
  offered(w.gradients, "gradients");
  offered(w.optimizer_state, "optimizer state");
  STRATA_CHECK(host_update || !w.optimizer_state || *w.optimizer_state == StatePlacement::Device, ValueError,
               "plan_whole_step: optimizer state off the device, but its update cannot run on the host");
  uint64_t host_room = w.host_memory_bytes > 0 ? w.host_memory_bytes : std::numeric_limits<uint64_t>::max();
  ModelStatePlacement p;
  p.weights = w.weights.value_or(StatePlacement::Device);
  p.gradients = w.gradients.value_or(StatePlacement::Device);
  p.optimizer_state = w.optimizer_state.value_or(StatePlacement::Device);
  const uint64_t blocks = st.block_bytes();
  for (StatePlacement pinned : {p.weights, p.gradients})
    if (pinned == StatePlacement::Host) host_room -= std::min(host_room, blocks);
  if (p.optimizer_state == StatePlacement::Host) host_room -= std::min(host_room, st.optimizer_bytes());
  std::vector<ModelStatePlacement> ladder{p};
  struct Kind {
    bool pinned;
    StatePlacement ModelStatePlacement::*field;
    uint64_t host_bytes;
  };
  const Kind kinds[] = {
      {w.optimizer_state.has_value(), &ModelStatePlacement::optimizer_state, st.optimizer_bytes()},
      {w.gradients.has_value(), &ModelStatePlacement::gradients, blocks},
      {w.weights.has_value(), &ModelStatePlacement::weights, blocks}};
  for (const Kind& k : kinds) {
    if (k.pinned) continue;
    if (k.field == &ModelStatePlacement::optimizer_state && (!host_update || k.host_bytes == 0)) continue;
    if (host && k.host_bytes <= host_room) {
      host_room -= k.host_bytes;
      p.*k.field = StatePlacement::Host;
    } else if (nvme) {
      p.*k.field = StatePlacement::Nvme;
    } else {
      break;  // nowhere further to go
    }
    ladder.push_back(p);
  }
  return ladder;
}

WholeStepPlan plan_whole_step(const StepTrace& trace, const ModelState& st, const HardwareProfile& hw,
                              uint64_t budget, const PlannerOptions& options, const WholeStepOptions& w) {
  PlannerOptions o = options;
  o.activations_only = false;
  WholeStepPlan out;
  StepTrace t = trace;
  // On a CPU device host memory is the device's; an update on the host streams through host
  // memory at the profile's rate, and without it there is no figure to price it by.
  ModelStateTiers tiers;
  tiers.host = w.allow_host && hw.gpu;
  tiers.nvme = w.allow_nvme && !hw.drives.empty();
  tiers.host_update = hw.host_memcpy_bytes_per_second.set();
  STRATA_CHECK(
      tiers.host_update || !w.optimizer_state || *w.optimizer_state == StatePlacement::Device, ValueError,
      "plan_whole_step: optimizer state off the device needs the profile's host_memcpy_bytes_per_second "
      "(the host update's rate); '",
      hw.name, "' has none");
  STRATA_CHECK(!w.weights || *w.weights != StatePlacement::Host || hw.gpu, ValueError,
               "plan_whole_step: weights in host memory, but the device is the host");
  WholeStepOptions capped = w;
  if (capped.host_memory_bytes == 0 && hw.host_memory_bytes.set())
    capped.host_memory_bytes = uint64_t(hw.host_memory_bytes.value);
  for (const ModelStatePlacement& p : placement_ladder(st, capped, tiers)) {
    WholeStepCandidate c;
    c.placement = p;
    c.state = model_state_cost(st, p, hw, w.prefetch_blocks);
    t.resident_bytes = c.state.device_bytes;
    c.activations = plan_step(t, hw, budget, o);
    const SimResult& s = c.activations.plan.predicted;
    c.fits = c.activations.plan.fits;
    c.step_seconds =
        s.step_seconds + std::max(0.0, c.state.transfer_seconds - s.step_seconds) + c.state.update_seconds;
    c.lowest_step_peak = budgeted_peak(s, o, hw);
    for (const PolicyResult& b : c.activations.baselines)
      c.lowest_step_peak = std::min(c.lowest_step_peak, budgeted_peak(b.predicted, o, hw));
    out.candidates.push_back(std::move(c));
  }
  std::optional<size_t> fastest;
  for (size_t i = 0; i < out.candidates.size(); ++i) {
    const WholeStepCandidate& c = out.candidates[i];
    if (c.fits && (!fastest || c.step_seconds < out.candidates[*fastest].step_seconds)) fastest = i;
  }
  // The smallest feasible budget: the last placement holds the least on the device (the activation
  // side is the same for all), so bisect the budget its plan holds, to a ten-thousandth.
  const WholeStepCandidate& least = out.candidates.back();
  t.resident_bytes = least.state.device_bytes;
  auto held = [&](uint64_t b) { return plan_step(t, hw, b, o).plan.fits; };
  uint64_t lo = least.state.device_bytes,
           hi = least.fits ? budget : simulate(t, SimPlan::keep_all(t), hw, false).step_peak;
  for (int i = 0; i < 8 && !held(hi); ++i) lo = hi, hi *= 2;
  while (hi - lo > std::max<uint64_t>(1, hi / 10000)) {
    const uint64_t mid = lo + (hi - lo) / 2;
    (held(mid) ? hi : lo) = mid;
  }
  out.smallest_feasible_budget = hi;
  const size_t lowest = out.candidates.size() - 1;
  out.fits = fastest.has_value();
  out.chosen_index = fastest.value_or(lowest);
  const WholeStepCandidate& c = out.chosen();
  const double mb = 1e6;
  char buf[512];
  if (out.fits) {
    std::snprintf(
        buf, sizeof buf,
        "budget %.1f MB for the whole step: %s (%.1f MB of model state on the device), activations: "
        "%s; predicted step %.4g s (everything on the device: %.4g s)",
        double(budget) / mb, c.placement.describe().c_str(), double(c.state.device_bytes) / mb,
        c.activations.plan.block_summary.c_str(), c.step_seconds, out.candidates.front().step_seconds);
  } else {
    std::snprintf(
        buf, sizeof buf,
        "budget %.1f MB cannot be met for the whole step: the smallest feasible budget is %.1f MB (%s, "
        "%.1f MB of model state on the device)",
        double(budget) / mb, double(out.smallest_feasible_budget) / mb, c.placement.describe().c_str(),
        double(c.state.device_bytes) / mb);
  }
  out.explanation = buf;
  return out;
}

}  // namespace strata::memory::planner
