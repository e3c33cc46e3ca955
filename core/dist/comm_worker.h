// Internal to core/dist: QueuedWork (a Work completed by another thread) and CommWorker (the
// communication thread that runs a backend's collectives one at a time, in call order).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "strata/dist/process_group.h"

namespace strata::dist::detail {

class QueuedWork final : public Work {
 public:
  explicit QueuedWork(std::string description) : description_(std::move(description)) {}
  void wait() override;
  bool is_completed() const override;
  std::string description() const override { return description_; }
  // Seconds the collective ran on the communication thread (0 until completed).
  double run_seconds() const override;
  void start();
  void finish(std::exception_ptr error);

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::exception_ptr error_;
  std::string description_;
  std::chrono::steady_clock::time_point started_, finished_;
};

// Runs submitted collectives on one thread, in submission order. The first collective that
// throws breaks the worker: its Work rethrows the error and every later one fails at once
// with CollectiveError quoting it. `on_idle` runs every `idle_period` while nothing is queued
// (the MPI backend answers liveness probes there).
class CommWorker {
 public:
  CommWorker(std::function<void()> on_idle = {}, std::chrono::milliseconds idle_period = std::chrono::milliseconds(20));
  ~CommWorker();  // finishes what is queued, then joins
  CommWorker(const CommWorker&) = delete;
  CommWorker& operator=(const CommWorker&) = delete;

  std::shared_ptr<QueuedWork> submit(std::string description, std::function<void()> run);
  // Fails every later collective with `why` (abort, or a failure seen elsewhere).
  void mark_broken(const std::string& why);

 private:
  struct Task {
    std::shared_ptr<QueuedWork> work;
    std::function<void()> run;
  };
  void loop();

  std::function<void()> on_idle_;
  std::chrono::milliseconds idle_period_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> queue_;
  bool stop_ = false;
  std::string broken_;  // the first failure; empty while healthy
  std::thread thread_;
};

}  // namespace strata::dist::detail
