#include "strata/io/images/image_loader.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "strata/core/error.h"

namespace strata::io {

ImageBatch ImageLoader::make(int64_t epoch, int64_t index) const {
  ImageBatch b;
  b.epoch = epoch;
  b.index = index;
  const std::shared_ptr<const std::vector<int64_t>> ord = orders_->of(b.epoch);
  const int64_t first = b.index * o_.batch;
  const int64_t n = std::min(o_.batch, dataset_->size() - first);
  b.images = Tensor::empty({n, 3, height_, width_}, DType::f32);
  b.labels = Tensor::empty({n}, DType::i64);
  float* img = b.images.data<float>();
  int64_t* lab = b.labels.data<int64_t>();
  for (int64_t j = 0; j < n; ++j) {
    const int64_t idx = (*ord)[size_t(first + j)];
    KeyedRng rng(o_.seed, uint64_t(b.epoch), uint64_t(idx));
    const Image g = apply_geometry(dataset_->image(idx), o_.transforms, rng);
    STRATA_CHECK(g.height == height_ && g.width == width_, IoError,
                 "image loader: ", dataset_->sample_name(idx), " is ", g.height, "x", g.width,
                 " after the transforms, but batches are ", height_, "x", width_,
                 " (images of mixed sizes need a resize and crop: the folder's resize/center_crop or a crop "
                 "transform)");
    normalize_to_chw(g, o_.transforms.mean, o_.transforms.std, img + j * 3 * height_ * width_);
    lab[j] = dataset_->label(idx);
  }
  return b;
}

ImageLoader::ImageLoader(std::shared_ptr<const ImageDataset> dataset, ImageLoaderOptions options)
    : dataset_(std::move(dataset)), o_(std::move(options)) {
  STRATA_CHECK(dataset_ != nullptr, ValueError, "ImageLoader: no dataset");
  STRATA_CHECK(o_.batch > 0, ValueError, "ImageLoader: batch ", o_.batch, " must be positive");
  const BatchPipelineOptions pipeline = pipeline_options_of(o_);
  BatchPipeline::check("ImageLoader", pipeline);
  const int64_t n = dataset_->size();
  STRATA_CHECK(n > 0, ValueError, "ImageLoader: the dataset is empty (", dataset_->describe(), ")");
  const int64_t batches_per_epoch = o_.drop_last ? n / o_.batch : (n + o_.batch - 1) / o_.batch;
  STRATA_CHECK(batches_per_epoch > 0, ValueError, "ImageLoader: ", n, " samples make no full batch of ",
               o_.batch, " (", dataset_->describe(),
               "); lower the batch size or keep the last partial batch");
  const int64_t side = o_.transforms.output_size();
  if (side > 0) {
    height_ = width_ = side;
  } else {
    KeyedRng rng(o_.seed, 0, 0);
    const Image first = apply_geometry(dataset_->image(0), o_.transforms, rng);
    height_ = first.height, width_ = first.width;
  }
  std::vector<int64_t> samples(static_cast<size_t>(n));
  std::iota(samples.begin(), samples.end(), int64_t(0));
  orders_ = std::make_unique<EpochOrders>(std::move(samples), o_.shuffle, o_.seed);
  pipe_ = std::make_unique<BatchPipeline>(
      "ImageLoader", pipeline, batches_per_epoch,
      [this](int64_t epoch, int64_t index) { return std::any(make(epoch, index)); },
      [](const std::any& batch) {
        const ImageBatch& b = std::any_cast<const ImageBatch&>(batch);
        return int64_t(b.images.nbytes() + b.labels.nbytes());
      });
}

ImageLoader::~ImageLoader() = default;

ImageBatch ImageLoader::next() { return pipe_->next<ImageBatch>(); }

void ImageLoader::next(Tensor* images, Tensor* labels) {
  ImageBatch b = next();
  *images = std::move(b.images);
  *labels = std::move(b.labels);
}

}  // namespace strata::io
