// BatchPipeline: the batch loaders' ordered pipeline. Worker threads make the batches of this rank
// ahead of the trainer into a bounded queue and next() hands them over in order, so the batches
// are the same bits whatever the number of threads (0: made in next() itself). A cursor resumes it
// at any global batch, on any number of ranks. EpochOrders gives each epoch's keyed order.
//
//   BatchPipeline pipe("ImageLoader", options, batches_per_epoch,
//                      [&](int64_t epoch, int64_t index) { return std::any(make_batch(epoch, index)); });
//   ImageBatch b = pipe.next<ImageBatch>();
#pragma once

#include <any>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "strata/io/data_cursor.h"

namespace strata::io {

struct BatchPipelineOptions {
  int num_workers = 2;   // loader threads; 0 makes batches in next() itself
  int64_t prefetch = 4;  // ready batches held at most (the queue bound)
  // Bytes of ready batches held at most, whatever `prefetch` says: workers start no new batch past
  // it, except the one next() waits for.
  int64_t prefetch_bytes = std::numeric_limits<int64_t>::max();
  int rank = 0, world_size = 1;  // data parallel: rank r takes global batches r, r+W, ...
};

// The pipeline's part of a loader's options: any options struct with the five fields above.
template <class LoaderOptions>
BatchPipelineOptions pipeline_options_of(const LoaderOptions& o) {
  return {.num_workers = o.num_workers,
          .prefetch = o.prefetch,
          .prefetch_bytes = o.prefetch_bytes,
          .rank = o.rank,
          .world_size = o.world_size};
}

class BatchPipeline {
 public:
  // Global batch `index` of `epoch`, made on a worker thread; what it throws reaches next().
  using Make = std::function<std::any(int64_t epoch, int64_t index)>;
  // The bytes a ready batch holds (for prefetch_bytes); none given: 0.
  using Bytes = std::function<int64_t(const std::any& batch)>;

  // Refuses options out of range, naming `loader` (the loader's class) and the option.
  static void check(const std::string& loader, const BatchPipelineOptions& options);
  // Starts at global batch 0 of epoch 0 (set_cursor moves it).
  BatchPipeline(std::string loader, BatchPipelineOptions options, int64_t batches_per_epoch, Make make,
                Bytes bytes = {});
  ~BatchPipeline();  // stops and joins the workers
  BatchPipeline(const BatchPipeline&) = delete;
  BatchPipeline& operator=(const BatchPipeline&) = delete;

  // The next batch of this rank, crossing epoch boundaries.
  std::any next_any();
  template <class Batch>
  Batch next() {
    return std::any_cast<Batch>(next_any());
  }

  // Where the next step starts: `epoch` and `sample` = global batch index in the epoch (`shard` 0).
  // The same on every rank, and valid for any world size.
  DataCursor cursor() const;
  void set_cursor(const DataCursor& cursor);
  int64_t batches_per_epoch() const { return batches_per_epoch_; }
  // Seconds next() has spent waiting for a batch that was not ready (the trainer starved).
  double wait_seconds() const { return wait_seconds_; }
  // Ready batches held now, and their bytes.
  int64_t held_batches() const;
  int64_t held_bytes() const;

 private:
  struct Workers;
  void start();
  void stop();
  const std::string loader_;
  const BatchPipelineOptions o_;
  const int64_t batches_per_epoch_;
  const Make make_;
  const Bytes bytes_;
  int64_t position_ = 0;  // global batch stream position of the next step (rank 0's batch)
  double wait_seconds_ = 0;
  std::unique_ptr<Workers> workers_;
};

// The order of each epoch's items: `items` as given, or shuffled by (seed, epoch) (shuffle_keyed).
// Any thread may ask; the orders of the latest epoch asked for and the one before are kept, since
// workers are at most a few batches apart.
class EpochOrders {
 public:
  EpochOrders(std::vector<int64_t> items, bool shuffle, uint64_t seed);
  std::shared_ptr<const std::vector<int64_t>> of(int64_t epoch);

 private:
  const std::shared_ptr<const std::vector<int64_t>> items_;
  const bool shuffle_;
  const uint64_t seed_;
  std::mutex mu_;
  std::map<int64_t, std::shared_ptr<const std::vector<int64_t>>> orders_;
};

}  // namespace strata::io
