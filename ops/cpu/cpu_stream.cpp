// CPU Stream (a worker thread running tasks in order) and Event (a marker in that queue).
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "ops/cpu/cpu_backend.h"

namespace strata::cpu {

namespace {

class CpuStream final : public Stream {
 public:
  CpuStream() : worker_([this] { run(); }) {}
  ~CpuStream() override {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }
  Device device() const override { return kCPU; }

  void enqueue(std::function<void()> task) override {
    {
      std::lock_guard<std::mutex> lk(mu_);
      queue_.push_back(std::move(task));
      ++enqueued_;
    }
    cv_.notify_all();
  }

  void synchronize() override {
    std::unique_lock<std::mutex> lk(mu_);
    uint64_t target = enqueued_;
    done_cv_.wait(lk, [&] { return finished_ >= target; });
    if (error_) {
      std::exception_ptr e = error_;
      error_ = nullptr;
      std::rethrow_exception(e);
    }
  }

  void wait(Event& event) override {
    Event* e = &event;
    enqueue([e] { e->synchronize(); });
  }

  // Position of the last enqueued task, and whether the worker has passed it.
  uint64_t mark() {
    std::lock_guard<std::mutex> lk(mu_);
    return enqueued_;
  }
  bool reached(uint64_t m) {
    std::lock_guard<std::mutex> lk(mu_);
    return finished_ >= m;
  }
  void wait_for(uint64_t m) {
    std::unique_lock<std::mutex> lk(mu_);
    done_cv_.wait(lk, [&] { return finished_ >= m; });
  }

 private:
  void run() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      try {
        task();
      } catch (...) {
        std::lock_guard<std::mutex> lk(mu_);
        if (!error_) error_ = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lk(mu_);
        ++finished_;
      }
      done_cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  std::deque<std::function<void()>> queue_;
  uint64_t enqueued_ = 0, finished_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread worker_;  // last: starts after the other members exist
};

class CpuEvent final : public Event {
 public:
  void record(Stream& s) override {
    stream_ = dynamic_cast<CpuStream*>(&s);
    STRATA_CHECK(stream_ != nullptr, DeviceError, "CPU event recorded on a non-CPU stream");
    mark_ = stream_->mark();
  }
  bool query() const override { return !stream_ || stream_->reached(mark_); }
  void synchronize() override {
    if (stream_) stream_->wait_for(mark_);
  }

 private:
  CpuStream* stream_ = nullptr;
  uint64_t mark_ = 0;
};

}  // namespace

std::unique_ptr<Stream> CpuBackend::create_stream(int) { return std::make_unique<CpuStream>(); }
std::unique_ptr<Event> CpuBackend::create_event() { return std::make_unique<CpuEvent>(); }

}  // namespace strata::cpu
