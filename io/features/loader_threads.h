// LoaderThreads: a feature store's fixed set of threads, which share the tasks of a parallel loop
// with the calling thread and run whole jobs handed over for later.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace strata::io {

class LoaderThreads {
 public:
  explicit LoaderThreads(int num_threads);
  ~LoaderThreads();  // runs what is queued, then joins
  LoaderThreads(const LoaderThreads&) = delete;
  LoaderThreads& operator=(const LoaderThreads&) = delete;

  int size() const { return int(threads_.size()); }

  // Runs task(0), ..., task(n - 1) on the loader threads and the calling thread, each once, and
  // returns when all have finished; rethrows the first exception a task threw. May be called from
  // a job (the caller takes tasks itself, so it never waits on threads that wait on it).
  void parallel_for(int64_t n, std::function<void(int64_t)> task);

  // Runs `job` on a loader thread, after the work queued before it has been taken; with no
  // threads, runs it at once on the calling thread. The job must not throw (a
  // std::packaged_task hands its exception to its future).
  void post(std::function<void()> job);

 private:
  struct Loop;
  struct Item {
    std::shared_ptr<Loop> loop;  // a parallel loop's remaining tasks, or
    std::function<void()> job;   // a job
  };
  static void run_tasks(Loop& loop);
  void work();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool closing_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace strata::io
