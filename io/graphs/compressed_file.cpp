#include "io/graphs/compressed_file.h"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "strata/core/error.h"

namespace strata::io {
namespace {

gzFile handle(void* gz) { return static_cast<gzFile>(gz); }

}  // namespace

DecompressedReader::DecompressedReader(std::string path) : path_(std::move(path)) {
  struct stat st {};
  STRATA_CHECK(::stat(path_.c_str(), &st) == 0, IoError, "cannot open '", path_, "' (", std::strerror(errno),
               ")");
  STRATA_CHECK(S_ISREG(st.st_mode), IoError, "'", path_, "' is not a regular file");
  file_bytes_ = uint64_t(st.st_size);
  gz_ = ::gzopen(path_.c_str(), "rb");
  STRATA_CHECK(gz_ != nullptr, IoError, "cannot open '", path_, "' (", std::strerror(errno), ")");
  ::gzbuffer(handle(gz_), 1 << 18);
}

DecompressedReader::~DecompressedReader() {
  if (gz_ != nullptr) ::gzclose(handle(gz_));
}

size_t DecompressedReader::read(char* dst, size_t capacity) {
  unsigned want = unsigned(std::min<size_t>(capacity, size_t(INT_MAX)));
  int n = ::gzread(handle(gz_), dst, want);
  int err = Z_OK;
  const char* text = ::gzerror(handle(gz_), &err);
  // zlib reports a gzip stream cut short as Z_BUF_ERROR beside a short (or empty) read.
  if (n < 0 || (err != Z_OK && err != Z_STREAM_END)) {
    std::string why = err == Z_ERRNO ? std::strerror(errno) : (text != nullptr ? text : "read failed");
    throw IoError(detail::concat("'", path_, "' is corrupt or truncated: ", why, " at compressed offset ",
                                 ::gzoffset(handle(gz_)), " (decompressed offset ", offset_, ")"));
  }
  offset_ += uint64_t(n);
  return size_t(n);
}

uint64_t DecompressedReader::max_remaining() const {
  if (::gzdirect(handle(gz_)) == 1) return file_bytes_ > offset_ ? file_bytes_ - offset_ : 0;
  // gzoffset counts the compressed bytes zlib has taken in, some of them still buffered (at most
  // the 2^18 set by gzbuffer) and not yet inflated.
  const int64_t taken = int64_t(::gzoffset(handle(gz_)));
  const uint64_t unread =
      file_bytes_ - std::min<uint64_t>(file_bytes_, uint64_t(std::max<int64_t>(taken, 0)));
  return (unread + (uint64_t(1) << 18)) * 1032 + (uint64_t(1) << 20);
}

std::string read_decompressed(const std::string& path) {
  DecompressedReader reader(path);
  std::string bytes;
  size_t chunk = size_t(1) << 20;
  for (;;) {
    size_t used = bytes.size();
    bytes.resize(used + chunk);
    size_t n = reader.read(bytes.data() + used, chunk);
    bytes.resize(used + n);
    if (n == 0) break;
    chunk = std::min(chunk * 2, size_t(1) << 28);
  }
  return bytes;
}

}  // namespace strata::io
