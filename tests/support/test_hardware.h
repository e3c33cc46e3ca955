// test_cpu: a made-up CPU for planner and simulator tests, so a test's timings follow from its
// own figures (fp32 matmul 1e11 FLOP/s).
#pragma once

#include "strata/memory/planner/hardware.h"

namespace strata::testing {

// Host memcpy `memcpy_rate` bytes/s and, when `read_rate` > 0, one drive reading `read_rate` and
// writing `write_rate` bytes/s.
inline memory::planner::HardwareProfile test_cpu(double memcpy_rate, double read_rate = 0,
                                                 double write_rate = 0) {
  memory::planner::HardwareProfile h;
  h.name = "test cpu";
  h.matmul_flops_fp32 = {1e11, "test"};
  h.host_memcpy_bytes_per_second = {memcpy_rate, "test"};
  if (read_rate > 0) {
    memory::planner::DriveProfile d;
    d.read_bytes_per_second = {read_rate, "test"};
    d.write_bytes_per_second = {write_rate, "test"};
    h.drives.push_back(d);
  }
  return h;
}

}  // namespace strata::testing
