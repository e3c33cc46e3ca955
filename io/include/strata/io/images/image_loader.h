// ImageLoader: batches of an ImageDataset made on loader threads, ahead of the trainer.
// N worker threads decode, augment (image_transforms.h) and normalize samples into float
// [B, 3, H, W] images and int64 [B] labels, and hand them over in order through a bounded
// queue of ready batches. The batches are the same bits whatever N is (0: made on the calling
// thread): the epoch's order comes from (seed, epoch), each sample's augmentation from
// (seed, epoch, sample index).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "strata/core/tensor.h"
#include "strata/io/batch_pipeline.h"
#include "strata/io/images/image_dataset.h"
#include "strata/io/images/image_transforms.h"

namespace strata::io {

struct ImageLoaderOptions {
  int64_t batch = 128;  // B
  ImageTransformOptions transforms{};
  bool shuffle = true;    // a new permutation of the samples every epoch
  bool drop_last = true;  // else the epoch's last batch holds the N % B remainder
  uint64_t seed = 0;
  int num_workers = 2;   // loader threads; 0 makes batches in next() itself
  int64_t prefetch = 4;  // ready batches held at most (the queue bound)
  // Bytes of ready batches held at most (images and labels), whatever `prefetch` says: workers
  // start no new batch past it, except the one next() waits for.
  int64_t prefetch_bytes = int64_t(1) << 30;
  int rank = 0, world_size = 1;  // data parallel: rank r takes global batches r, r+W, ...
};

struct ImageBatch {
  Tensor images;  // f32 [B, 3, H, W], normalized
  Tensor labels;  // i64 [B]
  int64_t epoch = 0;
  int64_t index = 0;  // global batch index within the epoch
};

class ImageLoader {
 public:
  // Checks the options and fixes the output size H x W: the transforms' crop size, else the
  // size of sample 0 (every sample must then match: an error names the one that does not).
  ImageLoader(std::shared_ptr<const ImageDataset> dataset, ImageLoaderOptions options);
  ~ImageLoader();  // stops and joins the workers
  ImageLoader(const ImageLoader&) = delete;
  ImageLoader& operator=(const ImageLoader&) = delete;

  // The next batch of this rank, crossing epoch boundaries; rethrows a worker's error (a
  // corrupt file, an image of the wrong size) naming the sample.
  ImageBatch next();
  void next(Tensor* images, Tensor* labels);

  // Global batches per epoch (all ranks together).
  int64_t batches_per_epoch() const { return pipe_->batches_per_epoch(); }
  int64_t height() const { return height_; }
  int64_t width() const { return width_; }
  const ImageDataset& dataset() const { return *dataset_; }
  const ImageLoaderOptions& options() const { return o_; }
  // Where the next step starts: `epoch` and `sample` = global batch index in the epoch. The same
  // on every rank, and valid for any world size (a checkpoint resumes on any number of ranks).
  DataCursor cursor() const { return pipe_->cursor(); }
  void set_cursor(const DataCursor& cursor) { pipe_->set_cursor(cursor); }
  // Seconds next() has spent waiting for a batch that was not ready (the trainer starved).
  double wait_seconds() const { return pipe_->wait_seconds(); }

 private:
  ImageBatch make(int64_t epoch, int64_t index) const;
  std::shared_ptr<const ImageDataset> dataset_;
  ImageLoaderOptions o_;
  int64_t height_ = 0, width_ = 0;
  std::unique_ptr<EpochOrders> orders_;
  std::unique_ptr<BatchPipeline> pipe_;  // last: its workers stop before the members they read go
};

}  // namespace strata::io
