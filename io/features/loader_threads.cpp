// LoaderThreads: parallel loops claim task indices from one atomic counter, so whichever thread
// is free takes the next task; the loop stays at the front of the queue until every index is
// claimed.
#include "io/features/loader_threads.h"

#include <atomic>
#include <exception>

namespace strata::io {

struct LoaderThreads::Loop {
  std::function<void(int64_t)> task;
  int64_t n = 0;
  std::atomic<int64_t> next{0};
  std::mutex mu;  // guards done and error
  std::condition_variable finished;
  int64_t done = 0;
  std::exception_ptr error;
};

LoaderThreads::LoaderThreads(int num_threads) {
  for (int i = 0; i < num_threads; ++i) threads_.emplace_back([this] { work(); });
}

LoaderThreads::~LoaderThreads() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    closing_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void LoaderThreads::run_tasks(Loop& loop) {
  for (int64_t i; (i = loop.next.fetch_add(1)) < loop.n;) {
    std::exception_ptr error;
    try {
      loop.task(i);
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard<std::mutex> lk(loop.mu);
    if (error && !loop.error) loop.error = error;
    if (++loop.done == loop.n) loop.finished.notify_all();
  }
}

void LoaderThreads::parallel_for(int64_t n, std::function<void(int64_t)> task) {
  if (n <= 0) return;
  auto loop = std::make_shared<Loop>();
  loop->task = std::move(task);
  loop->n = n;
  if (!threads_.empty() && n > 1) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      queue_.push_back(Item{loop, {}});
    }
    cv_.notify_all();
  }
  run_tasks(*loop);
  std::unique_lock<std::mutex> lk(loop->mu);
  loop->finished.wait(lk, [&] { return loop->done == loop->n; });
  if (loop->error) std::rethrow_exception(loop->error);
}

void LoaderThreads::post(std::function<void()> job) {
  if (threads_.empty()) return job();
  {
    std::lock_guard<std::mutex> lk(mu_);
    queue_.push_back(Item{nullptr, std::move(job)});
  }
  cv_.notify_one();
}

void LoaderThreads::work() {
  for (;;) {
    std::shared_ptr<Loop> loop;
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [&] { return closing_ || !queue_.empty(); });
      if (queue_.empty()) return;  // closing, with nothing left
      Item& front = queue_.front();
      if (front.loop) {
        loop = front.loop;
        if (loop->next.load() >= loop->n) {  // every task taken: the loop leaves the queue
          queue_.pop_front();
          continue;
        }
      } else {
        job = std::move(front.job);
        queue_.pop_front();
      }
    }
    if (job)
      job();
    else
      run_tasks(*loop);
  }
}

}  // namespace strata::io
