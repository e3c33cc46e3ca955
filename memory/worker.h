// Worker: one thread running queued jobs in order (push_front for urgent ones), with a wait
// for idleness. The tensor cache runs its stores on one and its loads on another.
#pragma once

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace strata::memory {

class Worker {
 public:
  Worker() : thread_([this] { run(); }) {}
  ~Worker() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.get_id() == std::this_thread::get_id()) {
      // A job must never own what owns its worker (the cache's records hold no graph nodes for
      // this reason): joining itself would throw, detaching would use freed members.
      std::fputs("strata: internal error: a Worker was destroyed by one of its own jobs\n", stderr);
      std::abort();
    }
    thread_.join();
  }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  void push(std::function<void()> job, bool urgent = false) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (urgent)
        jobs_.push_front(std::move(job));
      else
        jobs_.push_back(std::move(job));
    }
    cv_.notify_all();
  }
  // Blocks until the queue is empty and no job is running.
  void wait_idle() {
    std::unique_lock<std::mutex> lk(mu_);
    idle_cv_.wait(lk, [&] { return jobs_.empty() && !busy_; });
  }
  bool idle() {
    std::lock_guard<std::mutex> lk(mu_);
    return jobs_.empty() && !busy_;
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lk(mu_);
    for (;;) {
      cv_.wait(lk, [&] { return stop_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stop_ with nothing left
      auto job = std::move(jobs_.front());
      jobs_.pop_front();
      busy_ = true;
      lk.unlock();
      job();
      job = nullptr;  // releases what the job held before reporting idle
      lk.lock();
      busy_ = false;
      if (jobs_.empty()) idle_cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_, idle_cv_;
  std::deque<std::function<void()>> jobs_;
  bool busy_ = false;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace strata::memory
