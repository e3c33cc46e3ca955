#include "strata/io/images/image_loader.h"

#include <chrono>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <numeric>
#include <thread>
#include <vector>

#include "strata/core/error.h"

namespace strata::io {
namespace {

}  // namespace

// Batches of this rank are numbered k = 0, 1, 2, ... from where the pipeline started; batch k
// is global stream position start + k * world_size + rank. Workers claim k in order, at most
// `prefetch` ahead of the consumer, and file the result under k; next() takes them in order.
struct ImageLoader::Pipeline {
  struct Result {
    ImageBatch batch;
    std::exception_ptr error;
  };
  const ImageDataset* data;
  const ImageLoaderOptions* o;
  int64_t height, width, batches_per_epoch, start;

  std::mutex mu;
  std::condition_variable work_cv, ready_cv;
  int64_t next_claim = 0, consumed = 0;
  std::map<int64_t, Result> ready;
  bool stopping = false;
  std::vector<std::thread> threads;

  std::mutex order_mu;
  std::map<int64_t, std::shared_ptr<const std::vector<int64_t>>> orders;  // epoch -> sample order

  std::shared_ptr<const std::vector<int64_t>> order(int64_t epoch) {
    std::lock_guard<std::mutex> lock(order_mu);
    auto it = orders.find(o->shuffle ? epoch : 0);
    if (it != orders.end()) return it->second;
    auto v = std::make_shared<std::vector<int64_t>>(size_t(data->size()));
    std::iota(v->begin(), v->end(), int64_t(0));
    if (o->shuffle) shuffle_keyed(v.get(), o->seed, uint64_t(epoch));
    // Workers are at most a few batches apart: keep this epoch and the one before.
    while (o->shuffle && !orders.empty() && orders.begin()->first < epoch - 1) orders.erase(orders.begin());
    orders[o->shuffle ? epoch : 0] = v;
    return v;
  }

  ImageBatch make(int64_t k) {
    const int64_t pos = start + k * o->world_size + o->rank;
    ImageBatch b;
    b.epoch = pos / batches_per_epoch;
    b.index = pos % batches_per_epoch;
    const std::shared_ptr<const std::vector<int64_t>> ord = order(b.epoch);
    const int64_t first = b.index * o->batch;
    const int64_t n = std::min(o->batch, data->size() - first);
    b.images = Tensor::empty({n, 3, height, width}, DType::f32);
    b.labels = Tensor::empty({n}, DType::i64);
    float* img = b.images.data<float>();
    int64_t* lab = b.labels.data<int64_t>();
    for (int64_t j = 0; j < n; ++j) {
      const int64_t idx = (*ord)[size_t(first + j)];
      KeyedRng rng(o->seed, uint64_t(b.epoch), uint64_t(idx));
      const Image g = apply_geometry(data->image(idx), o->transforms, rng);
      STRATA_CHECK(g.height == height && g.width == width, IoError, "image loader: ", data->sample_name(idx), " is ",
                   g.height, "x", g.width, " after the transforms, but batches are ", height, "x", width,
                   " (images of mixed sizes need a resize and crop: the folder's resize/center_crop or a crop "
                   "transform)");
      normalize_to_chw(g, o->transforms.mean, o->transforms.std, img + j * 3 * height * width);
      lab[j] = data->label(idx);
    }
    return b;
  }

  void work() {
    for (;;) {
      int64_t k;
      {
        std::unique_lock<std::mutex> lock(mu);
        work_cv.wait(lock, [&] { return stopping || next_claim < consumed + o->prefetch; });
        if (stopping) return;
        k = next_claim++;
      }
      Result r;
      try {
        r.batch = make(k);
      } catch (...) {
        r.error = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mu);
      ready.emplace(k, std::move(r));
      ready_cv.notify_all();
    }
  }
};

ImageLoader::ImageLoader(std::shared_ptr<const ImageDataset> dataset, ImageLoaderOptions options)
    : dataset_(std::move(dataset)), o_(std::move(options)) {
  STRATA_CHECK(dataset_ != nullptr, ValueError, "ImageLoader: no dataset");
  STRATA_CHECK(o_.batch > 0, ValueError, "ImageLoader: batch ", o_.batch, " must be positive");
  STRATA_CHECK(o_.num_workers >= 0 && o_.num_workers <= 256, ValueError, "ImageLoader: num_workers ", o_.num_workers,
               " is not in [0, 256]");
  STRATA_CHECK(o_.prefetch >= 1, ValueError, "ImageLoader: prefetch ", o_.prefetch, " must be at least 1");
  STRATA_CHECK(o_.world_size >= 1 && o_.rank >= 0 && o_.rank < o_.world_size, ValueError, "ImageLoader: rank ",
               o_.rank, " of world size ", o_.world_size);
  const int64_t n = dataset_->size();
  STRATA_CHECK(n > 0, ValueError, "ImageLoader: the dataset is empty (", dataset_->describe(), ")");
  batches_per_epoch_ = o_.drop_last ? n / o_.batch : (n + o_.batch - 1) / o_.batch;
  STRATA_CHECK(batches_per_epoch_ > 0, ValueError, "ImageLoader: ", n, " samples make no full batch of ", o_.batch,
               " (", dataset_->describe(), "); lower the batch size or keep the last partial batch");
  const int64_t side = o_.transforms.output_size();
  if (side > 0) {
    height_ = width_ = side;
  } else {
    KeyedRng rng(o_.seed, 0, 0);
    const Image first = apply_geometry(dataset_->image(0), o_.transforms, rng);
    height_ = first.height, width_ = first.width;
  }
  start();
}

ImageLoader::~ImageLoader() { stop(); }

void ImageLoader::start() {
  pipe_ = std::make_unique<Pipeline>();
  pipe_->data = dataset_.get();
  pipe_->o = &o_;
  pipe_->height = height_, pipe_->width = width_;
  pipe_->batches_per_epoch = batches_per_epoch_;
  pipe_->start = position_;
  for (int i = 0; i < o_.num_workers; ++i) pipe_->threads.emplace_back([p = pipe_.get()] { p->work(); });
}

void ImageLoader::stop() {
  if (!pipe_) return;
  {
    std::lock_guard<std::mutex> lock(pipe_->mu);
    pipe_->stopping = true;
  }
  pipe_->work_cv.notify_all();
  for (std::thread& t : pipe_->threads) t.join();
  pipe_.reset();
}

ImageBatch ImageLoader::next() {
  Pipeline& p = *pipe_;
  Pipeline::Result r;
  if (o_.num_workers == 0) {
    try {
      r.batch = p.make(p.consumed);
    } catch (...) {
      r.error = std::current_exception();
    }
    ++p.consumed;
  } else {
    std::unique_lock<std::mutex> lock(p.mu);
    const int64_t k = p.consumed;
    if (!p.ready.count(k)) {
      const auto t0 = std::chrono::steady_clock::now();
      p.ready_cv.wait(lock, [&] { return p.ready.count(k) > 0; });
      wait_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    auto it = p.ready.find(k);
    r = std::move(it->second);
    p.ready.erase(it);
    ++p.consumed;
    lock.unlock();
    p.work_cv.notify_all();
  }
  position_ = p.start + p.consumed * o_.world_size;
  if (r.error) std::rethrow_exception(r.error);
  return std::move(r.batch);
}

void ImageLoader::next(Tensor* images, Tensor* labels) {
  ImageBatch b = next();
  *images = std::move(b.images);
  *labels = std::move(b.labels);
}

DataCursor ImageLoader::cursor() const {
  return DataCursor{.epoch = position_ / batches_per_epoch_, .shard = 0, .sample = position_ % batches_per_epoch_};
}

void ImageLoader::set_cursor(const DataCursor& c) {
  STRATA_CHECK(c.epoch >= 0 && c.sample >= 0 && c.sample < batches_per_epoch_, ValueError,
               "ImageLoader::set_cursor: epoch ", c.epoch, " batch ", c.sample, " is outside the ", batches_per_epoch_,
               " batches of an epoch");
  stop();
  position_ = c.epoch * batches_per_epoch_ + c.sample;
  start();
}

}  // namespace strata::io
