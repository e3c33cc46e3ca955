// Crop, flip, resize and normalize give exact values; random transforms depend only on
// (seed, epoch, index).
#include "strata/io/images/image_transforms.h"

#include <gtest/gtest.h>

#include <set>

#include "strata/core/error.h"

using namespace strata;
using namespace strata::io;

namespace {

// Pixel (y, x) channel c = 10 * y + x + 100 * c (small images only).
Image ramp(int64_t h, int64_t w) {
  Image img(h, w);
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) img.at(y, x)[c] = uint8_t(10 * y + x + 50 * c);
  return img;
}

int px(const Image& img, int64_t y, int64_t x, int c) { return img.at(y, x)[c]; }

}  // namespace

TEST(ImageTransforms, CropReadsZerosOutsideTheImage) {
  const Image img = ramp(4, 5);
  const Image c = crop(img, -1, 2, 3, 4);  // rows -1..1, cols 2..5
  ASSERT_EQ(c.height, 3);
  ASSERT_EQ(c.width, 4);
  for (int64_t x = 0; x < 4; ++x) EXPECT_EQ(px(c, 0, x, 0), 0);  // padding row
  EXPECT_EQ(px(c, 1, 0, 0), 2);                                   // (0, 2)
  EXPECT_EQ(px(c, 2, 2, 1), 10 + 4 + 50);                         // (1, 4) green
  EXPECT_EQ(px(c, 2, 3, 2), 0);                                   // column 5: padding
}

TEST(ImageTransforms, CenterCropRoundsLikeTorchvision) {
  const Image img = ramp(5, 6);
  const Image c = center_crop(img, 2, 3);  // top = round(1.5) = 2, left = round(1.5) = 2
  EXPECT_EQ(px(c, 0, 0, 0), 22);
  EXPECT_EQ(px(c, 1, 2, 0), 34);
}

TEST(ImageTransforms, FlipMirrorsEachRow) {
  Image img = ramp(2, 5);
  flip_horizontal(&img);
  for (int64_t x = 0; x < 5; ++x) {
    EXPECT_EQ(px(img, 0, x, 0), 4 - x);
    EXPECT_EQ(px(img, 1, x, 2), 10 + 4 - x + 100);
  }
}

TEST(ImageTransforms, NormalizeWritesChwPlanes) {
  const Image img = ramp(2, 3);
  std::vector<float> out(3 * 2 * 3);
  const std::array<float, 3> mean = {0.5f, 0.25f, 0.f}, std = {0.5f, 2.f, 1.f};
  normalize_to_chw(img, mean, std, out.data());
  for (int c = 0; c < 3; ++c)
    for (int64_t y = 0; y < 2; ++y)
      for (int64_t x = 0; x < 3; ++x)
        EXPECT_EQ(out[size_t(c * 6 + y * 3 + x)], (float(px(img, y, x, c)) / 255.f - mean[size_t(c)]) / std[size_t(c)]);
}

TEST(ImageTransforms, ResizeMatchesPilsAntialiasedBilinear) {
  Image row(1, 4);
  const uint8_t v[4] = {0, 70, 140, 210};
  for (int x = 0; x < 4; ++x) row.at(0, x)[0] = row.at(0, x)[1] = row.at(0, x)[2] = v[x];
  // Halving: the triangle filter widens to 2 input pixels, clipped at the border and
  // renormalized: (3*0 + 3*70 + 1*140) / 7 = 50 and (1*70 + 3*140 + 3*210) / 7 = 160.
  const Image half = resize(row, 1, 2);
  EXPECT_EQ(px(half, 0, 0, 0), 50);
  EXPECT_EQ(px(half, 0, 1, 0), 160);
  // Same size: unchanged. A flat image stays flat at any size.
  EXPECT_EQ(resize(row, 1, 4).pixels, row.pixels);
  Image flat(7, 9);
  std::fill(flat.pixels.begin(), flat.pixels.end(), uint8_t(77));
  for (auto [h, w] : {std::pair{3, 4}, std::pair{20, 13}}) {
    const Image r = resize(flat, h, w);
    ASSERT_EQ(r.height, h);
    ASSERT_EQ(r.width, w);
    for (uint8_t p : r.pixels) EXPECT_EQ(p, 77);
  }
  // The shorter side, keeping the aspect ratio (long side truncated as torchvision does).
  const Image s = resize_shorter_side(Image(30, 45), 20);
  EXPECT_EQ(s.height, 20);
  EXPECT_EQ(s.width, 30);
}

TEST(ImageTransforms, KeyedRngDependsOnlyOnSeedEpochAndIndex) {
  KeyedRng a(7, 1, 42), b(7, 1, 42), c(7, 2, 42), d(7, 1, 43), e(8, 1, 42);
  std::set<uint32_t> firsts;
  for (int i = 0; i < 10; ++i) {
    const uint32_t x = a.next_u32();
    EXPECT_EQ(x, b.next_u32());
    if (i == 0) firsts = {x, c.next_u32(), d.next_u32(), e.next_u32()};
  }
  EXPECT_EQ(firsts.size(), 4u);
  KeyedRng r(1, 0, 0);
  std::set<int64_t> seen;
  for (int i = 0; i < 400; ++i) {
    const int64_t v = r.uniform_int(-2, 5);
    ASSERT_GE(v, -2);
    ASSERT_LE(v, 5);
    seen.insert(v);
    const double u = r.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
  }
  EXPECT_EQ(seen.size(), 8u);
}

TEST(ImageTransforms, CifarRandomCropStaysInsideThePaddedImage) {
  const Image img = ramp(8, 8);
  ImageTransformOptions o;
  o.random_crop = 8, o.padding = 2;
  std::set<std::pair<int, int>> offsets;
  for (uint64_t i = 0; i < 300; ++i) {
    KeyedRng rng(3, 0, i);
    const Image c = apply_geometry(img, o, rng);
    ASSERT_EQ(c.height, 8);
    ASSERT_EQ(c.width, 8);
    // Find where original pixel (0, 0)'s value... recover the offset from pixel (4, 4), which is
    // always inside: its value 10 * y + x names the source pixel.
    const int v = px(c, 4, 4, 0);
    offsets.insert({v / 10 - 4, v % 10 - 4});
  }
  for (auto [dy, dx] : offsets) {
    EXPECT_GE(dy, -2);
    EXPECT_LE(dy, 2);
    EXPECT_GE(dx, -2);
    EXPECT_LE(dx, 2);
  }
  EXPECT_EQ(offsets.size(), 25u);  // every offset in [-2, 2]^2 occurs
}

TEST(ImageTransforms, FlipHappensAboutHalfTheTimeAndIsReproducible) {
  const Image img = ramp(3, 6);
  ImageTransformOptions o;
  o.horizontal_flip = true;
  int flipped = 0;
  for (uint64_t i = 0; i < 1000; ++i) {
    KeyedRng rng(5, 1, i), again(5, 1, i);
    const Image a = apply_geometry(img, o, rng);
    EXPECT_EQ(a.pixels, apply_geometry(img, o, again).pixels);
    flipped += px(a, 0, 0, 0) == 5;
  }
  EXPECT_GT(flipped, 430);
  EXPECT_LT(flipped, 570);
}

TEST(ImageTransforms, RandomResizedCropGivesTheRequestedSize) {
  const Image img = ramp(20, 30);
  const ImageTransformOptions o = ImageTransformOptions::imagenet_train(16);
  for (uint64_t i = 0; i < 50; ++i) {
    KeyedRng rng(9, 0, i);
    const Image c = apply_geometry(img, o, rng);
    ASSERT_EQ(c.height, 16);
    ASSERT_EQ(c.width, 16);
  }
  const ImageTransformOptions ev = ImageTransformOptions::imagenet_eval(16, 18);
  KeyedRng rng(0, 0, 0);
  const Image c = apply_geometry(img, ev, rng);
  EXPECT_EQ(c.height, 16);
  EXPECT_EQ(c.width, 16);
  EXPECT_EQ(ev.output_size(), 16);
  EXPECT_FALSE(ev.random());
  EXPECT_NE(o.str().find("RandomResizedCrop(16"), std::string::npos) << o.str();
}
