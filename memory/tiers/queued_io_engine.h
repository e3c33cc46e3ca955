// QueuedIoEngine: an IoEngine whose requests run on a few worker threads, each calling a
// blocking transfer (pread/pwrite, cuFileRead/cuFileWrite); completions queue for wait().
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "memory/tiers/io_engine.h"

namespace strata::memory {

class QueuedIoEngine : public IoEngine {
 public:
  explicit QueuedIoEngine(size_t depth) : depth_(depth) {}
  ~QueuedIoEngine() override { stop(); }
  size_t depth() const override { return depth_; }
  void submit(const IoRequest& r) override {
    {
      std::lock_guard<std::mutex> lk(mu_);
      pending_.push_back(r);
    }
    cv_.notify_one();
  }
  IoCompletion wait() override {
    std::unique_lock<std::mutex> lk(mu_);
    done_cv_.wait(lk, [&] { return !done_.empty(); });
    IoCompletion c = done_.front();
    done_.pop_front();
    return c;
  }

 protected:
  // Moves `r`'s bytes; returns the count transferred or -errno. Runs on a worker thread.
  virtual int64_t perform(const IoRequest& r) = 0;
  // Derived constructors call start() once they are ready, and destructors stop() first.
  void start(size_t threads) {
    for (size_t i = 0; i < (threads == 0 ? 1 : threads); ++i) workers_.emplace_back([this] { run(); });
  }
  void stop() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
    workers_.clear();
  }

 private:
  void run() {
    for (;;) {
      IoRequest r;
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return stop_ || !pending_.empty(); });
        if (stop_ && pending_.empty()) return;
        r = pending_.front();
        pending_.pop_front();
      }
      const int64_t result = perform(r);
      {
        std::lock_guard<std::mutex> lk(mu_);
        done_.push_back({r.tag, result});
      }
      done_cv_.notify_one();
    }
  }

  size_t depth_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  std::deque<IoRequest> pending_;
  std::deque<IoCompletion> done_;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace strata::memory
