// PNG decode/encode through libpng. libpng reports fatal errors by longjmp'ing to the
// setjmp point of the call that failed (png_error, png_set_longjmp_fn); nothing with a
// destructor lives in the frames it jumps over: the decoder state is a plain struct whose
// address libpng holds, and the C++ error is thrown only after the jump has landed.
#include <png.h>

#include <csetjmp>
#include <cstring>

#include "strata/core/error.h"
#include "strata/io/images/image.h"

namespace strata::io {
namespace {

struct PngSource {
  const uint8_t* data;
  size_t size;
  size_t pos;
  char message[256];  // libpng's error text, copied before the longjmp
};

void png_read_from_memory(png_structp png, png_bytep out, png_size_t bytes) {
  auto* src = static_cast<PngSource*>(png_get_io_ptr(png));
  if (src->size - src->pos < bytes) {
    std::snprintf(src->message, sizeof src->message, "the data ends at byte %zu, inside a chunk (truncated file)",
                  src->size);
    png_longjmp(png, 1);
  }
  std::memcpy(out, src->data + src->pos, bytes);
  src->pos += bytes;
}

void png_record_error(png_structp png, png_const_charp msg) {
  auto* src = static_cast<PngSource*>(png_get_error_ptr(png));
  if (src->message[0] == 0) std::snprintf(src->message, sizeof src->message, "%s", msg);
  png_longjmp(png, 1);
}

void png_ignore_warning(png_structp, png_const_charp) {}  // e.g. benign iCCP profile notes

// Decodes into `out` (resized after the header is read). Returns false with src->message
// set on any libpng error. Only trivially destructible locals live across the setjmp.
bool png_decode_into(PngSource* src, int64_t max_pixels, Image* out) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, src, png_record_error, png_ignore_warning);
  if (!png) {
    std::snprintf(src->message, sizeof src->message, "libpng could not allocate its decoder");
    return false;
  }
  png_infop info = png_create_info_struct(png);
  if (!info) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    std::snprintf(src->message, sizeof src->message, "libpng could not allocate its decoder");
    return false;
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  png_set_read_fn(png, src, png_read_from_memory);
  // Guard against absurd headers before any allocation is made from them.
  png_set_user_limits(png, 1 << 16, 1 << 16);
  png_read_info(png, info);
  const png_uint_32 w = png_get_image_width(png, info), h = png_get_image_height(png, info);
  if (int64_t(w) * int64_t(h) > max_pixels) {  // before any pixel memory is allocated
    std::snprintf(src->message, sizeof src->message,
                  "the header says %u x %u (%lld pixels), over the limit of %lld pixels (max_image_pixels)",
                  unsigned(w), unsigned(h), (long long)(int64_t(w) * h), (long long)max_pixels);
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  const int color = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);
  // Every variant to 8-bit RGB: palettes and low-bit gray expanded, 16-bit stripped,
  // gray replicated, alpha (and tRNS) dropped.
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (depth == 16) png_set_strip_16(png);
  if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
  if (color & PNG_COLOR_MASK_ALPHA) png_set_strip_alpha(png);
  const int passes = png_set_interlace_handling(png);
  png_read_update_info(png, info);
  if (png_get_rowbytes(png, info) != size_t(w) * 3) {
    std::snprintf(src->message, sizeof src->message, "unexpected row layout after conversion to RGB");
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  out->height = h;
  out->width = w;
  out->pixels.assign(size_t(w) * h * 3, 0);
  // Row pointers live in the output buffer itself: no allocation to leak on a longjmp.
  for (int pass = 0; pass < passes; ++pass)
    for (png_uint_32 y = 0; y < h; ++y) png_read_row(png, out->pixels.data() + size_t(y) * w * 3, nullptr);
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  return true;
}

struct PngSink {
  std::vector<uint8_t>* bytes;
  char message[256];
};

void png_write_to_memory(png_structp png, png_bytep data, png_size_t n) {
  auto* sink = static_cast<PngSink*>(png_get_io_ptr(png));
  sink->bytes->insert(sink->bytes->end(), data, data + n);
}
void png_flush_nothing(png_structp) {}

void png_record_write_error(png_structp png, png_const_charp msg) {
  auto* sink = static_cast<PngSink*>(png_get_error_ptr(png));
  std::snprintf(sink->message, sizeof sink->message, "%s", msg);
  png_longjmp(png, 1);
}

bool png_encode_into(const Image* image, PngSink* sink) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, sink, png_record_write_error, png_ignore_warning);
  if (!png) return false;
  png_infop info = png_create_info_struct(png);
  if (!info) {
    png_destroy_write_struct(&png, nullptr);
    return false;
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return false;
  }
  png_set_write_fn(png, sink, png_write_to_memory, png_flush_nothing);
  png_set_IHDR(png, info, png_uint_32(image->width), png_uint_32(image->height), 8, PNG_COLOR_TYPE_RGB,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (int64_t y = 0; y < image->height; ++y) png_write_row(png, const_cast<png_bytep>(image->at(y, 0)));
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return true;
}

}  // namespace

Image decode_png(const uint8_t* data, size_t size, const std::string& name, int64_t max_pixels) {
  STRATA_CHECK(size >= 8 && png_sig_cmp(data, 0, 8) == 0, IoError, "'", name,
               "' is not a PNG file (bad signature; ", size, " bytes)");
  PngSource src{data, size, 0, {0}};
  Image out;
  if (!png_decode_into(&src, max_pixels, &out))
    throw IoError(detail::concat("cannot decode PNG '", name, "': ", src.message));
  return out;
}

std::vector<uint8_t> encode_png(const Image& image) {
  STRATA_CHECK(!image.empty() && image.pixels.size() == size_t(image.height * image.width * 3), ValueError,
               "encode_png: image ", image.height, "x", image.width, " holds ", image.pixels.size(),
               " bytes, not H*W*3");
  std::vector<uint8_t> bytes;
  PngSink sink{&bytes, {0}};
  if (!png_encode_into(&image, &sink)) throw IoError(detail::concat("encode_png: libpng failed: ", sink.message));
  return bytes;
}

}  // namespace strata::io
