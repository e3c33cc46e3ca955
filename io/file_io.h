// InputFile and OutputFile: positioned POSIX reads and writes for io/'s binary formats that
// loop over short transfers and throw IoError naming the file, the offset and errno.
#pragma once

#include <cstdint>
#include <string>

namespace strata::io {

// A file opened for reading.
class InputFile {
 public:
  explicit InputFile(std::string path);  // IoError "cannot open" naming the file and errno
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }
  // Reads exactly `bytes` at `offset`; IoError naming the file, the offset and `what` (e.g.
  // "tensor 'wte'") when the file ends early or the read fails.
  void read_at(void* dst, uint64_t bytes, uint64_t offset, const std::string& what) const;
  std::string read_all() const;

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// A file written from scratch. With atomic=true the bytes go to a sibling temporary file that
// commit() fsyncs and renames over `path`; without, commit() fsyncs `path` in place. Destroyed
// without commit() (an exception on the way), it removes what it wrote, so a failed write
// never leaves a partial file behind.
class OutputFile {
 public:
  OutputFile(std::string path, bool atomic);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  const std::string& path() const { return path_; }
  void write(const void* data, uint64_t bytes);  // at position(), then advances it
  void write_at(const void* data, uint64_t bytes, uint64_t offset);
  void write_zeros(uint64_t bytes);              // at position()
  uint64_t position() const { return position_; }
  void truncate(uint64_t bytes);                 // sets the file size (holes read as zeros)
  void commit();

 private:
  std::string path_, tmp_;  // tmp_ == path_ when not atomic
  int fd_ = -1;
  uint64_t position_ = 0;
  bool committed_ = false;
};

// fsync of a directory, so renames and new entries in it survive a crash.
void fsync_directory(const std::string& dir);

// ".<pid>.<tid>": a suffix for temporary names no other writer (process or thread) uses.
std::string unique_temp_suffix();

}  // namespace strata::io
