// JPEG decode/encode through libjpeg(-turbo). libjpeg's default error_exit calls exit(); ours
// records the message and longjmps back to the call (the libjpeg manual's "setjmp" example).
// Warnings (corrupt entropy data, data that ends before the last pixel) are errors too: a
// damaged image must not train silently as garbage.
#include <csetjmp>
#include <cstdio>
#include <cstring>

// jpeglib.h needs size_t and FILE declared before it.
// clang-format off
#include <jpeglib.h>
// clang-format on

#include "strata/core/error.h"
#include "strata/io/images/image.h"

namespace strata::io {
namespace {

struct JpegErrorManager {
  jpeg_error_mgr pub;  // first: libjpeg casts cinfo->err back to this
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  bool warned;
};

// A memory source like jpeg_mem_src, but reaching the end inserts an EOI marker without
// jpeg_mem_src's "premature end" warning: the entropy decoder itself warns (JWRN_HIT_MARKER)
// when it needs bits that are not there, which tells a truncated file from one that lacks only
// its final EOI marker (every pixel present: it decodes, as in PIL).
void source_init(j_decompress_ptr) {}
void source_term(j_decompress_ptr) {}
boolean source_fill_with_eoi(j_decompress_ptr cinfo) {
  static const JOCTET kEoi[2] = {0xFF, JPEG_EOI};
  cinfo->src->next_input_byte = kEoi;
  cinfo->src->bytes_in_buffer = 2;
  return TRUE;
}
void source_skip(j_decompress_ptr cinfo, long bytes) {
  if (bytes <= 0) return;
  if (size_t(bytes) > cinfo->src->bytes_in_buffer) {
    source_fill_with_eoi(cinfo);
    return;
  }
  cinfo->src->next_input_byte += bytes;
  cinfo->src->bytes_in_buffer -= size_t(bytes);
}

void jpeg_error_exit_longjmp(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

void jpeg_record_warning(j_common_ptr cinfo, int msg_level) {
  auto* err = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  if (msg_level < 0 && !err->warned) {  // -1: a warning; >= 0: trace messages, ignored
    (*cinfo->err->format_message)(cinfo, err->message);
    err->warned = true;
  }
}

jpeg_error_mgr* install_error_manager(JpegErrorManager* err) {
  jpeg_std_error(&err->pub);
  err->pub.error_exit = jpeg_error_exit_longjmp;
  err->pub.emit_message = jpeg_record_warning;
  return &err->pub;
}

bool jpeg_decode_into(const uint8_t* data, size_t size, int64_t max_pixels, JpegErrorManager* err,
                      Image* out) {
  jpeg_decompress_struct cinfo;
  cinfo.err = install_error_manager(err);
  if (setjmp(err->jump)) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_source_mgr src;
  src.init_source = source_init;
  src.fill_input_buffer = source_fill_with_eoi;
  src.skip_input_data = source_skip;
  src.resync_to_restart = jpeg_resync_to_restart;
  src.term_source = source_term;
  src.next_input_byte = data;
  src.bytes_in_buffer = size;
  cinfo.src = &src;
  jpeg_read_header(&cinfo, TRUE);
  // Before jpeg_start_decompress, which allocates (a progressive JPEG's whole coefficient array).
  if (int64_t(cinfo.image_width) * int64_t(cinfo.image_height) > max_pixels) {
    std::snprintf(err->message, sizeof err->message,
                  "the header says %u x %u (%lld pixels), over the limit of %lld pixels (max_image_pixels)",
                  unsigned(cinfo.image_width), unsigned(cinfo.image_height),
                  (long long)(int64_t(cinfo.image_width) * cinfo.image_height), (long long)max_pixels);
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
    std::snprintf(err->message, sizeof err->message, "CMYK/YCCK JPEGs are not supported (convert to RGB)");
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  cinfo.out_color_space = JCS_RGB;
  jpeg_start_decompress(&cinfo);
  out->height = cinfo.output_height;
  out->width = cinfo.output_width;
  out->pixels.assign(size_t(cinfo.output_width) * cinfo.output_height * 3, 0);
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = out->pixels.data() + size_t(cinfo.output_scanline) * cinfo.output_width * 3;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return !err->warned;
}

bool jpeg_encode_into(const Image* image, int quality, JpegErrorManager* err, unsigned char** buf,
                      unsigned long* len) {
  jpeg_compress_struct cinfo;
  cinfo.err = install_error_manager(err);
  if (setjmp(err->jump)) {
    jpeg_destroy_compress(&cinfo);
    return false;
  }
  jpeg_create_compress(&cinfo);
  jpeg_mem_dest(&cinfo, buf, len);
  cinfo.image_width = JDIMENSION(image->width);
  cinfo.image_height = JDIMENSION(image->height);
  cinfo.input_components = 3;
  cinfo.in_color_space = JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(image->at(cinfo.next_scanline, 0));
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  return true;
}

}  // namespace

Image decode_jpeg(const uint8_t* data, size_t size, const std::string& name, int64_t max_pixels) {
  STRATA_CHECK(size >= 3 && data[0] == 0xFF && data[1] == 0xD8, IoError, "'", name,
               "' is not a JPEG file (no SOI marker; ", size, " bytes)");
  JpegErrorManager err{};
  Image out;
  if (!jpeg_decode_into(data, size, max_pixels, &err, &out))
    throw IoError(detail::concat("cannot decode JPEG '", name, "': ", err.message));
  return out;
}

std::vector<uint8_t> encode_jpeg(const Image& image, int quality) {
  STRATA_CHECK(!image.empty() && image.pixels.size() == size_t(image.height * image.width * 3), ValueError,
               "encode_jpeg: image ", image.height, "x", image.width, " holds ", image.pixels.size(),
               " bytes, not H*W*3");
  STRATA_CHECK(quality >= 1 && quality <= 100, ValueError, "encode_jpeg: quality ", quality, " is not in [1, 100]");
  JpegErrorManager err{};
  unsigned char* buf = nullptr;
  unsigned long len = 0;
  const bool ok = jpeg_encode_into(&image, quality, &err, &buf, &len);
  std::vector<uint8_t> bytes;
  if (ok) bytes.assign(buf, buf + len);
  std::free(buf);  // jpeg_mem_dest's buffer is malloc'ed and ours to free
  if (!ok) throw IoError(detail::concat("encode_jpeg: libjpeg failed: ", err.message));
  return bytes;
}

}  // namespace strata::io
