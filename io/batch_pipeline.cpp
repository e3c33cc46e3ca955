#include "strata/io/batch_pipeline.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <limits>
#include <thread>

#include "strata/core/error.h"
#include "strata/io/keyed_rng.h"

namespace strata::io {

// Batches of this rank are numbered k = 0, 1, 2, ... from where the workers started; batch k is
// global stream position start + k * world_size + rank. Workers claim k in order, at most
// `prefetch` batches and `prefetch_bytes` ahead of the consumer, and file the result under k;
// next() takes them in order. A batch in the making counts as large as the largest made so far,
// so that workers starting together cannot overshoot `prefetch_bytes`; until one batch is made
// its size is unknown and only the batch next() waits for is started.
struct BatchPipeline::Workers {
  struct Result {
    std::any batch;
    std::exception_ptr error;
    int64_t bytes = 0;
  };
  const BatchPipeline* pipe;
  int64_t start;

  mutable std::mutex mu;
  std::condition_variable work_cv, ready_cv;
  int64_t next_claim = 0, consumed = 0;
  std::map<int64_t, Result> ready;
  int64_t ready_bytes = 0;
  int64_t largest_bytes = -1;  // of the batches made so far; -1 before the first
  bool stopping = false;
  std::vector<std::thread> threads;

  Result make(int64_t k) const {
    const BatchPipelineOptions& o = pipe->o_;
    const int64_t pos = start + k * o.world_size + o.rank;
    Result r;
    try {
      r.batch = pipe->make_(pos / pipe->batches_per_epoch_, pos % pipe->batches_per_epoch_);
      if (pipe->bytes_) r.bytes = pipe->bytes_(r.batch);
    } catch (...) {
      r.error = std::current_exception();
    }
    return r;
  }

  // Whether the next claim keeps the held bytes (ready plus in the making) under prefetch_bytes.
  bool room_for_one() const {
    const int64_t bound = pipe->o_.prefetch_bytes;
    if (next_claim == consumed || bound == std::numeric_limits<int64_t>::max()) return true;
    if (largest_bytes < 0) return false;
    const int64_t in_making = next_claim - consumed - static_cast<int64_t>(ready.size());
    return ready_bytes + in_making * largest_bytes < bound;
  }

  void work() {
    const BatchPipelineOptions& o = pipe->o_;
    for (;;) {
      int64_t k;
      {
        std::unique_lock<std::mutex> lock(mu);
        work_cv.wait(lock,
                     [&] { return stopping || (next_claim < consumed + o.prefetch && room_for_one()); });
        if (stopping) return;
        k = next_claim++;
      }
      Result r = make(k);
      std::lock_guard<std::mutex> lock(mu);
      ready_bytes += r.bytes;
      largest_bytes = std::max(largest_bytes, r.bytes);
      ready.emplace(k, std::move(r));
      ready_cv.notify_all();
      work_cv.notify_all();  // the first size known, or room freed by a smaller batch
    }
  }
};

void BatchPipeline::check(const std::string& loader, const BatchPipelineOptions& o) {
  STRATA_CHECK(o.num_workers >= 0 && o.num_workers <= 256, ValueError, loader, ": num_workers ",
               o.num_workers, " is not in [0, 256]");
  STRATA_CHECK(o.prefetch >= 1, ValueError, loader, ": prefetch ", o.prefetch, " must be at least 1");
  STRATA_CHECK(o.prefetch_bytes >= 1, ValueError, loader, ": prefetch_bytes ", o.prefetch_bytes,
               " must be at least 1");
  STRATA_CHECK(o.world_size >= 1 && o.rank >= 0 && o.rank < o.world_size, ValueError, loader, ": rank ",
               o.rank, " of world size ", o.world_size);
}

BatchPipeline::BatchPipeline(std::string loader, BatchPipelineOptions options, int64_t batches_per_epoch,
                             Make make, Bytes bytes)
    : loader_(std::move(loader)),
      o_(options),
      batches_per_epoch_(batches_per_epoch),
      make_(std::move(make)),
      bytes_(std::move(bytes)) {
  check(loader_, o_);
  STRATA_CHECK(batches_per_epoch_ > 0, ValueError, loader_, ": an epoch of ", batches_per_epoch_, " batches");
  start();
}

BatchPipeline::~BatchPipeline() { stop(); }

void BatchPipeline::start() {
  workers_ = std::make_unique<Workers>();
  workers_->pipe = this;
  workers_->start = position_;
  for (int i = 0; i < o_.num_workers; ++i)
    workers_->threads.emplace_back([w = workers_.get()] { w->work(); });
}

void BatchPipeline::stop() {
  if (!workers_) return;
  {
    std::lock_guard<std::mutex> lock(workers_->mu);
    workers_->stopping = true;
  }
  workers_->work_cv.notify_all();
  for (std::thread& t : workers_->threads) t.join();
  workers_.reset();
}

std::any BatchPipeline::next_any() {
  Workers& w = *workers_;
  Workers::Result r;
  if (o_.num_workers == 0) {
    r = w.make(w.consumed);
    ++w.consumed;
  } else {
    std::unique_lock<std::mutex> lock(w.mu);
    const int64_t k = w.consumed;
    if (!w.ready.count(k)) {
      const auto t0 = std::chrono::steady_clock::now();
      w.ready_cv.wait(lock, [&] { return w.ready.count(k) > 0; });
      wait_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    auto it = w.ready.find(k);
    r = std::move(it->second);
    w.ready_bytes -= r.bytes;
    w.ready.erase(it);
    ++w.consumed;
    lock.unlock();
    w.work_cv.notify_all();
  }
  position_ = w.start + w.consumed * o_.world_size;
  if (r.error) std::rethrow_exception(r.error);
  return std::move(r.batch);
}

int64_t BatchPipeline::held_batches() const {
  std::lock_guard<std::mutex> lock(workers_->mu);
  return int64_t(workers_->ready.size());
}

int64_t BatchPipeline::held_bytes() const {
  std::lock_guard<std::mutex> lock(workers_->mu);
  return workers_->ready_bytes;
}

DataCursor BatchPipeline::cursor() const {
  return DataCursor{
      .epoch = position_ / batches_per_epoch_, .shard = 0, .sample = position_ % batches_per_epoch_};
}

void BatchPipeline::set_cursor(const DataCursor& c) {
  STRATA_CHECK(c.epoch >= 0 && c.sample >= 0 && c.sample < batches_per_epoch_, ValueError, loader_,
               "::set_cursor: epoch ", c.epoch, " batch ", c.sample, " is outside the ", batches_per_epoch_,
               " batches of an epoch");
  stop();
  position_ = c.epoch * batches_per_epoch_ + c.sample;
  start();
}

EpochOrders::EpochOrders(std::vector<int64_t> items, bool shuffle, uint64_t seed)
    : items_(std::make_shared<const std::vector<int64_t>>(std::move(items))),
      shuffle_(shuffle),
      seed_(seed) {}

std::shared_ptr<const std::vector<int64_t>> EpochOrders::of(int64_t epoch) {
  if (!shuffle_) return items_;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = orders_.find(epoch);
  if (it != orders_.end()) return it->second;
  auto v = std::make_shared<std::vector<int64_t>>(*items_);
  shuffle_keyed(v.get(), seed_, uint64_t(epoch));
  while (!orders_.empty() && orders_.begin()->first < epoch - 1) orders_.erase(orders_.begin());
  orders_[epoch] = v;
  return v;
}

}  // namespace strata::io
