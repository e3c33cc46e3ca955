// IoFaults: faults the tensor cache's I/O layer injects under the real cache (tests and
// drills): failed, short or corrupted reads and writes, and a refused io_uring.
#pragma once

#include <cstdint>
#include <vector>

namespace strata::memory {

struct IoFault {
  enum class Kind : uint8_t {
    NoSpace,     // a write fails with ENOSPC
    WriteError,  // a write fails with EIO
    ShortWrite,  // a write completes half its bytes
    ReadError,   // a read fails with EIO
    ShortRead,   // a read completes fewer bytes than asked
    Corrupt,     // a read succeeds but one byte of its data is flipped
    SlowWrite,   // a write succeeds after a 50 ms stall (a disk slower than compute)
  };
  Kind kind = Kind::WriteError;
  uint64_t first = 0;  // index of the first request of that direction it hits (0-based)
  uint64_t count = 1;  // how many consecutive requests it hits (UINT64_MAX: all)
};

struct IoFaults {
  std::vector<IoFault> faults;
  bool refuse_uring = false;  // behave as if io_uring_setup were refused (seccomp, memlock)
};

}  // namespace strata::memory
