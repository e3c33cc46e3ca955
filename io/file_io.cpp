#include "io/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "strata/core/error.h"
#include "strata/core/output_path.h"

namespace strata::io {
namespace {

// One read/write call moves at most this much (Linux caps a transfer at ~2 GiB anyway).
constexpr uint64_t kMaxTransfer = uint64_t(1) << 30;

std::string errno_text(int err) { return std::strerror(err); }

}  // namespace

InputFile::InputFile(std::string path) : path_(std::move(path)) {
  // O_NONBLOCK: a FIFO at `path_` is refused below instead of blocking the open until a writer
  // comes (it changes nothing for a regular file).
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  STRATA_CHECK(fd_ >= 0, IoError, "cannot open '", path_, "' (", errno_text(errno), ")");
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    int err = errno;
    ::close(fd_);
    throw IoError(detail::concat("cannot stat '", path_, "' (", errno_text(err), ")"));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw IoError(detail::concat("'", path_, "' is not a regular file"));
  }
  size_ = uint64_t(st.st_size);
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

void InputFile::read_at(void* dst, uint64_t bytes, uint64_t offset, const std::string& what) const {
  char* p = static_cast<char*>(dst);
  uint64_t done = 0;
  while (done < bytes) {
    size_t want = size_t(std::min(bytes - done, kMaxTransfer));
    ssize_t n = ::pread(fd_, p + done, want, off_t(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      throw IoError(detail::concat("reading ", what, " from '", path_, "' failed at offset ", offset + done, " (",
                                   errno_text(errno), ")"));
    if (n == 0)
      throw IoError(detail::concat("'", path_, "' is truncated: ", what, " needs bytes [", offset, ", ",
                                   offset + bytes, ") but the file ends at ", offset + done));
    done += uint64_t(n);
  }
}

std::string InputFile::read_all() const {
  std::string s(size_t(size_), '\0');
  read_at(s.data(), size_, 0, "the file");
  return s;
}

OutputFile::OutputFile(std::string path, bool atomic) : path_(std::move(path)) {
  check_output_file(path_, "writing");
  tmp_ = atomic ? temporary_beside(path_) : path_;
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  STRATA_CHECK(fd_ >= 0, IoError, "cannot create '", tmp_, "' (", errno_text(errno), ")");
}

OutputFile::~OutputFile() {
  if (committed_) return;
  if (fd_ >= 0) ::close(fd_);
  ::unlink(tmp_.c_str());
}

void OutputFile::write_at(const void* data, uint64_t bytes, uint64_t offset) {
  const char* p = static_cast<const char*>(data);
  uint64_t done = 0;
  while (done < bytes) {
    size_t want = size_t(std::min(bytes - done, kMaxTransfer));
    ssize_t n = ::pwrite(fd_, p + done, want, off_t(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw IoError(detail::concat("writing '", path_, "' failed at offset ", offset + done, " (",
                                   n < 0 ? errno_text(errno) : std::string("no progress"), ")"));
    done += uint64_t(n);
  }
  position_ = std::max(position_, offset + bytes);
}

void OutputFile::write(const void* data, uint64_t bytes) {
  uint64_t at = position_;
  write_at(data, bytes, at);
  position_ = at + bytes;
}

void OutputFile::write_zeros(uint64_t bytes) {
  std::vector<char> zeros(size_t(std::min<uint64_t>(bytes, 1 << 16)), 0);
  while (bytes > 0) {
    uint64_t n = std::min<uint64_t>(bytes, zeros.size());
    write(zeros.data(), n);
    bytes -= n;
  }
}

void OutputFile::truncate(uint64_t bytes) {
  STRATA_CHECK(::ftruncate(fd_, off_t(bytes)) == 0, IoError, "resizing '", path_, "' to ", bytes,
               " bytes failed (", errno_text(errno), ")");
  position_ = bytes;
}

void OutputFile::commit() {
  STRATA_CHECK(!committed_ && fd_ >= 0, IoError, "OutputFile '", path_, "' committed twice");
  STRATA_CHECK(::fsync(fd_) == 0, IoError, "fsync of '", path_, "' failed (", errno_text(errno), ")");
  int rc = ::close(fd_);
  fd_ = -1;
  STRATA_CHECK(rc == 0, IoError, "closing '", path_, "' failed (", errno_text(errno), ")");
  if (tmp_ != path_)
    STRATA_CHECK(::rename(tmp_.c_str(), path_.c_str()) == 0, IoError, "renaming '", tmp_, "' to '", path_,
                 "' failed (", errno_text(errno), ")");
  committed_ = true;
}

void fsync_directory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  STRATA_CHECK(fd >= 0, IoError, "cannot open directory '", dir, "' (", errno_text(errno), ")");
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  STRATA_CHECK(rc == 0, IoError, "fsync of directory '", dir, "' failed (", errno_text(err), ")");
}

std::string unique_temp_suffix() {
  // (Appending rather than "." + std::string sidesteps a GCC 12 -Wrestrict false positive.)
  std::string s(".");
  s += std::to_string(::getpid());
  s += '.';
  s += std::to_string(::gettid());
  return s;
}

}  // namespace strata::io
