// OpObserver: a thread-local hook every op reports its name and cost (FLOPs, bytes) to.
#pragma once

#include <cstdint>
#include <string>

#include "strata/core/device.h"

namespace strata {

struct OpCost {
  double flops = 0;
  double bytes_read = 0;
  double bytes_written = 0;
};

struct OpRecord {
  const char* op;
  Device device;
  OpCost cost;
};

// Installed for the current thread by OpObserverGuard; the planner's tracer and the Meta
// dry-run cost counters implement it.
class OpObserver {
 public:
  virtual ~OpObserver() = default;
  // After an op ran (ops report once their kernels returned).
  virtual void on_op(const OpRecord& record) = 0;
  // The autograd engine brackets each backward node it runs (e.g. "MatmulBackward"); the ops
  // the node's formula runs are reported in between.
  virtual void on_node_begin(const std::string& node) {}
  virtual void on_node_end() {}
};

class OpObserverGuard {
 public:
  explicit OpObserverGuard(OpObserver* observer);
  ~OpObserverGuard();
  OpObserverGuard(const OpObserverGuard&) = delete;
  OpObserverGuard& operator=(const OpObserverGuard&) = delete;
  static OpObserver* current();

 private:
  OpObserver* prev_;
};

// Sums the cost of every op run while it is installed.
class CostCounter final : public OpObserver {
 public:
  void on_op(const OpRecord& r) override {
    total.flops += r.cost.flops;
    total.bytes_read += r.cost.bytes_read;
    total.bytes_written += r.cost.bytes_written;
    ++num_ops;
  }
  OpCost total;
  int64_t num_ops = 0;
};

}  // namespace strata
