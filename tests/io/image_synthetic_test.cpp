// The synthetic image set: deterministic, any size, balanced, and learnable (a nearest-class-
// mean classifier on raw pixels, trained on one half and tested on the other, beats chance
// by far).
#include <gtest/gtest.h>

#include <limits>

#include "strata/core/error.h"
#include "strata/io/images/synthetic_images.h"

using namespace strata;
using namespace strata::io;

TEST(SyntheticImages, SameSeedSameBitsOtherSeedOtherBits) {
  SyntheticImageDataset a({.size = 50, .seed = 4}), b({.size = 50, .seed = 4}), c({.size = 50, .seed = 5});
  for (int64_t i : {0, 7, 49}) {
    EXPECT_EQ(a.image(i).pixels, b.image(i).pixels);
    EXPECT_NE(a.image(i).pixels, c.image(i).pixels);
    EXPECT_EQ(a.label(i), c.label(i));
  }
  EXPECT_NE(a.image(0).pixels, a.image(10).pixels);  // same class, different sample
}

TEST(SyntheticImages, AnySizeAndBalancedClasses) {
  SyntheticImageDataset big({.num_classes = 7, .size = 70, .height = 224, .width = 160});
  const Image img = big.image(3);
  EXPECT_EQ(img.height, 224);
  EXPECT_EQ(img.width, 160);
  std::vector<int> count(7);
  for (int64_t i = 0; i < big.size(); ++i) ++count[size_t(big.label(i))];
  for (int n : count) EXPECT_EQ(n, 10);
  EXPECT_THROW(SyntheticImageDataset({.num_classes = 1}), ValueError);
  EXPECT_THROW(big.image(70), IndexError);
}

TEST(SyntheticImages, NearestClassMeanOnRawPixelsIsFarAboveChance) {
  constexpr int64_t K = 10, N = 1000;
  SyntheticImageDataset d({.num_classes = K, .size = N, .height = 32, .width = 32, .seed = 1});
  constexpr size_t D = 32 * 32 * 3;
  std::vector<std::vector<double>> mean(K, std::vector<double>(D, 0.0));
  std::vector<int> n(K, 0);
  for (int64_t i = 0; i < N / 2; ++i) {
    const Image img = d.image(i);
    auto& m = mean[size_t(d.label(i))];
    for (size_t p = 0; p < D; ++p) m[p] += img.pixels[p];
    ++n[size_t(d.label(i))];
  }
  for (int64_t k = 0; k < K; ++k)
    for (double& v : mean[size_t(k)]) v /= n[size_t(k)];
  int correct = 0;
  for (int64_t i = N / 2; i < N; ++i) {
    const Image img = d.image(i);
    int64_t best = -1;
    double best_d = std::numeric_limits<double>::max();
    for (int64_t k = 0; k < K; ++k) {
      double dist = 0;
      for (size_t p = 0; p < D; ++p) dist += (img.pixels[p] - mean[size_t(k)][p]) * (img.pixels[p] - mean[size_t(k)][p]);
      if (dist < best_d) best_d = dist, best = k;
    }
    correct += best == d.label(i);
  }
  const double accuracy = double(correct) / double(N / 2);
  EXPECT_GT(accuracy, 0.6) << "chance is 0.1";
  RecordProperty("ncm_accuracy", std::to_string(accuracy));
}

TEST(SyntheticImages, AnOffsetSetContinuesTheSameSequence) {
  SyntheticImageDataset all({.size = 30, .seed = 2}), tail({.size = 10, .offset = 20, .seed = 2});
  for (int64_t i = 0; i < 10; ++i) {
    EXPECT_EQ(tail.image(i).pixels, all.image(20 + i).pixels);
    EXPECT_EQ(tail.label(i), all.label(20 + i));
  }
}
