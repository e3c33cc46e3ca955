#include "strata/core/output_path.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <functional>
#include <thread>

#include "strata/core/error.h"

namespace strata {

namespace {

const char* kind_of(mode_t m) {
  if (S_ISDIR(m)) return "folder";
  if (S_ISCHR(m)) return "character device";
  if (S_ISBLK(m)) return "block device";
  if (S_ISFIFO(m)) return "FIFO";
  if (S_ISSOCK(m)) return "socket";
  return "special file";
}

std::string errno_text(int err) { return std::strerror(err); }

std::string folder_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Whether `path` exists (through symbolic links), its status in *st; IoError naming `what` when
// it cannot be checked (anything but "no such file").
bool existing(const std::string& path, const std::string& what, struct stat* st) {
  STRATA_CHECK(!path.empty(), IoError, what, ": an empty output path");
  if (::stat(path.c_str(), st) == 0) return true;
  const int err = errno;
  STRATA_CHECK(err == ENOENT, IoError, what, ": cannot check '", path, "' (", errno_text(err), ")");
  return false;
}

}  // namespace

void check_output_file(const std::string& path, const std::string& what) {
  struct stat st;
  if (!existing(path, what, &st)) {
    // Said here, not as the temporary file's failed open with a name the user never gave.
    const std::string dir = folder_of(path);
    STRATA_CHECK(existing(dir, what, &st), IoError, what, ": cannot write '", path, "': its folder '", dir,
                 "' does not exist");
    STRATA_CHECK(S_ISDIR(st.st_mode), IoError, what, ": cannot write '", path, "': '", dir, "' is a ",
                 S_ISREG(st.st_mode) ? "regular file" : kind_of(st.st_mode), ", not a folder");
    return;
  }
  STRATA_CHECK(S_ISREG(st.st_mode), IoError, what, ": refusing to write '", path, "': it is a ",
               kind_of(st.st_mode), ", not a regular file");
}

void check_output_folder(const std::string& path, const std::string& what) {
  struct stat st;
  if (!existing(path, what, &st)) return;
  STRATA_CHECK(S_ISDIR(st.st_mode), IoError, what, ": refusing to write the folder '", path, "': it is a ",
               S_ISREG(st.st_mode) ? "regular file" : kind_of(st.st_mode), ", not a folder");
}

std::string temporary_beside(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  static std::atomic<uint64_t> serial{0};
  return detail::concat(dir, ".", name, ".tmp.", ::getpid(), ".",
                        std::hash<std::thread::id>{}(std::this_thread::get_id()) % 1000000, ".", serial++);
}

void write_file_atomically(const std::string& path, const void* data, size_t bytes, const std::string& what) {
  check_output_file(path, what);
  const std::string tmp = temporary_beside(path);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  STRATA_CHECK(fd >= 0, IoError, what, ": cannot create '", tmp, "' beside '", path, "' (", errno_text(errno),
               ")");
  auto fail = [&](const std::string& step) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    throw IoError(detail::concat(what, ": ", step, " '", path, "' failed (", errno_text(err), ")"));
  };
  const char* p = static_cast<const char*>(data);
  size_t done = 0;
  while (done < bytes) {
    const ssize_t n = ::write(fd, p + done, bytes - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(detail::concat("writing byte ", done, " of"));
    done += size_t(n);
  }
  if (::fsync(fd) != 0) fail("fsync of");
  const int closed = ::close(fd);
  fd = -1;
  if (closed != 0) fail("closing");
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail("renaming the temporary file onto");
  const int dfd = ::open(folder_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);  // the new entry survives a crash; a folder that refuses fsync changes nothing
    ::close(dfd);
  }
}

}  // namespace strata
