// The pread/pwrite thread-pool IoEngine: the fallback when io_uring is refused.
#include <unistd.h>

#include <cerrno>

#include "memory/tiers/queued_io_engine.h"

namespace strata::memory {
namespace {

class ThreadIoEngine final : public QueuedIoEngine {
 public:
  ThreadIoEngine(int fd, size_t threads, size_t depth) : QueuedIoEngine(depth), fd_(fd) { start(threads); }
  ~ThreadIoEngine() override { stop(); }
  const char* name() const override { return "threads"; }

 protected:
  // Loops over partial transfers: a short pread/pwrite is not an error.
  int64_t perform(const IoRequest& r) override {
    size_t done = 0;
    while (done < r.len) {
      char* p = static_cast<char*>(r.buf) + done;
      ssize_t n = r.kind == IoKind::Read ? ::pread(fd_, p, r.len - done, off_t(r.offset + done))
                                         : ::pwrite(fd_, p, r.len - done, off_t(r.offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return -errno;
      if (n == 0) break;  // end of file: report the short count
      done += size_t(n);
    }
    return int64_t(done);
  }

 private:
  int fd_;
};

}  // namespace

std::unique_ptr<IoEngine> make_thread_engine(int fd, size_t threads, size_t depth) {
  return std::make_unique<ThreadIoEngine>(fd, threads, depth);
}

}  // namespace strata::memory
