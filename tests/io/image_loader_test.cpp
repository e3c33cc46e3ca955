// ImageLoader: every sample once per epoch, the same bits for any number of worker threads,
// resumable, sharded across ranks, bounded prefetch, and errors handed to the caller.
#include "strata/io/images/image_loader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <numeric>
#include <thread>

#include "strata/core/error.h"
#include "strata/io/images/synthetic_images.h"

using namespace strata;
using namespace strata::io;

namespace {

// Sample i is a 6x6 image whose pixels encode i; its label is i. Counts image() calls and can
// be told to fail on one index.
class IndexImages final : public ImageDataset {
 public:
  explicit IndexImages(int64_t n, int64_t fail_at = -1) : n_(n), fail_at_(fail_at) {}
  int64_t size() const override { return n_; }
  int64_t num_classes() const override { return n_; }
  Image image(int64_t i) const override {
    ++calls;
    if (i == fail_at_) throw IoError("sample " + std::to_string(i) + " is broken");
    Image img(6, 6);
    for (size_t p = 0; p < img.pixels.size(); ++p) img.pixels[p] = uint8_t((i * 31 + int64_t(p)) % 251);
    return img;
  }
  int64_t label(int64_t i) const override { return i; }
  std::string describe() const override { return "index images"; }
  mutable std::atomic<int64_t> calls{0};

 private:
  int64_t n_, fail_at_;
};

std::vector<int64_t> labels_of(const ImageBatch& b) { return b.labels.to_vector<int64_t>(); }

std::vector<float> floats_of(const Tensor& t) { return t.to_vector<float>(); }

}  // namespace

TEST(ImageLoader, EverySampleOncePerEpochInANewOrderEachEpoch) {
  auto d = std::make_shared<IndexImages>(23);
  ImageLoader loader(d, {.batch = 5, .drop_last = false, .seed = 3, .num_workers = 2});
  ASSERT_EQ(loader.batches_per_epoch(), 5);
  std::vector<std::vector<int64_t>> orders;
  for (int epoch = 0; epoch < 3; ++epoch) {
    std::vector<int64_t> seen;
    for (int b = 0; b < 5; ++b) {
      ImageBatch batch = loader.next();
      EXPECT_EQ(batch.epoch, epoch);
      EXPECT_EQ(batch.index, b);
      EXPECT_EQ(batch.images.shape(), (Shape{b < 4 ? 5 : 3, 3, 6, 6}));
      for (int64_t l : labels_of(batch)) seen.push_back(l);
    }
    orders.push_back(seen);
    std::sort(seen.begin(), seen.end());
    std::vector<int64_t> all(23);
    std::iota(all.begin(), all.end(), 0);
    EXPECT_EQ(seen, all) << "epoch " << epoch;
  }
  EXPECT_NE(orders[0], orders[1]);
  EXPECT_NE(orders[1], orders[2]);
}

TEST(ImageLoader, DropLastSkipsTheRemainderAndUnshuffledIsInOrder) {
  auto d = std::make_shared<IndexImages>(11);
  ImageLoader loader(d, {.batch = 4, .shuffle = false, .num_workers = 1});
  ASSERT_EQ(loader.batches_per_epoch(), 2);
  EXPECT_EQ(labels_of(loader.next()), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(labels_of(loader.next()), (std::vector<int64_t>{4, 5, 6, 7}));
  ImageBatch b = loader.next();  // epoch 1 starts over
  EXPECT_EQ(b.epoch, 1);
  EXPECT_EQ(labels_of(b), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_THROW(ImageLoader(d, {.batch = 12}), ValueError);
}

TEST(ImageLoader, SameBatchesWithZeroOneAndThreeWorkers) {
  auto d = std::make_shared<SyntheticImageDataset>(SyntheticImageOptions{.num_classes = 4, .size = 40, .height = 12, .width = 12, .seed = 5});
  ImageLoaderOptions o{.batch = 6, .transforms = ImageTransformOptions::cifar_train(12, 2), .seed = 11};
  std::vector<std::vector<float>> reference;
  std::vector<std::vector<int64_t>> reference_labels;
  for (int workers : {0, 1, 3}) {
    o.num_workers = workers;
    ImageLoader loader(d, o);
    for (int i = 0; i < 15; ++i) {  // 2+ epochs of 6 batches
      ImageBatch b = loader.next();
      if (workers == 0) {
        reference.push_back(floats_of(b.images));
        reference_labels.push_back(labels_of(b));
      } else {
        EXPECT_EQ(floats_of(b.images), reference[size_t(i)]) << workers << " workers, batch " << i;
        EXPECT_EQ(labels_of(b), reference_labels[size_t(i)]);
      }
    }
  }
  // The augmentation really is random: a different seed gives different pixels.
  o.seed = 12;
  ImageLoader other(d, o);
  EXPECT_NE(floats_of(other.next().images), reference[0]);
}

TEST(ImageLoader, ImagesAreNormalizedChwOfTheRightSample) {
  auto d = std::make_shared<IndexImages>(8);
  ImageLoaderOptions o{.batch = 2, .shuffle = false, .num_workers = 2};
  o.transforms.mean = {0.5f, 0.5f, 0.5f};
  o.transforms.std = {0.25f, 0.5f, 1.f};
  ImageLoader loader(d, o);
  loader.next();
  ImageBatch b = loader.next();  // samples 2 and 3
  const std::vector<float> v = floats_of(b.images);
  const Image img = d->image(3);
  for (int c = 0; c < 3; ++c)
    for (int64_t y = 0; y < 6; ++y)
      for (int64_t x = 0; x < 6; ++x)
        EXPECT_EQ(v[size_t(108 + c * 36 + y * 6 + x)], (float(img.at(y, x)[c]) / 255.f - 0.5f) / o.transforms.std[size_t(c)]);
}

TEST(ImageLoader, CursorResumesTheSameBatches) {
  auto d = std::make_shared<IndexImages>(20);
  ImageLoaderOptions o{.batch = 3, .seed = 9, .num_workers = 2};
  ImageLoader a(d, o);
  for (int i = 0; i < 8; ++i) a.next();  // into epoch 1 (6 batches per epoch)
  const DataCursor c = a.cursor();
  EXPECT_EQ(c.epoch, 1);
  EXPECT_EQ(c.sample, 2);
  std::vector<std::vector<int64_t>> expected;
  for (int i = 0; i < 6; ++i) expected.push_back(labels_of(a.next()));
  ImageLoader b(d, o);
  b.set_cursor(c);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(labels_of(b.next()), expected[size_t(i)]);
}

TEST(ImageLoader, RanksSplitTheGlobalBatchesBetweenThem) {
  auto d = std::make_shared<IndexImages>(24);
  ImageLoaderOptions o{.batch = 4, .seed = 2, .num_workers = 1};
  ImageLoader single(d, o);
  o.world_size = 2;
  o.rank = 0;
  ImageLoader r0(d, o);
  o.rank = 1;
  ImageLoader r1(d, o);
  for (int step = 0; step < 5; ++step) {  // crosses the epoch boundary (6 global batches)
    EXPECT_EQ(labels_of(r0.next()), labels_of(single.next()));
    EXPECT_EQ(labels_of(r1.next()), labels_of(single.next()));
    EXPECT_EQ(r0.cursor().epoch * 6 + r0.cursor().sample, 2 * (step + 1));
  }
}

TEST(ImageLoader, PrefetchStaysWithinItsBound) {
  auto d = std::make_shared<IndexImages>(1000);
  ImageLoader loader(d, {.batch = 4, .num_workers = 3, .prefetch = 2});
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  // No more than `prefetch` batches made ahead (+1: the constructor reads sample 0 for its size).
  EXPECT_LE(d->calls.load(), 2 * 4 + 1);
  loader.next();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_LE(d->calls.load(), 3 * 4 + 1);
}

// A huge `prefetch` stops at the byte bound: with room for two batches (4 images of 3x6x6 f32 and
// their labels, 1760 bytes each), no more than two plus the workers' in flight are made, and the
// batches are an unbounded loader's.
TEST(ImageLoader, PrefetchStaysWithinItsByteBound) {
  auto d = std::make_shared<IndexImages>(1000);
  const int64_t one = 4 * 3 * 6 * 6 * 4 + 4 * 8;
  const ImageLoaderOptions o{
      .batch = 4, .shuffle = false, .num_workers = 3, .prefetch = 1000000000, .prefetch_bytes = 2 * one};
  ImageLoader loader(d, o);
  for (int i = 0; i < 500 && d->calls.load() < 2 * 4 + 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_LE(d->calls.load(), (2 + o.num_workers) * 4 + 1) << "images made past the byte bound";
  ImageLoader unbounded(std::make_shared<IndexImages>(1000),
                        {.batch = 4, .shuffle = false, .num_workers = 0});
  for (int k = 0; k < 6; ++k)
    EXPECT_EQ(labels_of(loader.next()), labels_of(unbounded.next())) << "batch " << k;
  ImageLoaderOptions bad = o;
  bad.prefetch_bytes = 0;
  EXPECT_THROW(ImageLoader(d, bad), ValueError);
}

TEST(ImageLoader, WorkerErrorsReachTheCallerAndLoadingGoesOn) {
  auto d = std::make_shared<IndexImages>(12, /*fail_at=*/5);
  ImageLoader loader(d, {.batch = 4, .shuffle = false, .num_workers = 2});
  EXPECT_EQ(labels_of(loader.next()), (std::vector<int64_t>{0, 1, 2, 3}));
  try {
    loader.next();
    FAIL() << "the broken sample did not fail its batch";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("sample 5 is broken"), std::string::npos);
  }
  EXPECT_EQ(labels_of(loader.next()), (std::vector<int64_t>{8, 9, 10, 11}));
}

TEST(ImageLoader, DestroyedWhileWorkersAreBusy) {
  auto d = std::make_shared<SyntheticImageDataset>(SyntheticImageOptions{.size = 64, .height = 64, .width = 64});
  for (int i = 0; i < 5; ++i) {
    ImageLoader loader(d, {.batch = 16, .num_workers = 3, .prefetch = 3});
    if (i % 2) loader.next();
  }
}
