// The pread/pwrite thread-pool IoEngine: the fallback when io_uring is refused.
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "memory/tiers/io_engine.h"

namespace strata::memory {
namespace {

class ThreadIoEngine final : public IoEngine {
 public:
  ThreadIoEngine(int fd, size_t threads, size_t depth) : fd_(fd), depth_(depth) {
    for (size_t i = 0; i < threads; ++i) workers_.emplace_back([this] { run(); });
  }
  ~ThreadIoEngine() override {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }
  const char* name() const override { return "threads"; }
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
      // Loop over partial transfers, as a short pread/pwrite is not an error.
      size_t done = 0;
      int64_t result = 0;
      while (done < r.len) {
        char* p = static_cast<char*>(r.buf) + done;
        ssize_t n = r.kind == IoKind::Read ? ::pread(fd_, p, r.len - done, off_t(r.offset + done))
                                           : ::pwrite(fd_, p, r.len - done, off_t(r.offset + done));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
          result = -errno;
          break;
        }
        if (n == 0) break;  // end of file: report the short count
        done += size_t(n);
      }
      if (result == 0) result = int64_t(done);
      {
        std::lock_guard<std::mutex> lk(mu_);
        done_.push_back({r.tag, result});
      }
      done_cv_.notify_one();
    }
  }

  int fd_;
  size_t depth_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  std::deque<IoRequest> pending_;
  std::deque<IoCompletion> done_;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace

std::unique_ptr<IoEngine> make_thread_engine(int fd, size_t threads, size_t depth) {
  return std::make_unique<ThreadIoEngine>(fd, threads == 0 ? 1 : threads, depth);
}

}  // namespace strata::memory
