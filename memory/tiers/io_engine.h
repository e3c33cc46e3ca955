// IoEngine: asynchronous positional reads and writes on one file, a bounded number in flight.
// Implementations: io_uring with the file and staging buffers registered once (READ_FIXED /
// WRITE_FIXED), a pread/pwrite thread pool (the fallback when io_uring is refused), and a
// fault-injecting wrapper used by tests under the real cache.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "strata/core/error.h"
#include "strata/memory/io_faults.h"

namespace strata::memory {

enum class IoKind : uint8_t { Read, Write };

struct IoRequest {
  IoKind kind = IoKind::Read;
  uint64_t offset = 0;  // file offset (4 KiB aligned for O_DIRECT)
  size_t len = 0;       // bytes (4 KiB multiple for O_DIRECT)
  void* buf = nullptr;  // inside registered buffer `buf_index`
  int buf_index = -1;
  uint64_t tag = 0;
};

struct IoCompletion {
  uint64_t tag = 0;
  int64_t result = 0;  // bytes transferred, or -errno
};

class IoEngine {
 public:
  virtual ~IoEngine() = default;
  virtual const char* name() const = 0;
  virtual size_t depth() const = 0;
  // Starts `r`; the caller keeps at most depth() requests in flight.
  virtual void submit(const IoRequest& r) = 0;
  // Blocks until a request completes.
  virtual IoCompletion wait() = 0;
};

// Thrown where an I/O engine cannot run here: the kernel (or a sandbox) refuses io_uring, or
// GPUDirect Storage is missing; the message is the reason.
class IoEngineUnavailable : public IoError {
 public:
  using IoError::IoError;
};

// io_uring over `fd` with `buffers` registered; throws IoEngineUnavailable.
std::unique_ptr<IoEngine> make_uring_engine(int fd, std::span<const iovec> buffers, size_t depth);
bool uring_compiled_in();
// GPUDirect Storage: cuFileRead/Write between `fd` and device staging buffers registered with
// cuFileBufRegister; libcufile is loaded at run time. Throws IoEngineUnavailable (with the reason)
// where GDS is missing. The tensor cache's GPU path uses it for CUDA tensors.
std::unique_ptr<IoEngine> make_cufile_engine(int fd, std::span<const iovec> device_buffers, size_t depth);
bool cufile_available(std::string* why);
// `threads` workers running pread/pwrite on `fd`.
std::unique_ptr<IoEngine> make_thread_engine(int fd, size_t threads, size_t depth);
// Wraps `inner`, injecting `faults`; counters are shared through `state` so that faults count
// requests across every engine of one cache (reads and writes separately).
struct FaultCounters {
  uint64_t reads = 0;
  uint64_t writes = 0;
};
std::unique_ptr<IoEngine> make_faulty_engine(std::unique_ptr<IoEngine> inner, const IoFaults& faults,
                                             std::shared_ptr<FaultCounters> state);

}  // namespace strata::memory
