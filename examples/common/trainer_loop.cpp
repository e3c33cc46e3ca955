#include "examples/common/trainer_loop.h"

#include <algorithm>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include "examples/common/data_parallel.h"
#include "examples/common/finite_loss.h"
#include "examples/common/model_state.h"
#include "examples/common/trainer_common.pb.h"
#include "strata/core/factory.h"
#include "strata/dist/zero.h"
#include "strata/memory/planner/hardware.h"
#include "strata/ops/elementwise.h"
#include "strata/optim/clip_grad.h"

namespace strata::examples {

namespace {

// The placement that moves the most model state that any rank's plan chose (the options run from
// the least moved to the most): every rank places the same, so rank 0's lines speak for all.
size_t most_moved_by_any_rank(dist::ProcessGroup& group, size_t mine, size_t options) {
  for (size_t k = options; k-- > 1;)
    if (group.all_reduce_scalar(mine >= k ? 1.0 : 0.0) > 0) return k;
  return 0;
}

// Test hook: STRATA_TEST_KILL_RANK=r and STRATA_TEST_KILL_STEP=s SIGKILL rank r once s steps have
// run, so ctest can check that the other ranks fail naming it instead of hanging.
void maybe_kill_self(int rank, int64_t step) {
  const char* r = std::getenv("STRATA_TEST_KILL_RANK");
  const char* s = std::getenv("STRATA_TEST_KILL_STEP");
  if (r && s && std::atoi(r) == rank && std::atoll(s) == step) {
    std::fprintf(stderr, "rank %d killing itself before step %ld (STRATA_TEST_KILL_*)\n", rank, long(step));
    std::fflush(stderr);
    std::raise(SIGKILL);
  }
}

memory::CacheSettings on_device(memory::CacheSettings s, Device device) {
  s.device = device;
  return s;
}

}  // namespace

std::string field(const char* format, ...) {
  char buf[256];
  va_list args;
  va_start(args, format);
  const int n = std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return std::string(buf, size_t(std::clamp(n, 0, int(sizeof buf) - 1)));
}

double run_peak_flops(const RunConfig& run, bool bf16, bool tf32) {
  if (run.hardware().empty()) return 0;
  const memory::planner::HardwareProfile hw = memory::planner::load_hardware_profile(run.hardware());
  const double peak = memory::planner::peak_matmul_flops(hw, bf16, tf32);
  STRATA_CHECK(peak > 0, ValueError, "--hardware '", run.hardware(), "' gives no matmul_flops_",
               bf16   ? "bf16"
               : tf32 ? "tf32"
                      : "fp32",
               " for this run's precision");
  return peak;
}

TrainLoop::TrainLoop(TrainLoopParts parts)
    : parts_(std::move(parts)),
      lead_(!parts_.ranks || parts_.ranks->lead()),
      step_(parts_.first_step),
      start_(std::chrono::steady_clock::now()) {
  const RunConfig& run = *parts_.run;
  STRATA_CHECK(parts_.first_step == 0 || parts_.first_step < run.max_steps(), ValueError, "--max-steps ",
               run.max_steps(), " is not past the checkpoint's step ", parts_.first_step,
               ": a resumed run would train no step (raise --max-steps)");
  if (lead_) std::printf("  device %s\n", parts_.device->describe().c_str());
  const std::string state = optimizer_state_line(*parts_.optimizer);
  if (lead_ && !state.empty()) std::printf("  %s\n", state.c_str());
  if (const memory::ParamPager* pager = this->pager()) {
    STRATA_CHECK(group() == nullptr || pager->settings().gradients == optim::StatePlacement::Device,
                 ValueError, "--gradients ", optim::state_placement_name(pager->settings().gradients),
                 ": under mpirun gradients stay on the device (data parallel averages them there)");
    if (lead_) std::printf("  %s\n", pager_line(*pager).c_str());
    pager_guard_.emplace(this->pager()->wrap(nullptr));
  }
  if (parts_.model_state) {
    parts_.cache.model_state = parts_.model_state->options();
    if (lead_ && !parts_.cache.model_state.empty())
      std::printf(
          "  model state: %s for the planning step; the budget's plan may move more of it off the device\n",
          parts_.model_state->describe().c_str());
  }
  if (lead_ && run.max_seconds() > 0)
    std::printf("  training for %.0f s (or %ld steps)\n", run.max_seconds(), long(run.max_steps()));
  // strata_report draws the budget's plan from the report folder.
  if (lead_ && !run.report().empty() && parts_.cache.memory_budget > 0 && parts_.cache.save_plan.empty())
    parts_.cache.save_plan = run.report() + "/plan.textproto";
  cache_ = std::make_unique<memory::TrainerCache>(on_device(parts_.cache, parts_.device->device));
  // Asked-for behaviour that cannot happen is an error, not a warning and a run without it: every
  // block's activations sent to an NVMe tier that is not there.
  const std::string no_tier = cache_->missing_nvme_tier();
  STRATA_CHECK(no_tier.empty(), IoError, "--cache-policy nvme: no NVMe tier to write to (",
               parts_.cache.spill_dir.empty() ? "no --spill-dir given" : no_tier, ")");
  if (lead_ && cache_->reports()) std::printf("  %s\n", cache_->describe().c_str());
  if (lead_ && !run.report().empty()) {
    report_ = std::make_unique<MetricsReport>(run.report());
    std::printf("  report: %s (tensorboard --logdir %s)\n", run.report().c_str(), run.report().c_str());
  }
  profiler_.wait_for(parts_.device->device);  // on CUDA each op is charged its kernels' time
}

dist::ProcessGroup* TrainLoop::group() const { return parts_.ranks ? parts_.ranks->group() : nullptr; }

double TrainLoop::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

double TrainLoop::progress() const {
  const RunConfig& run = *parts_.run;
  return run.max_seconds() > 0 ? elapsed() / run.max_seconds() : double(step_) / double(run.max_steps());
}

bool TrainLoop::keep_going() {
  const RunConfig& run = *parts_.run;
  bool go = step_ < run.max_steps() && (run.max_seconds() <= 0 || elapsed() < run.max_seconds());
  if (group() && run.max_seconds() > 0) go = group()->all_reduce_scalar(lead_ && go ? 1.0 : 0.0) > 0;
  if (go && group()) maybe_kill_self(group()->rank(), step_);
  if (go) {
    step_start_ = std::chrono::steady_clock::now();
    parts_.trainer_run->running_step = step_ + 1;
  }
  return go;
}

TrainStep::TrainStep(TrainLoop& loop)
    : profile_(loop.profiler_, loop.parts_.run->profile() && loop.steps_run_ >= 2) {
  loop.allocator().stats().reset_peaks();
  loop.parts_.schedule->apply(*loop.parts_.optimizer, loop.step_);
  loop.parts_.optimizer->zero_grad();
  dist::ShardedParameters* sharded = loop.parts_.ranks ? loop.parts_.ranks->sharded_parameters() : nullptr;
  if (loop.pager())
    cache_guard_.emplace(loop.pager()->wrap(loop.cache_->cache()));
  else if (sharded)  // ZeRO-3: a layer's gathered weights go when its scope ends
    cache_guard_.emplace(sharded->wrap(loop.cache_->cache()));
  else
    cache_guard_.emplace(loop.cache_->cache());
  loop.cache_->begin_step();
}

void TrainLoop::finish_update(TrainStep& s) {
  s.phase("optimizer");
  cache_->before_update();
  // The norm stays on the device until a step line prints it (no synchronization per step). Under
  // ZeRO-2 and 3 each rank holds spans of the gradients, and the optimizer clips them over every rank.
  auto* zero = dynamic_cast<dist::ZeroRedundancyOptimizer*>(parts_.optimizer);
  if (parts_.grad_clip <= 0)
    norm_ = Tensor();
  else if (zero && zero->stage() >= 2)
    norm_ = strata::full({1}, zero->clip_grad_norm_(parts_.grad_clip), DType::f64);
  else
    norm_ = optim::clip_grad_norm_tensor_(parts_.parameters, parts_.grad_clip);
  parts_.optimizer->step();
  // The gradients go once the update has used them: evaluation and checkpoints between steps run
  // without them (the next step would drop them anyway).
  parts_.optimizer->zero_grad();
  if (pager()) {
    pager()->end_step();
    ++pager_steps_;
  }
  s.profile_.step_done();
  s.cache_guard_.reset();
  memory::BudgetOutcome plan = cache_->end_step();
  STRATA_CHECK(plan.feasible, ValueError, "--memory-budget: ", plan.explanation);
  if (lead_ && plan.made) std::printf("  plan: %s\n", plan.explanation.c_str());
  if (plan.made && parts_.model_state && group())
    plan.model_state =
        most_moved_by_any_rank(*group(), plan.model_state, parts_.model_state->options().size());
  if (plan.made && plan.model_state > 0) {
    // The old pager's policy goes before the pager does; the new one sees every scope from here on.
    pager_guard_.reset();
    parts_.model_state->move_to(plan.model_state);
    pager_steps_ = 0;
    if (pager()) pager_guard_.emplace(pager()->wrap(nullptr));
    if (lead_ && pager()) std::printf("  %s\n", pager_line(*pager()).c_str());
    const std::string state = optimizer_state_line(*parts_.optimizer);
    if (lead_ && !state.empty()) std::printf("  %s\n", state.c_str());
  }
  memory_ = allocator().stats().snapshot();
  ++step_;
  ++steps_run_;
}

void TrainLoop::end_text_step(double tokens_per_step, double flops_per_token, const std::string& loss_label,
                              const std::string& val_tag, const std::function<double()>& evaluate,
                              std::optional<double>* last_val, const std::function<void(int64_t)>& save) {
  const std::string rate = throughput("train/tokens_per_s", "tok/s", tokens_per_step, flops_per_token);
  const bool eval_now = evaluate && eval_due();
  // Under ZeRO-3 every rank gathers the weights for rank 0's evaluation.
  if (eval_due())
    with_whole_parameters([&] {
      if (eval_now) report(val_tag, *(*last_val = evaluate()));
    });
  if (log_due(eval_now))
    print_step_line({loss_label + field(" %.4f", last_loss()), "val " + measured_or_dash(*last_val), rate});
  if (checkpoint_due()) with_whole_parameters([&] { save(step()); });
}

void TrainLoop::with_whole_parameters(const std::function<void()>& fn) const {
  if (parts_.ranks)
    parts_.ranks->with_whole_parameters(fn);
  else
    fn();
}

void TrainLoop::finish_step() {
  secs_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - step_start_).count();
  if (steps_run_ > 1) timed_seconds_ += secs_;
  const RunConfig& run = *parts_.run;
  if (const std::optional<double> per_step = parts_.schedule->time_step(steps_run_, secs_)) {
    int64_t total = step_ + int64_t((run.max_seconds() - elapsed()) / *per_step);
    if (group()) total = int64_t(group()->all_reduce_scalar(lead_ ? double(total) : 0.0));  // rank 0's
    parts_.schedule->set_length(total);
    if (lead_) std::printf("  lr schedule: %ld steps (%.2f s/step measured)\n", long(total), *per_step);
  }
  report_step();
}

void TrainLoop::report(const std::string& tag, double value) {
  if (report_) report_->add(tag, value, step_);
}

std::string TrainLoop::throughput(const std::string& tag, const char* unit, double items_per_step,
                                  double flops_per_item) {
  const double per_second = items_per_step / secs_;
  report(tag, per_second);
  std::string f = field("%6.0f ", per_second) + unit;
  if (parts_.peak_flops > 0 && flops_per_item > 0) {
    const double mfu =
        memory::planner::model_flops_utilization(flops_per_item, per_second, parts_.peak_flops);
    report("train/mfu", mfu);
    f += field(" | MFU %.1f%%", 100 * mfu);
  }
  return f;
}

void TrainLoop::report_step() {
  if (!report_) return;
  report("train/loss", last_loss_);
  report("train/lr", parts_.schedule->lr_at(step_ - 1));
  if (norm_.defined()) report("train/grad_norm", norm_.item());
  report("time/step_seconds", secs_);
  for (size_t c = 0; c < kNumMemoryCategories; ++c)
    report(std::string("memory/") + memory_category_name(MemoryCategory(c)) + "_peak_mb",
           double(memory_.peak[c]) / 1e6);
  report("memory/step_peak_mb", double(memory_.total_peak) / 1e6);
  report("memory/rss_peak_mb", peak_rss_mb());
  if (cache_->reports()) {
    const memory::CacheStats& c = cache_->last_stats();
    report("cache/nvme_written_mb", double(c.nvme.bytes_written) / 1e6);
    report("cache/nvme_read_mb", double(c.nvme.bytes_read) / 1e6);
    report("cache/host_written_mb", double(c.host.bytes_written) / 1e6);
    report("cache/host_read_mb", double(c.host.bytes_read) / 1e6);
    report("cache/stall_seconds", c.stall_seconds);
    report("cache/store_wait_seconds", c.store_wait_seconds);
    report("cache/recompute_seconds", c.recompute_seconds);
    report("cache/host_pool_peak_mb", double(c.host_pool_peak) / 1e6);
    report("cache/spill_arena_peak_mb", double(c.spill_arena_peak) / 1e6);
  }
  report_->flush();
}

void TrainLoop::run_step(const std::function<Tensor()>& forward) {
  TrainStep s(*this);
  const int64_t accum = parts_.run->grad_accum();
  if (accum == 1 && !group()) {
    s.phase("forward");
    const Tensor loss = forward();
    s.phase("backward");
    loss.backward();
    end_step(s, loss);
    return;
  }
  double loss_sum = 0;
  for (int64_t micro = 0; micro < accum; ++micro) {
    if (parts_.ranks) parts_.ranks->micro_batch(micro, accum);
    s.phase("forward");
    Tensor loss = forward();
    if (accum > 1) loss = ops::mul(loss, 1.0 / double(accum));
    s.phase("backward");
    loss.backward();
    loss_sum += loss.item();
  }
  if (parts_.ranks) loss_sum = parts_.ranks->finish(loss_sum);
  end_step(s, loss_sum);
}

void TrainLoop::end_step(TrainStep& s, const Tensor& loss) {
  finish_update(s);
  last_loss_ = loss.item();
  check_finite_loss(last_loss_, step_);
  finish_step();
}

void TrainLoop::end_step(TrainStep& s, double loss) {
  last_loss_ = loss;
  check_finite_loss(loss, step_ + 1);  // before the update, on every rank alike
  finish_update(s);
  finish_step();
}

bool TrainLoop::log_due(bool evaluated) const {
  return lead_ && (step_ % parts_.run->log_every() == 0 || step_ == 1 || evaluated);
}

bool TrainLoop::checkpoint_due() const {
  return parts_.run->ckpt_every() > 0 && step_ % parts_.run->ckpt_every() == 0;
}

bool TrainLoop::eval_due() const {
  return parts_.run->eval_every() > 0 && step_ % parts_.run->eval_every() == 0;
}

void TrainLoop::print_step_line(std::initializer_list<std::string> fields) const {
  std::string line = progress_bar(progress()) + field(" step %5ld", long(step_));
  for (const std::string& f : fields) line += " | " + f;
  line += field(" | lr %.2e", parts_.schedule->lr_at(step_ - 1));
  if (norm_.defined()) line += field(" | norm %.2f", norm_.item());
  line += field(" | act peak %7.1f MB | step peak %7.1f MB | rss %6.0f MB",
                double(memory_.peak_of(MemoryCategory::SavedActivation)) / 1e6,
                double(memory_.total_peak) / 1e6, peak_rss_mb());
  std::printf("%s\n", line.c_str());
  if (cache_->reports()) std::printf("      %s\n", cache_->stats_line().c_str());
  std::fflush(stdout);
}

void TrainLoop::finish() {
  if (lead_ && cache_->budget_exceeded())
    std::printf("warning: a step's peak went above --memory-budget %.1f MB (the plan's estimate was short)\n",
                double(cache_->memory_budget()) / 1e6);
  state_holder(*parts_.optimizer).flush_state();
  const std::string traffic = optimizer_state_traffic(*parts_.optimizer, steps_run_);
  if (lead_ && !traffic.empty()) std::printf("%s\n", traffic.c_str());
  if (lead_ && pager()) std::printf("%s\n", pager_traffic(*pager(), pager_steps_).c_str());
  if (parts_.run->profile() && lead_) report_profile(profiler_, parts_.run->out_dir());
}

void TrainLoop::print_timing(const char* unit, double per_step, const std::string& extra) const {
  if (!lead_ || steps_run_ <= 2) return;
  const double n = double(steps_run_ - 1);
  std::printf("timing: %.1f ms/step", 1e3 * timed_seconds_ / n);
  if (unit) std::printf(", %.0f %s", per_step * n / timed_seconds_, unit);
  std::printf(" over steps 2-%ld%s%s\n", long(step_), extra.c_str(),
              parts_.ranks ? parts_.ranks->timing().c_str() : "");
}

}  // namespace strata::examples
