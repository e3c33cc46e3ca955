#include "io/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "strata/core/error.h"

namespace strata::io {

void write_file_atomically(const std::string& path, const void* data, size_t bytes) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  STRATA_CHECK(fd >= 0, IoError, "cannot create '", tmp, "' (", std::strerror(errno), ")");
  auto fail = [&](const char* what, size_t offset) {
    int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    throw IoError(detail::concat(what, " '", path, "' failed at offset ", offset, " (", std::strerror(err), ")"));
  };
  const char* p = static_cast<const char*>(data);
  size_t done = 0;
  while (done < bytes) {
    ssize_t n = ::write(fd, p + done, bytes - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("writing", done);
    done += size_t(n);
  }
  if (::fsync(fd) != 0) fail("fsync of", done);
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw IoError(detail::concat("closing '", path, "' failed (", std::strerror(err), ")"));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw IoError(detail::concat("renaming '", tmp, "' to '", path, "' failed (", std::strerror(err), ")"));
  }
}

}  // namespace strata::io
