// The io_uring IoEngine: one ring per channel, the spill file and the staging buffers
// registered once at creation, READ_FIXED/WRITE_FIXED on the hot path.
#include "memory/tiers/io_engine.h"
#include "strata/config.h"

#if STRATA_HAVE_URING
#include <liburing.h>

#include <cstring>
#include <vector>
#endif

namespace strata::memory {

#if STRATA_HAVE_URING
namespace {

class UringIoEngine final : public IoEngine {
 public:
  UringIoEngine(int fd, std::span<const iovec> buffers, size_t depth) : depth_(depth) {
    int rc = io_uring_queue_init(unsigned(depth < 2 ? 2 : depth), &ring_, 0);
    if (rc < 0) throw IoEngineUnavailable(std::string("io_uring_queue_init: ") + std::strerror(-rc));
    rc = io_uring_register_files(&ring_, &fd, 1);
    if (rc < 0) {
      io_uring_queue_exit(&ring_);
      throw IoEngineUnavailable(std::string("io_uring_register_files: ") + std::strerror(-rc));
    }
    if (!buffers.empty()) {
      std::vector<iovec> iov(buffers.begin(), buffers.end());
      rc = io_uring_register_buffers(&ring_, iov.data(), unsigned(iov.size()));
      if (rc < 0) {
        io_uring_queue_exit(&ring_);
        throw IoEngineUnavailable{std::string("io_uring_register_buffers (RLIMIT_MEMLOCK?): ") +
                             std::strerror(-rc)};
      }
    }
  }
  ~UringIoEngine() override { io_uring_queue_exit(&ring_); }
  const char* name() const override { return "io_uring"; }
  size_t depth() const override { return depth_; }

  void submit(const IoRequest& r) override {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (!sqe) {  // the caller bounds in-flight requests, so this only happens transiently
      io_uring_submit(&ring_);
      sqe = io_uring_get_sqe(&ring_);
    }
    if (r.buf_index >= 0) {
      if (r.kind == IoKind::Read)
        io_uring_prep_read_fixed(sqe, 0, r.buf, unsigned(r.len), r.offset, r.buf_index);
      else
        io_uring_prep_write_fixed(sqe, 0, r.buf, unsigned(r.len), r.offset, r.buf_index);
    } else {
      if (r.kind == IoKind::Read)
        io_uring_prep_read(sqe, 0, r.buf, unsigned(r.len), r.offset);
      else
        io_uring_prep_write(sqe, 0, r.buf, unsigned(r.len), r.offset);
    }
    sqe->flags |= IOSQE_FIXED_FILE;
    io_uring_sqe_set_data64(sqe, r.tag);
    io_uring_submit(&ring_);
  }

  IoCompletion wait() override {
    io_uring_cqe* cqe = nullptr;
    int rc;
    do {
      rc = io_uring_wait_cqe(&ring_, &cqe);
    } while (rc == -EINTR);
    if (rc < 0) return {0, rc};
    IoCompletion c{io_uring_cqe_get_data64(cqe), cqe->res};
    io_uring_cqe_seen(&ring_, cqe);
    return c;
  }

 private:
  io_uring ring_{};
  size_t depth_;
};

}  // namespace

std::unique_ptr<IoEngine> make_uring_engine(int fd, std::span<const iovec> buffers, size_t depth) {
  return std::make_unique<UringIoEngine>(fd, buffers, depth);
}
bool uring_compiled_in() { return true; }

#else

std::unique_ptr<IoEngine> make_uring_engine(int, std::span<const iovec>, size_t) {
  throw IoEngineUnavailable("built without liburing");
}
bool uring_compiled_in() { return false; }

#endif

}  // namespace strata::memory
