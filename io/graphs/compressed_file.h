// DecompressedReader and read_decompressed: the bytes of a graph file, gunzipped when it is
// gzip'd (recognized by its content, not its name), with errors naming the file and offset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace strata::io {

// Streams a file's bytes in order, through zlib's gzread: a gzip'd file (one or several
// members) comes out decompressed, any other file as it is.
class DecompressedReader {
 public:
  // IoError naming the file when it is missing, not a regular file or cannot be opened.
  explicit DecompressedReader(std::string path);
  ~DecompressedReader();
  DecompressedReader(const DecompressedReader&) = delete;
  DecompressedReader& operator=(const DecompressedReader&) = delete;

  const std::string& path() const { return path_; }
  // Up to `capacity` bytes into `dst`; 0 only at the end. IoError naming the file and the
  // compressed offset when the gzip stream is corrupt or ends before its trailer.
  size_t read(char* dst, size_t capacity);
  // Bytes returned so far (the decompressed offset).
  uint64_t offset() const { return offset_; }

 private:
  std::string path_;
  void* gz_ = nullptr;  // gzFile
  uint64_t offset_ = 0;
};

// All of `path`'s (decompressed) bytes.
std::string read_decompressed(const std::string& path);

}  // namespace strata::io
