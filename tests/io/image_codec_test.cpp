// PNG/JPEG decoding: fixtures written by an independent encoder (tests/goldens/images/
// make_fixtures.py), round trips through libpng/libjpeg, and damaged files.
#include <gtest/gtest.h>

#include <cmath>

#include "strata/core/error.h"
#include "strata/io/images/image.h"
#include "tests/io/image_test_support.h"

using namespace strata;
using namespace strata::io;
using strata::test::read_bytes;
using strata::test::write_bytes;

namespace {

std::string fixture(const std::string& name) { return std::string(STRATA_TEST_DATA_DIR) + "/goldens/images/" + name; }

// The formula make_fixtures.py draws with.
std::array<int, 3> fixture_rgb(int x, int y) { return {(x * 40 + y * 7) & 255, (y * 50 + 3) & 255, (x * y * 11) & 255}; }

// A smooth test card: gradients and a soft disc (JPEG keeps such content within a few levels).
Image gradient_image(int64_t h, int64_t w) {
  Image img(h, w);
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x) {
      const double d = std::hypot(double(x) - w / 2.0, double(y) - h / 2.0);
      img.at(y, x)[0] = uint8_t(255 * x / (w - 1));
      img.at(y, x)[1] = uint8_t(255 * y / (h - 1));
      img.at(y, x)[2] = uint8_t(std::clamp(255.0 - 8.0 * d, 0.0, 255.0));
    }
  return img;
}

template <class F>
void expect_pixels(const Image& img, F expected, int height = 4, int width = 5) {
  ASSERT_EQ(img.height, height);
  ASSERT_EQ(img.width, width);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      const std::array<int, 3> e = expected(x, y);
      for (int c = 0; c < 3; ++c) EXPECT_EQ(int(img.at(y, x)[c]), e[size_t(c)]) << "pixel (" << y << ", " << x << ") c" << c;
    }
}

}  // namespace

TEST(ImageCodec, DecodesEveryPngVariantToRgbExactly) {
  expect_pixels(read_image(fixture("rgb8.png")), fixture_rgb);
  expect_pixels(read_image(fixture("rgba8.png")), fixture_rgb);  // alpha dropped
  expect_pixels(read_image(fixture("rgb16.png")), fixture_rgb);  // high byte kept
  expect_pixels(read_image(fixture("rgb8_adam7.png")), fixture_rgb, 7, 9);  // interlaced
  const std::array<std::array<int, 3>, 4> palette = {{{255, 0, 0}, {0, 128, 255}, {10, 20, 30}, {250, 250, 5}}};
  expect_pixels(read_image(fixture("palette8.png")), [&](int x, int y) { return palette[size_t((x + y) % 4)]; });
  expect_pixels(read_image(fixture("gray_alpha8.png")), [](int x, int y) {
    const int g = x * 30 + y;
    return std::array<int, 3>{g, g, g};
  });
  expect_pixels(read_image(fixture("gray1.png")), [](int x, int y) {
    const int g = ((x ^ y) & 1) ? 255 : 0;
    return std::array<int, 3>{g, g, g};
  });
}

TEST(ImageCodec, PngRoundTripIsExact) {
  const test::TempImageDir tmp;
  const Image img = gradient_image(37, 53);
  const std::string path = tmp.path + "/card.png";
  write_image(path, img);
  const Image back = read_image(path);
  ASSERT_EQ(back.height, 37);
  ASSERT_EQ(back.width, 53);
  EXPECT_EQ(back.pixels, img.pixels);
}

TEST(ImageCodec, JpegRoundTripIsCloseToTheOriginal) {
  const test::TempImageDir tmp;
  const Image img = gradient_image(48, 64);
  const std::string path = tmp.path + "/card.JPG";  // extension matched case-insensitively
  write_image(path, img, 95);
  EXPECT_EQ(sniff_image_format(read_bytes(path).data(), read_bytes(path).size()), ImageFormat::Jpeg);
  const Image back = read_image(path);
  ASSERT_EQ(back.height, 48);
  ASSERT_EQ(back.width, 64);
  double sum = 0;
  int worst = 0;
  for (size_t i = 0; i < img.pixels.size(); ++i) {
    const int d = std::abs(int(back.pixels[i]) - int(img.pixels[i]));
    sum += d, worst = std::max(worst, d);
  }
  EXPECT_LT(sum / double(img.pixels.size()), 2.0);  // quality 95, 4:2:0 chroma
  EXPECT_LE(worst, 24);
}

TEST(ImageCodec, TruncatedPngIsAnErrorNamingTheFile) {
  const test::TempImageDir tmp;
  const std::string dir = tmp.path;
  std::vector<uint8_t> bytes = encode_png(gradient_image(32, 32));
  for (size_t keep : {size_t(4), size_t(20), size_t(60), bytes.size() - 20, bytes.size() - 1}) {
    const std::string path = dir + "/cut_" + std::to_string(keep) + ".png";
    write_bytes(path, std::vector<uint8_t>(bytes.begin(), bytes.begin() + long(keep)));
    try {
      read_image(path);
      ADD_FAILURE() << "no error for a PNG cut to " << keep << " bytes";
    } catch (const IoError& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
}

TEST(ImageCodec, CorruptPngDataIsAnError) {
  const test::TempImageDir tmp;
  const std::string path = tmp.path + "/flipped.png";
  std::vector<uint8_t> bytes = encode_png(gradient_image(32, 32));
  for (size_t i = 60; i < bytes.size() - 16; i += 7) bytes[i] ^= 0x5A;  // inside IDAT: CRC and zlib both break
  write_bytes(path, bytes);
  try {
    read_image(path);
    FAIL() << "corrupt PNG decoded";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot decode PNG '" + path + "'"), std::string::npos) << e.what();
  }
}

TEST(ImageCodec, TruncatedOrCorruptJpegIsAnErrorNamingTheFile) {
  const test::TempImageDir tmp;
  const std::string dir = tmp.path;
  const std::vector<uint8_t> bytes = encode_jpeg(gradient_image(64, 64), 90);
  // Cut inside the headers, and inside the entropy-coded data (libjpeg would pad it with gray
  // and warn "Premature end of JPEG file": an error here).
  for (size_t keep : {size_t(3), size_t(100), bytes.size() / 2, bytes.size() - 40}) {
    const std::string path = dir + "/cut_" + std::to_string(keep) + ".jpg";
    write_bytes(path, std::vector<uint8_t>(bytes.begin(), bytes.begin() + long(keep)));
    try {
      read_image(path);
      ADD_FAILURE() << "no error for a JPEG cut to " << keep << " of " << bytes.size() << " bytes";
    } catch (const IoError& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
  // Only the EOI marker missing: every pixel is there, so it decodes.
  const std::string no_eoi = dir + "/no_eoi.jpg";
  write_bytes(no_eoi, std::vector<uint8_t>(bytes.begin(), bytes.end() - 2));
  EXPECT_EQ(read_image(no_eoi).pixels, decode_jpeg(bytes.data(), bytes.size(), "whole").pixels);
  // Garbage after the SOI marker.
  std::vector<uint8_t> junk = {0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x02, 0x13, 0x37, 0xFF, 0x00, 0x42};
  const std::string path = dir + "/junk.jpg";
  write_bytes(path, junk);
  EXPECT_THROW(read_image(path), IoError);
}

// PNG's CRC-32 (zlib's polynomial), to patch a chunk and keep the file valid.
uint32_t png_crc(const uint8_t* p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

void put_be(std::vector<uint8_t>& b, size_t at, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) b[at + size_t(i)] = uint8_t(v >> (8 * (bytes - 1 - i)));
}

// A small file whose header claims 60000 x 60000 pixels (10.8 GB of RGB) is refused from the
// header, before any pixel memory is allocated, naming the file and the dimensions.
TEST(ImageCodec, AHugeDeclaredSizeIsRefusedBeforeAllocating) {
  const test::TempImageDir tmp;
  std::vector<uint8_t> png = encode_png(gradient_image(8, 8));
  put_be(png, 16, 60000, 4);  // IHDR: width, height, then the chunk's CRC over type and data
  put_be(png, 20, 60000, 4);
  put_be(png, 29, png_crc(png.data() + 12, 17), 4);
  std::vector<uint8_t> jpeg = encode_jpeg(gradient_image(8, 8), 90);
  size_t sof = 2;
  while (sof + 1 < jpeg.size() && !(jpeg[sof] == 0xFF && (jpeg[sof + 1] == 0xC0 || jpeg[sof + 1] == 0xC2)))
    ++sof;
  ASSERT_LT(sof + 9, jpeg.size()) << "no SOF marker";
  put_be(jpeg, sof + 5, 60000, 2);  // SOF: length, precision, height, width
  put_be(jpeg, sof + 7, 60000, 2);
  for (const auto& [name, bytes] :
       {std::pair<std::string, std::vector<uint8_t>>{"huge.png", png}, {"huge.jpg", jpeg}}) {
    const std::string path = tmp.path + "/" + name;
    write_bytes(path, bytes);
    try {
      read_image(path);
      ADD_FAILURE() << name << " was decoded";
    } catch (const IoError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find(path), std::string::npos) << m;
      EXPECT_NE(m.find("60000 x 60000"), std::string::npos) << m;
      EXPECT_NE(m.find("max_image_pixels"), std::string::npos) << m;
    }
  }
  // The limit is the caller's: 8 x 8 decodes at 64 pixels and is refused at 63.
  const std::vector<uint8_t> small = encode_png(gradient_image(8, 8));
  EXPECT_EQ(decode_png(small.data(), small.size(), "small", 64).width, 8);
  EXPECT_THROW(decode_png(small.data(), small.size(), "small", 63), IoError);
  const std::vector<uint8_t> small_jpeg = encode_jpeg(gradient_image(8, 8), 90);
  EXPECT_THROW(decode_image(small_jpeg.data(), small_jpeg.size(), "small", 63), IoError);
}

TEST(ImageCodec, EmptyAndNonImageFilesAreErrors) {
  const test::TempImageDir tmp;
  const std::string dir = tmp.path;
  write_bytes(dir + "/empty.png", {});
  write_bytes(dir + "/text.png", {'h', 'e', 'l', 'l', 'o'});
  for (const char* name : {"empty.png", "text.png", "missing.png"}) {
    try {
      read_image(dir + "/" + name);
      ADD_FAILURE() << name << " decoded";
    } catch (const IoError& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(write_image(dir + "/x.bmp", gradient_image(4, 4)), ValueError);
}
