// Image: an 8-bit RGB picture in memory (H x W x 3, interleaved), and the PNG/JPEG codecs
// (libpng, libjpeg-turbo) that read and write it. Every decoder failure (truncated or corrupt
// data, an unsupported variant) is an IoError naming the file, never a crash or exit().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata::io {

// Row-major, interleaved RGB: pixel (y, x) channel c is pixels[(y * width + x) * 3 + c].
struct Image {
  int64_t height = 0, width = 0;
  std::vector<uint8_t> pixels;

  static constexpr int64_t kChannels = 3;
  Image() = default;
  Image(int64_t h, int64_t w) : height(h), width(w), pixels(size_t(h * w * kChannels)) {}
  uint8_t* at(int64_t y, int64_t x) { return pixels.data() + (y * width + x) * kChannels; }
  const uint8_t* at(int64_t y, int64_t x) const { return pixels.data() + (y * width + x) * kChannels; }
  bool empty() const { return height == 0 || width == 0; }
};

enum class ImageFormat { Unknown, Png, Jpeg };

// The format from the first bytes (PNG signature, JPEG SOI marker), Unknown otherwise.
ImageFormat sniff_image_format(const uint8_t* data, size_t size);

// The most pixels a decoder allocates for (Pillow's MAX_IMAGE_PIXELS: about 9459 x 9459, 256 MiB
// of RGB): a small file whose header claims a huge image is refused before any pixel memory is
// allocated, naming the file and its dimensions.
inline constexpr int64_t kDefaultMaxImagePixels = 89'478'485;

// Decoders. Every PNG color type and bit depth (palette, gray, alpha, 16-bit, interlaced) and
// gray/YCbCr JPEG become 8-bit RGB (alpha is dropped). `name` only labels errors (a path). An
// image of more than `max_pixels` pixels is an IoError read from its header alone.
Image decode_png(const uint8_t* data, size_t size, const std::string& name,
                 int64_t max_pixels = kDefaultMaxImagePixels);
Image decode_jpeg(const uint8_t* data, size_t size, const std::string& name,
                  int64_t max_pixels = kDefaultMaxImagePixels);
Image decode_image(const uint8_t* data, size_t size, const std::string& name,
                   int64_t max_pixels = kDefaultMaxImagePixels);  // by sniffing
// Reads and decodes a PNG or JPEG file.
Image read_image(const std::string& path, int64_t max_pixels = kDefaultMaxImagePixels);

// Encoders (tests, and exporting a data set as an image folder).
std::vector<uint8_t> encode_png(const Image& image);
std::vector<uint8_t> encode_jpeg(const Image& image, int quality = 95);
// Writes a PNG or JPEG file, chosen by the extension (.png, .jpg, .jpeg).
void write_image(const std::string& path, const Image& image, int jpeg_quality = 95);

}  // namespace strata::io
