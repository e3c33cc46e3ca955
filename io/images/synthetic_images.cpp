#include "strata/io/images/synthetic_images.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <sstream>
#include <vector>

#include "strata/core/error.h"
#include "strata/core/philox.h"
#include "strata/io/images/image_transforms.h"

namespace strata::io {
namespace {

// Counter domains, so class parameters, sample parameters and pixel noise never share numbers
// with each other or with a loader's augmentation streams (whose "epoch" stays far below 2^32).
constexpr uint64_t kDomain = uint64_t(0x53594E) << 32;  // "SYN"
constexpr uint64_t kClassDomain = kDomain | 1, kSampleDomain = kDomain | 2, kNoiseDomain = kDomain | 3;

struct Rgb {
  float r, g, b;
};

// HSV (all in [0, 1]) to RGB in [0, 255].
Rgb hsv(double h, double s, double v) {
  h = (h - std::floor(h)) * 6.0;
  const int i = int(h) % 6;
  const double f = h - std::floor(h), p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f));
  double r, g, b;
  switch (i) {
    case 0: r = v, g = t, b = p; break;
    case 1: r = q, g = v, b = p; break;
    case 2: r = p, g = v, b = t; break;
    case 3: r = p, g = q, b = v; break;
    case 4: r = t, g = p, b = v; break;
    default: r = v, g = p, b = q; break;
  }
  return {float(255 * r), float(255 * g), float(255 * b)};
}

// What makes class k itself: fixed for a seed.
struct ClassPattern {
  Rgb light, dark, shape_color;
  double angle, frequency;  // stripes: radians, cycles across the image
  int shape;                // 0 disc, 1 square, 2 ring, 3 cross
};

ClassPattern class_pattern(uint64_t seed, int64_t k, int64_t num_classes) {
  KeyedRng rng(seed, kClassDomain, uint64_t(k));
  ClassPattern c;
  // Hues spread evenly over the wheel (then lightly jittered): neighbouring classes differ in
  // color, orientation, frequency and shape at once.
  const double hue = (double(k) + 0.3 * rng.uniform()) / double(num_classes);
  c.light = hsv(hue, 0.55 + 0.35 * rng.uniform(), 0.85 + 0.15 * rng.uniform());
  c.dark = hsv(hue + 0.5, 0.6 + 0.3 * rng.uniform(), 0.2 + 0.2 * rng.uniform());
  c.shape_color = hsv(hue + 0.25, 0.9, 1.0);
  c.angle = std::numbers::pi * (double(k) + 0.5 * rng.uniform()) / double(num_classes);
  c.frequency = 1.5 + double(k % 5) + 0.5 * rng.uniform();
  c.shape = int(k % 4);
  return c;
}

}  // namespace

SyntheticImageDataset::SyntheticImageDataset(SyntheticImageOptions options) : o_(options) {
  STRATA_CHECK(o_.num_classes >= 2 && o_.num_classes <= 1000, ValueError, "SyntheticImageDataset: num_classes ",
               o_.num_classes, " is not in [2, 1000]");
  STRATA_CHECK(o_.size > 0 && o_.offset >= 0, ValueError, "SyntheticImageDataset: size ", o_.size, " and offset ",
               o_.offset, " must be positive and non-negative");
  STRATA_CHECK(o_.height >= 4 && o_.width >= 4 && o_.height <= 4096 && o_.width <= 4096, ValueError,
               "SyntheticImageDataset: image size ", o_.height, "x", o_.width, " is not in [4, 4096]");
  STRATA_CHECK(o_.noise >= 0 && o_.noise <= 1, ValueError, "SyntheticImageDataset: noise ", o_.noise,
               " is not in [0, 1]");
}

int64_t SyntheticImageDataset::label(int64_t index) const {
  STRATA_CHECK(index >= 0 && index < o_.size, IndexError, "SyntheticImageDataset: index ", index,
               " out of range [0, ", o_.size, ")");
  return (o_.offset + index) % o_.num_classes;
}

Image SyntheticImageDataset::image(int64_t index) const {
  const int64_t k = label(index);
  const ClassPattern c = class_pattern(o_.seed, k, o_.num_classes);
  const uint64_t drawn = uint64_t(o_.offset + index);
  KeyedRng rng(o_.seed, kSampleDomain, drawn);
  const double phase = 2 * std::numbers::pi * rng.uniform();
  const double angle = c.angle + 0.12 * (rng.uniform() - 0.5) * std::numbers::pi / double(o_.num_classes);
  const double freq = c.frequency * (0.9 + 0.2 * rng.uniform());
  const double cx = 0.3 + 0.4 * rng.uniform(), cy = 0.3 + 0.4 * rng.uniform();
  const double radius = 0.14 + 0.1 * rng.uniform();
  const float gain = float(0.8 + 0.4 * rng.uniform());
  const double ca = std::cos(angle), sa = std::sin(angle);
  const float amp = float(o_.noise * 255.0);

  Image img(o_.height, o_.width);
  KeyedRng noise(o_.seed, kNoiseDomain, drawn);
  // Stripes sin(a u + b v + phase), split as sin(a u) cos(b v + phase) + cos(a u) sin(b v + phase):
  // one sine per column and per row instead of one per pixel.
  const double a = 2 * std::numbers::pi * freq * ca, b = 2 * std::numbers::pi * freq * sa;
  std::vector<double> sin_u(size_t(o_.width)), cos_u(size_t(o_.width));
  for (int64_t x = 0; x < o_.width; ++x) {
    const double u = (double(x) + 0.5) / double(o_.width);
    sin_u[size_t(x)] = std::sin(a * u), cos_u[size_t(x)] = std::cos(a * u);
  }
  for (int64_t y = 0; y < o_.height; ++y) {
    const double v = (double(y) + 0.5) / double(o_.height);
    const double sin_v = std::sin(b * v + phase), cos_v = std::cos(b * v + phase);
    for (int64_t x = 0; x < o_.width; ++x) {
      const double u = (double(x) + 0.5) / double(o_.width);
      const float s = float(0.5 + 0.5 * (sin_u[size_t(x)] * cos_v + cos_u[size_t(x)] * sin_v));
      Rgb p{c.light.r * s + c.dark.r * (1 - s), c.light.g * s + c.dark.g * (1 - s), c.light.b * s + c.dark.b * (1 - s)};
      const double dx = u - cx, dy = v - cy, d2 = dx * dx + dy * dy, r2 = radius * radius;
      bool in_shape = false;
      switch (c.shape) {
        case 0: in_shape = d2 < r2; break;
        case 1: in_shape = std::abs(dx) < radius * 0.85 && std::abs(dy) < radius * 0.85; break;
        case 2: in_shape = d2 < r2 && d2 > r2 * (0.55 * 0.55); break;
        default: in_shape = (std::abs(dx) < radius * 0.3 || std::abs(dy) < radius * 0.3) && std::abs(dx) < radius &&
                            std::abs(dy) < radius;
      }
      if (in_shape) p = c.shape_color;
      const uint32_t bits = noise.next_u32();
      uint8_t* out = img.at(y, x);
      const float chan[3] = {p.r, p.g, p.b};
      for (int ch = 0; ch < 3; ++ch) {
        const float n = amp * (float((bits >> (8 * ch)) & 0xFF) / 127.5f - 1.f);  // uniform in [-amp, amp]
        out[ch] = uint8_t(std::clamp(gain * chan[ch] + n, 0.f, 255.f) + 0.5f);  // round half up
      }
    }
  }
  return img;
}

std::string SyntheticImageDataset::describe() const {
  std::ostringstream os;
  os << "synthetic images, " << o_.size << " of " << o_.height << "x" << o_.width << " in " << o_.num_classes
     << " classes (seed " << o_.seed << ", samples " << o_.offset << "-" << o_.offset + o_.size - 1 << ", noise "
     << o_.noise << ")";
  return os.str();
}

DataIdentity SyntheticImageDataset::identity() const {
  return {describe(), DataDigest().add(std::string_view(describe())).str()};
}

}  // namespace strata::io
