// Image transforms for training data, torchvision's vocabulary: Resize (shorter side,
// bilinear with antialiasing as PIL does), CenterCrop, RandomResizedCrop, RandomCrop with
// zero padding, RandomHorizontalFlip, and ToTensor+Normalize into a float CHW buffer.
// Random choices come from a KeyedRng keyed by (seed, epoch, sample index), so a sample's
// augmentation does not depend on which loader thread made it, or when.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "strata/io/images/image.h"
#include "strata/io/keyed_rng.h"

namespace strata::io {

// The augmentations' random numbers (the former name of KeyedRng, kept for one release).
using AugmentRng = KeyedRng;

// ---- single transforms (exact, deterministic) ----
// Bilinear resize to height x width with PIL's antialiasing when shrinking (the triangle
// filter widened by the scale factor; torchvision.transforms.Resize on PIL images).
Image resize(const Image& in, int64_t height, int64_t width);
// Resizes so the shorter side is `size`, keeping the aspect ratio (torchvision Resize(int)).
Image resize_shorter_side(const Image& in, int64_t size);
// The height x width window whose top-left pixel is (top, left); may reach outside the image,
// where it reads zeros (RandomCrop's padding).
Image crop(const Image& in, int64_t top, int64_t left, int64_t height, int64_t width);
// The centered window (torchvision's rounding: top = round((H - h) / 2)).
Image center_crop(const Image& in, int64_t height, int64_t width);
void flip_horizontal(Image* image);
// out[c][y][x] = (pixel / 255 - mean[c]) / std[c], for a 3 x H x W float buffer.
void normalize_to_chw(const Image& in, const std::array<float, 3>& mean, const std::array<float, 3>& std,
                      float* out);

// ---- a training/evaluation pipeline, applied in this order ----
struct ImageTransformOptions {
  int64_t resize = 0;       // Resize(shorter side = resize); 0: off
  int64_t center_crop = 0;  // CenterCrop(center_crop); 0: off
  // RandomResizedCrop(size, scale, ratio), ImageNet-style training: a window of a random area
  // fraction in [scale_min, scale_max] and aspect ratio in [ratio_min, ratio_max] (log-uniform),
  // resized to size x size.
  int64_t random_resized_crop = 0;
  double scale_min = 0.08, scale_max = 1.0, ratio_min = 3.0 / 4.0, ratio_max = 4.0 / 3.0;
  // RandomCrop(random_crop, padding), CIFAR-style: zero-pad each side, crop at a random offset.
  int64_t random_crop = 0;
  int64_t padding = 0;
  bool horizontal_flip = false;  // RandomHorizontalFlip(p = 0.5)
  std::array<float, 3> mean = {0.f, 0.f, 0.f};
  std::array<float, 3> std = {1.f, 1.f, 1.f};

  // The side of the square output when the options fix it (a crop), else 0 (native size).
  int64_t output_size() const;
  bool random() const { return random_resized_crop > 0 || random_crop > 0 || horizontal_flip; }
  std::string str() const;

  // The usual recipes: CIFAR (RandomCrop(32, padding=4) + flip, CIFAR-10 mean/std) and
  // ImageNet (RandomResizedCrop(224) + flip, or Resize(256) + CenterCrop(224), ImageNet mean/std).
  static ImageTransformOptions cifar_train(int64_t size = 32, int64_t padding = 4);
  static ImageTransformOptions cifar_eval();
  static ImageTransformOptions imagenet_train(int64_t size = 224);
  static ImageTransformOptions imagenet_eval(int64_t size = 224, int64_t resize = 256);
};

inline constexpr std::array<float, 3> kCifar10Mean = {0.4914f, 0.4822f, 0.4465f};
inline constexpr std::array<float, 3> kCifar10Std = {0.2470f, 0.2435f, 0.2616f};
inline constexpr std::array<float, 3> kImageNetMean = {0.485f, 0.456f, 0.406f};
inline constexpr std::array<float, 3> kImageNetStd = {0.229f, 0.224f, 0.225f};

// The geometric part of the pipeline (everything before normalization); draws from `rng` in
// a fixed order: random-resized-crop window, random-crop offset, flip.
Image apply_geometry(const Image& in, const ImageTransformOptions& options, KeyedRng& rng);

}  // namespace strata::io
