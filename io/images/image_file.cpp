// Image files: format sniffing, read_image and write_image over the PNG and JPEG codecs.
#include <algorithm>
#include <cctype>
#include <cstring>

#include "io/file_io.h"
#include "strata/core/error.h"
#include "strata/io/images/image.h"

namespace strata::io {

ImageFormat sniff_image_format(const uint8_t* data, size_t size) {
  static const uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (size >= 8 && std::memcmp(data, kPng, 8) == 0) return ImageFormat::Png;
  if (size >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF) return ImageFormat::Jpeg;
  return ImageFormat::Unknown;
}

Image decode_image(const uint8_t* data, size_t size, const std::string& name, int64_t max_pixels) {
  switch (sniff_image_format(data, size)) {
    case ImageFormat::Png: return decode_png(data, size, name, max_pixels);
    case ImageFormat::Jpeg: return decode_jpeg(data, size, name, max_pixels);
    default:
      throw IoError(detail::concat("'", name, "' is neither a PNG nor a JPEG image (", size,
                                   size == 0 ? " bytes: empty file)" : " bytes, unknown signature)"));
  }
}

Image read_image(const std::string& path, int64_t max_pixels) {
  InputFile f(path);
  const std::string bytes = f.read_all();
  return decode_image(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), path, max_pixels);
}

void write_image(const std::string& path, const Image& image, int jpeg_quality) {
  std::string ext = path.substr(std::min(path.size(), path.rfind('.') == std::string::npos ? path.size() : path.rfind('.')));
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  std::vector<uint8_t> bytes;
  if (ext == ".png")
    bytes = encode_png(image);
  else if (ext == ".jpg" || ext == ".jpeg")
    bytes = encode_jpeg(image, jpeg_quality);
  else
    throw ValueError(detail::concat("write_image: '", path, "' has no .png, .jpg or .jpeg extension"));
  OutputFile out(path, /*atomic=*/true);
  out.write(bytes.data(), bytes.size());
  out.commit();
}

}  // namespace strata::io
