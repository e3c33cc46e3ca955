// TrainLoop and TrainStep: the training loop every trainer shares (run length, step body, step line, tail).
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "examples/common/lr_schedule.h"
#include "examples/common/metrics_report.h"
#include "examples/common/model_state.h"
#include "examples/common/run_report.h"
#include "examples/common/trainer_device.h"
#include "examples/common/trainer_main.h"
#include "strata/autograd/saved_tensor.h"
#include "strata/core/memory_stats.h"
#include "strata/core/profiler.h"
#include "strata/core/tensor.h"
#include "strata/memory/param_pager.h"
#include "strata/memory/trainer_cache.h"
#include "strata/optim/optimizer.h"

namespace strata::examples {

class DataParallel;
class RunConfig;
class TrainStep;

// printf into a std::string: a step line's field ("loss 2.3026", "1234 tok/s").
std::string field(const char* format, ...) __attribute__((format(printf, 1, 2)));

// What the loop drives. The loop does what every trainer's step does alike; the trainer brings its
// data, its forward and backward, and its fields of the step line.
struct TrainLoopParts {
  const RunConfig* run = nullptr;
  const TrainerDevice* device = nullptr;
  optim::Optimizer* optimizer = nullptr;
  LrSchedule* schedule = nullptr;
  std::vector<Tensor> parameters;  // clipped to `grad_clip` (0: not clipped) before each update
  double grad_clip = 0;
  memory::CacheSettings cache;        // --cache-policy, --memory-budget (its device is set from `device`)
  TrainerRun* trainer_run = nullptr;  // its running_step follows the step under way
  int64_t first_step = 0;             // the resumed checkpoint's step, else 0
  // Under mpirun: rank 0 alone prints, its clock decides when a time-bounded run stops, and
  // run_step averages the gradients over the ranks (null: one process).
  DataParallel* ranks = nullptr;
  // --weights, --gradients, --optimizer-state and the budget's say in them (model_state.h): its
  // pager is told of every block's scope during the run and sends its paged tensors home after each
  // update; the budget's plan may move model state further off the device after the planning step.
  ModelStatePlacer* model_state = nullptr;
  // --hardware's dense matmul peak for the run's precision (0: no profile, no MFU).
  double peak_flops = 0;
};

// --hardware's matmul peak for a run in bf16 autocast or f32 (TF32 allowed or not); 0 without the
// flag. IoError / ValueError naming the profile's file.
double run_peak_flops(const RunConfig& run, bool bf16, bool tf32);

// The parts of a trainer whose settings `c` have run() and optim() (--grad-clip): its device, its
// optimizer with `schedule` over `parameters`, its cache settings, and the step it resumes after.
template <class Config>
TrainLoopParts loop_parts(const Config& c, const TrainerDevice& device, optim::Optimizer& optimizer,
                          LrSchedule& schedule, std::vector<Tensor> parameters,
                          const memory::CacheSettings& cache, TrainerRun& trainer_run,
                          int64_t first_step = 0) {
  return {.run = &c.run(),
          .device = &device,
          .optimizer = &optimizer,
          .schedule = &schedule,
          .parameters = std::move(parameters),
          .grad_clip = c.optim().grad_clip(),
          .cache = cache,
          .trainer_run = &trainer_run,
          .first_step = first_step,
          .peak_flops = [&] {
            if constexpr (requires { c.precision().tf32(); })
              return run_peak_flops(c.run(), c.precision().bf16(), c.precision().tf32());
            else if constexpr (requires { c.precision().bf16(); })
              return run_peak_flops(c.run(), c.precision().bf16(), false);
            else
              return run_peak_flops(c.run(), false, false);
          }()};
}

// The loop of a training run:
//   TrainLoop loop(loop_parts(config, device, optimizer, schedule, model.parameters(), ...));
//   while (loop.keep_going()) {          // the step's clock starts
//     loop.run_step([&] { <fetch a micro-batch>; return <its loss>; });  // see run_step
//     if (loop.log_due()) loop.print_step_line({field("loss %.4f", loop.last_loss()), ...});
//     if (loop.checkpoint_due()) save(loop.step());
//   }
//   loop.finish();
class TrainLoop {
 public:
  // Prints (rank 0) the device, a time-bounded run's length, and the cache's settings.
  explicit TrainLoop(TrainLoopParts parts);

  // Whether another step runs (under --max-steps and --max-seconds; under mpirun rank 0's clock
  // decides, so every rank stops at the same step). When it does, its clock starts here.
  bool keep_going();

  // Ends the step `s` began, after its backward: the optimizer phase (gradients clipped, the
  // update, then the gradients dropped), the cache's step end (a plan printed when one was made), the step
  // count, the loss read (after the update, so the device is not waited for before it) and checked: a
  // non-finite loss stops the run naming the step. The step's time, and for a time-bounded run the schedule's
  // length once the first steps are timed.
  void end_step(TrainStep& s, const Tensor& loss);
  // The same with the loss already read (a sum over micro-batches or ranks): checked before the
  // update, so a non-finite loss never reaches the weights.
  void end_step(TrainStep& s, double loss);

  // A whole step of --grad-accum micro-batches: TrainStep, then for each micro-batch `forward()`
  // (which fetches it and returns its loss) and backward of the loss over --grad-accum, then
  // end_step with the summed loss. Under mpirun only the last micro-batch's backward averages the
  // gradients over the ranks, and the loss is the ranks' mean. One micro-batch in one process reads
  // the loss after the update, as end_step(s, loss) does.
  void run_step(const std::function<Tensor()>& forward);

  // --report: `value` under `tag` ("val/loss") at the step just ended, beside what the loop itself
  // reports after each step (train/loss, train/lr, train/grad_norm, time/step_seconds, memory by
  // category, cache traffic). Nothing without --report, and on ranks other than 0.
  void report(const std::string& tag, double value);

  // The last step's throughput, `items_per_step` (tokens, images) of `flops_per_item` model FLOPs
  // each, reported as `tag` (train/tokens_per_s) and, with a --hardware peak, as train/mfu; returns
  // the step line's field: "  1234 tok/s" and, with the peak, " | MFU 12.3%".
  std::string throughput(const std::string& tag, const char* unit, double items_per_step,
                         double flops_per_item = 0);

  // Whether the step just ended prints its line: every --log-every steps, the first, and a step that
  // evaluated; never on ranks other than 0.
  bool log_due(bool evaluated = false) const;
  // "[####....] step N | <fields> | lr | norm (when clipping) | act peak | step peak | rss", then
  // the cache's counters; flushed.
  void print_step_line(std::initializer_list<std::string> fields) const;
  // Whether the step just ended writes its --ckpt-every checkpoint.
  bool checkpoint_due() const;
  // Whether the step just ended is an --eval-every step.
  bool eval_due() const;

  // The end of a language model's step (train_gpt, train_bert): its tokens/s, the held-out loss
  // when an evaluation is due (`evaluate`; none where it is empty), reported as `val_tag` and kept
  // in *last_val, the step line ("<loss_label> 1.2345 | val 1.3456 | 1234 tok/s ...") and the
  // --ckpt-every checkpoint (`save`, given the step).
  void end_text_step(double tokens_per_step, double flops_per_token, const std::string& loss_label,
                     const std::string& val_tag, const std::function<double()>& evaluate,
                     std::optional<double>* last_val, const std::function<void(int64_t)>& save);

  // Runs `fn` with every parameter whole on this rank (DataParallel::with_whole_parameters: under
  // ZeRO-3 a collective, after which `fn` may do rank 0's work alone).
  void with_whole_parameters(const std::function<void()>& fn) const;

  // After the loop: the cache's warning when a step went above --memory-budget, --profile's table.
  void finish();
  // "timing: X ms/step, Y <unit> over steps 2-N<extra>" (without a rate where `unit` is null), when
  // more than two steps ran: the first, the warm-up, is left out. Under mpirun the all-reduce's
  // time follows.
  void print_timing(const char* unit, double per_step, const std::string& extra = "") const;

  int64_t step() const { return step_; }
  int64_t steps_run() const { return steps_run_; }
  double last_loss() const { return last_loss_; }
  // The last step's seconds.
  double step_seconds() const { return secs_; }
  // Seconds since the loop was made, and the run's progress in [0, 1] by steps or by time.
  double elapsed() const;
  double progress() const;

 private:
  // The device's allocator: its peaks are the step's.
  Allocator& allocator() const { return *parts_.device->allocator; }
  dist::ProcessGroup* group() const;
  // The blocks' pager (null while weights and gradients stay on the device).
  memory::ParamPager* pager() const {
    return parts_.model_state ? parts_.model_state->pager().get() : nullptr;
  }
  friend class TrainStep;
  void finish_update(TrainStep& s);
  void finish_step();
  void report_step();

  TrainLoopParts parts_;
  bool lead_;
  int64_t step_, steps_run_ = 0;
  int64_t pager_steps_ = 0;  // steps run with the current pager
  double last_loss_ = NAN, secs_ = 0, timed_seconds_ = 0;
  Tensor norm_;  // the last step's gradient norm before clipping (undefined without clipping)
  MemorySnapshot memory_;
  std::chrono::steady_clock::time_point start_, step_start_;
  Profiler profiler_;                                     // --profile: the steps after the first two
  std::unique_ptr<memory::TrainerCache> cache_;           // --cache-policy, --memory-budget, --spill-dir
  std::unique_ptr<MetricsReport> report_;                 // --report, on rank 0
  std::optional<autograd::SavePolicyGuard> pager_guard_;  // evaluation's forwards see the pager too
};

// One step's body, between TrainLoop::keep_going() and end_step(): made after the batch is
// fetched. Its making resets the allocator's peaks, sets the learning rate, zeroes the gradients
// and installs the tensor cache for forward and backward; phase() names what --profile charges.
class TrainStep {
 public:
  explicit TrainStep(TrainLoop& loop);
  TrainStep(const TrainStep&) = delete;
  TrainStep& operator=(const TrainStep&) = delete;
  void phase(const char* name) { profile_.phase(name); }

 private:
  friend class TrainLoop;
  ProfiledStep profile_;
  std::optional<autograd::SavePolicyGuard> cache_guard_;
};

}  // namespace strata::examples
