#include "strata/dist/process_group.h"

#include <cstdlib>
#include <string>

#include "core/dist/comm_worker.h"
#include "strata/core/factory.h"

namespace strata::dist {

const char* reduce_op_name(ReduceOp op) { return op == ReduceOp::Sum ? "sum" : "avg"; }

ProcessGroup::ProcessGroup(int rank, int size, ProcessGroupOptions options)
    : rank_(rank), size_(size), options_(options) {
  STRATA_CHECK(size > 0 && rank >= 0 && rank < size, ValueError, "ProcessGroup: rank ", rank, " of world size ", size);
  STRATA_CHECK(options.timeout.count() > 0, ValueError, "ProcessGroup: timeout must be positive, got ",
               options.timeout.count(), " ms");
}

void ProcessGroup::check_tensor(const char* op, const Tensor& t) const {
  STRATA_CHECK(t.defined(), ValueError, backend_name(), " ", op, ": undefined tensor");
  STRATA_CHECK(t.is_contiguous(), ValueError, backend_name(), " ", op, ": tensor ", t.str(), " must be contiguous");
}

// `whole` must hold world-size chunks of `chunk`'s size (all_gather's output,
// reduce_scatter's input), with one dtype and device.
static void check_chunks(const ProcessGroup& pg, const char* op, const char* role, const Tensor& whole,
                         const Tensor& chunk) {
  STRATA_CHECK(whole.dtype() == chunk.dtype() && whole.device() == chunk.device(), TypeError, pg.backend_name(), " ",
               op, ": ", whole.str(), " and ", chunk.str(), " differ in dtype or device");
  STRATA_CHECK(whole.numel() == chunk.numel() * pg.size(), ShapeError, pg.backend_name(), " ", op, ": ", role, " ",
               whole.str(), " must have world size (", pg.size(), ") x ", chunk.numel(), " elements");
}

void ProcessGroup::check_all_gather(const Tensor& out, const Tensor& in) const {
  check_tensor("all_gather", out);
  check_tensor("all_gather", in);
  check_chunks(*this, "all_gather", "output", out, in);
}

void ProcessGroup::check_reduce_scatter(const Tensor& out, const Tensor& in) const {
  check_tensor("reduce_scatter", out);
  check_tensor("reduce_scatter", in);
  check_chunks(*this, "reduce_scatter", "input", in, out);
}

void ProcessGroup::check_root(const char* op, int root) const {
  STRATA_CHECK(root >= 0 && root < size_, ValueError, backend_name(), " ", op, ": root ", root,
               " is not a rank of a group of ", size_);
}

double ProcessGroup::all_reduce_scalar(double value, ReduceOp op) {
  Tensor t = strata::full({1}, value, DType::f64);
  all_reduce(t, op)->wait();
  return t.item();
}

LaunchEnv launch_env() {
  auto get = [](const char* name) -> const char* {
    const char* v = std::getenv(name);
    return v && *v ? v : nullptr;
  };
  auto to_int = [](const char* name, const char* v) {
    char* end = nullptr;
    long x = std::strtol(v, &end, 10);
    STRATA_CHECK(end && *end == '\0' && x >= 0, ValueError, "launch_env: ", name, "='", v, "' is not a rank/size");
    return int(x);
  };
  const char* names[][3] = {{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
                            {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
                            {"RANK", "WORLD_SIZE", "LOCAL_RANK"}};
  LaunchEnv env;
  for (auto& n : names) {
    const char* r = get(n[0]);
    const char* s = get(n[1]);
    if (!r || !s) continue;
    env.rank = to_int(n[0], r);
    env.world_size = to_int(n[1], s);
    const char* l = get(n[2]);
    env.local_rank = l ? to_int(n[2], l) : 0;
    STRATA_CHECK(env.world_size > 0 && env.rank < env.world_size, ValueError, "launch_env: ", n[0], "=", env.rank,
                 " is not below ", n[1], "=", env.world_size);
    break;
  }
  return env;
}

namespace detail {

void QueuedWork::wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return done_; });
  if (error_) std::rethrow_exception(error_);
}

bool QueuedWork::is_completed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

double QueuedWork::run_seconds() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_ ? std::chrono::duration<double>(finished_ - started_).count() : 0.0;
}

void QueuedWork::start() {
  std::lock_guard<std::mutex> lock(mu_);
  started_ = std::chrono::steady_clock::now();
}

void QueuedWork::finish(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    finished_ = std::chrono::steady_clock::now();
    if (started_ == std::chrono::steady_clock::time_point{}) started_ = finished_;
    error_ = std::move(error);
    done_ = true;
  }
  cv_.notify_all();
}

CommWorker::CommWorker(std::function<void()> on_idle, std::chrono::milliseconds idle_period)
    : on_idle_(std::move(on_idle)), idle_period_(idle_period), thread_([this] { loop(); }) {}

CommWorker::~CommWorker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

std::shared_ptr<QueuedWork> CommWorker::submit(std::string description, std::function<void()> run) {
  auto work = std::make_shared<QueuedWork>(std::move(description));
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back({work, std::move(run)});
  }
  cv_.notify_all();
  return work;
}

void CommWorker::mark_broken(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (broken_.empty()) broken_ = why;
}

void CommWorker::loop() {
  for (;;) {
    Task task;
    std::string broken;
    {
      std::unique_lock<std::mutex> lock(mu_);
      while (queue_.empty() && !stop_) {
        if (on_idle_) {
          if (!cv_.wait_for(lock, idle_period_, [&] { return !queue_.empty() || stop_; })) {
            lock.unlock();
            try {
              on_idle_();
            } catch (...) {
            }
            lock.lock();
          }
        } else {
          cv_.wait(lock);
        }
      }
      if (queue_.empty()) return;  // stopping, nothing left
      task = std::move(queue_.front());
      queue_.pop_front();
      broken = broken_;
    }
    if (!broken.empty()) {
      task.work->finish(std::make_exception_ptr(CollectiveError(
          task.work->description() + " not run: the process group is broken after an earlier failure: " + broken)));
      continue;
    }
    task.work->start();
    try {
      task.run();
      task.work->finish(nullptr);
    } catch (const std::exception& e) {
      mark_broken(e.what());
      task.work->finish(std::current_exception());
    } catch (...) {
      mark_broken("unknown error");
      task.work->finish(std::current_exception());
    }
  }
}

}  // namespace detail
}  // namespace strata::dist
