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
  // At least the bytes still to come: exact for a file that is not gzip'd, else what the unread
  // compressed bytes could inflate to (deflate's ratio is at most 1032:1). A count read from the
  // file is checked against it before anything is sized by it.
  uint64_t max_remaining() const;

 private:
  std::string path_;
  void* gz_ = nullptr;  // gzFile
  uint64_t offset_ = 0;
  uint64_t file_bytes_ = 0;
};

// All of `path`'s (decompressed) bytes, for small files; a format whose counts size what it
// allocates streams through DecompressedReader instead.
std::string read_decompressed(const std::string& path);

}  // namespace strata::io
