#include "strata/io/images/image_transforms.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <vector>

#include "strata/core/error.h"

namespace strata::io {

namespace {

// One output position's taps into the input axis.
struct Taps {
  int64_t first = 0;
  std::vector<float> weights;
};

// PIL's ImagingResample coefficients for the bilinear (triangle) filter: the support widens
// by the scale factor when shrinking, so every input pixel contributes (antialiasing).
std::vector<Taps> bilinear_taps(int64_t in, int64_t out) {
  const double scale = double(in) / double(out);
  const double filterscale = std::max(scale, 1.0);
  const double support = filterscale;  // bilinear support 1.0, widened
  std::vector<Taps> taps(static_cast<size_t>(out));
  for (int64_t i = 0; i < out; ++i) {
    const double center = (double(i) + 0.5) * scale;
    const int64_t lo = std::max<int64_t>(int64_t(center - support + 0.5), 0);
    const int64_t hi = std::min<int64_t>(int64_t(center + support + 0.5), in);
    Taps& t = taps[size_t(i)];
    t.first = lo;
    double total = 0;
    std::vector<double> w;
    for (int64_t j = lo; j < hi; ++j) {
      const double x = (double(j) - center + 0.5) / filterscale;
      const double v = std::max(0.0, 1.0 - std::abs(x));
      w.push_back(v);
      total += v;
    }
    for (double v : w) t.weights.push_back(float(total > 0 ? v / total : 0.0));
  }
  return taps;
}

uint8_t to_u8(float v) { return uint8_t(std::clamp(v, 0.f, 255.f) + 0.5f); }  // round half up

}  // namespace

Image resize(const Image& in, int64_t height, int64_t width) {
  STRATA_CHECK(height > 0 && width > 0, ValueError, "resize: target ", height, "x", width, " is empty");
  STRATA_CHECK(!in.empty(), ValueError, "resize: the input image is empty");
  if (height == in.height && width == in.width) return in;
  const std::vector<Taps> tx = bilinear_taps(in.width, width), ty = bilinear_taps(in.height, height);
  // Horizontal pass into floats (in.height x width x 3), then vertical.
  std::vector<float> mid(size_t(in.height * width * 3));
  for (int64_t y = 0; y < in.height; ++y) {
    const uint8_t* row = in.at(y, 0);
    float* dst = mid.data() + y * width * 3;
    for (int64_t x = 0; x < width; ++x) {
      const Taps& t = tx[size_t(x)];
      float r = 0, g = 0, b = 0;
      for (size_t k = 0; k < t.weights.size(); ++k) {
        const uint8_t* p = row + (t.first + int64_t(k)) * 3;
        r += t.weights[k] * p[0], g += t.weights[k] * p[1], b += t.weights[k] * p[2];
      }
      dst[x * 3] = r, dst[x * 3 + 1] = g, dst[x * 3 + 2] = b;
    }
  }
  Image out(height, width);
  std::vector<float> acc(size_t(width * 3));
  for (int64_t y = 0; y < height; ++y) {
    const Taps& t = ty[size_t(y)];
    std::fill(acc.begin(), acc.end(), 0.f);
    for (size_t k = 0; k < t.weights.size(); ++k) {
      const float* src = mid.data() + (t.first + int64_t(k)) * width * 3;
      const float w = t.weights[k];
      for (int64_t i = 0; i < width * 3; ++i) acc[size_t(i)] += w * src[i];
    }
    uint8_t* dst = out.at(y, 0);
    for (int64_t i = 0; i < width * 3; ++i) dst[i] = to_u8(acc[size_t(i)]);
  }
  return out;
}

Image resize_shorter_side(const Image& in, int64_t size) {
  STRATA_CHECK(size > 0 && !in.empty(), ValueError, "resize_shorter_side: size ", size, " on a ", in.height, "x",
               in.width, " image");
  // torchvision: the long side is int(size * long / short), truncated.
  if (in.height <= in.width) return resize(in, size, std::max<int64_t>(1, size * in.width / in.height));
  return resize(in, std::max<int64_t>(1, size * in.height / in.width), size);
}

Image crop(const Image& in, int64_t top, int64_t left, int64_t height, int64_t width) {
  STRATA_CHECK(height > 0 && width > 0, ValueError, "crop: window ", height, "x", width, " is empty");
  Image out(height, width);  // zeros
  const int64_t y0 = std::max<int64_t>(0, -top), y1 = std::min(height, in.height - top);
  const int64_t x0 = std::max<int64_t>(0, -left), x1 = std::min(width, in.width - left);
  if (x1 <= x0) return out;
  for (int64_t y = y0; y < y1; ++y)
    std::memcpy(out.at(y, x0), in.at(top + y, left + x0), size_t((x1 - x0) * 3));
  return out;
}

Image center_crop(const Image& in, int64_t height, int64_t width) {
  // torchvision.transforms.functional.center_crop: int(round((H - h) / 2.0)).
  const int64_t top = int64_t(std::lround(double(in.height - height) / 2.0));
  const int64_t left = int64_t(std::lround(double(in.width - width) / 2.0));
  return crop(in, top, left, height, width);
}

void flip_horizontal(Image* image) {
  for (int64_t y = 0; y < image->height; ++y)
    for (int64_t x = 0, r = image->width - 1; x < r; ++x, --r) std::swap_ranges(image->at(y, x), image->at(y, x) + 3, image->at(y, r));
}

void normalize_to_chw(const Image& in, const std::array<float, 3>& mean, const std::array<float, 3>& std,
                      float* out) {
  const int64_t hw = in.height * in.width;
  for (int c = 0; c < 3; ++c) {
    STRATA_CHECK(std[size_t(c)] != 0.f, ValueError, "normalize: std of channel ", c, " is zero");
    // (p / 255 - mean) / std, in that order, as ToTensor() then Normalize() compute it.
    const float m = mean[size_t(c)], s = std[size_t(c)];
    const uint8_t* src = in.pixels.data() + c;
    float* dst = out + c * hw;
    for (int64_t i = 0; i < hw; ++i) dst[i] = (float(src[i * 3]) / 255.f - m) / s;
  }
}

int64_t ImageTransformOptions::output_size() const {
  if (random_crop > 0) return random_crop;
  if (random_resized_crop > 0) return random_resized_crop;
  if (center_crop > 0) return center_crop;
  return 0;
}

std::string ImageTransformOptions::str() const {
  std::ostringstream os;
  const char* sep = "";
  auto add = [&](const std::string& s) {
    os << sep << s;
    sep = " + ";
  };
  if (resize) add("Resize(" + std::to_string(resize) + ")");
  if (center_crop) add("CenterCrop(" + std::to_string(center_crop) + ")");
  if (random_resized_crop) {
    std::ostringstream r;
    r << "RandomResizedCrop(" << random_resized_crop << ", scale=(" << scale_min << ", " << scale_max << "))";
    add(r.str());
  }
  if (random_crop) add("RandomCrop(" + std::to_string(random_crop) + ", padding=" + std::to_string(padding) + ")");
  if (horizontal_flip) add("RandomHorizontalFlip");
  std::ostringstream n;
  n << "Normalize(mean=(" << mean[0] << ", " << mean[1] << ", " << mean[2] << "), std=(" << std[0] << ", " << std[1]
    << ", " << std[2] << "))";
  add(n.str());
  return os.str();
}

ImageTransformOptions ImageTransformOptions::cifar_train(int64_t size, int64_t padding) {
  ImageTransformOptions o;
  o.random_crop = size, o.padding = padding, o.horizontal_flip = true;
  o.mean = kCifar10Mean, o.std = kCifar10Std;
  return o;
}

ImageTransformOptions ImageTransformOptions::cifar_eval() {
  ImageTransformOptions o;
  o.mean = kCifar10Mean, o.std = kCifar10Std;
  return o;
}

ImageTransformOptions ImageTransformOptions::imagenet_train(int64_t size) {
  ImageTransformOptions o;
  o.random_resized_crop = size, o.horizontal_flip = true;
  o.mean = kImageNetMean, o.std = kImageNetStd;
  return o;
}

ImageTransformOptions ImageTransformOptions::imagenet_eval(int64_t size, int64_t resize_to) {
  ImageTransformOptions o;
  o.resize = resize_to, o.center_crop = size;
  o.mean = kImageNetMean, o.std = kImageNetStd;
  return o;
}

namespace {

// torchvision.transforms.RandomResizedCrop.get_params: up to 10 tries at a random area and
// log-uniform aspect ratio, else the whole image cropped to the nearest allowed ratio.
void random_resized_window(const Image& in, const ImageTransformOptions& o, KeyedRng& rng, int64_t* top,
                           int64_t* left, int64_t* h, int64_t* w) {
  const double area = double(in.height * in.width);
  const double log_r0 = std::log(o.ratio_min), log_r1 = std::log(o.ratio_max);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * (o.scale_min + (o.scale_max - o.scale_min) * rng.uniform());
    const double aspect = std::exp(log_r0 + (log_r1 - log_r0) * rng.uniform());
    const int64_t cw = std::lround(std::sqrt(target * aspect)), ch = std::lround(std::sqrt(target / aspect));
    if (cw > 0 && cw <= in.width && ch > 0 && ch <= in.height) {
      *top = rng.uniform_int(0, in.height - ch);
      *left = rng.uniform_int(0, in.width - cw);
      *h = ch, *w = cw;
      return;
    }
  }
  const double ratio = double(in.width) / double(in.height);
  if (ratio < o.ratio_min) {
    *w = in.width, *h = std::lround(double(in.width) / o.ratio_min);
  } else if (ratio > o.ratio_max) {
    *h = in.height, *w = std::lround(double(in.height) * o.ratio_max);
  } else {
    *w = in.width, *h = in.height;
  }
  *top = (in.height - *h) / 2, *left = (in.width - *w) / 2;
}

}  // namespace

Image apply_geometry(const Image& in, const ImageTransformOptions& o, KeyedRng& rng) {
  Image img = o.resize > 0 ? resize_shorter_side(in, o.resize) : in;
  if (o.center_crop > 0) img = center_crop(img, o.center_crop, o.center_crop);
  if (o.random_resized_crop > 0) {
    int64_t top, left, h, w;
    random_resized_window(img, o, rng, &top, &left, &h, &w);
    img = resize(crop(img, top, left, h, w), o.random_resized_crop, o.random_resized_crop);
  }
  if (o.random_crop > 0) {
    // Offsets in the padded image, whose pixels outside the original read zero.
    const int64_t top = rng.uniform_int(0, std::max<int64_t>(0, img.height + 2 * o.padding - o.random_crop));
    const int64_t left = rng.uniform_int(0, std::max<int64_t>(0, img.width + 2 * o.padding - o.random_crop));
    img = crop(img, top - o.padding, left - o.padding, o.random_crop, o.random_crop);
  }
  if (o.horizontal_flip && rng.uniform() < 0.5) flip_horizontal(&img);
  return img;
}

}  // namespace strata::io
