// SyntheticImageDataset: the built-in image set the ResNet trainer uses when given no data.
// K classes, each a distinct procedural pattern (its own pair of stripe colors, stripe
// orientation and frequency, and a shape of its own color and kind), drawn per sample with
// random phase, jitter, position, brightness and pixel noise. Every image is rendered on
// demand from (seed, index) alone, at any size, identically on every machine and thread.
#pragma once

#include <cstdint>
#include <string>

#include "strata/io/images/image_dataset.h"

namespace strata::io {

struct SyntheticImageOptions {
  int64_t num_classes = 10;  // K (2..1000)
  int64_t size = 10000;      // number of images N; sample i has class (offset + i) % K
  // Sample i is drawn as sample offset + i: sets with the same seed and disjoint index ranges
  // share their classes' patterns but no image (a held-out split).
  int64_t offset = 0;
  int64_t height = 32, width = 32;
  uint64_t seed = 0;
  double noise = 0.1;  // uniform pixel noise amplitude, as a fraction of 255
};

class SyntheticImageDataset final : public ImageDataset {
 public:
  explicit SyntheticImageDataset(SyntheticImageOptions options = {});
  int64_t size() const override { return o_.size; }
  int64_t num_classes() const override { return o_.num_classes; }
  Image image(int64_t index) const override;
  int64_t label(int64_t index) const override;
  std::string describe() const override;
  DataIdentity identity() const override;  // its settings: the images are made from them
  const SyntheticImageOptions& options() const { return o_; }

 private:
  SyntheticImageOptions o_;
};

}  // namespace strata::io
