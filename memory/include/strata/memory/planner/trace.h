// StepTrace: one training step as the planner sees it: every op of forward and backward in
// execution order (time, workspace), every saved storage (bytes, producer, uses, block, recompute
// recipe), and the blocks (the chain the solver plans over).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata::memory::planner {

enum class TracePhase : uint8_t { Forward, Backward };

struct TraceOp {
  std::string kind;   // "matmul", "gelu", ... (the cost model's op kinds)
  std::string scope;  // module path at the time ("transformer.h.3.mlp")
  int32_t block = -1;  // index into StepTrace::blocks, -1 outside every block
  TracePhase phase = TracePhase::Forward;
  double seconds = 0;  // measured, or from the cost model
  double flops = 0;
  double bytes = 0;        // bytes read and written (for the cost model)
  uint64_t temp_bytes = 0;  // memory the op holds while it runs, beyond saved tensors
};

// A saved storage (views of one storage are one entry).
struct TraceTensor {
  std::string key;  // the cache's key: "<scope>#<n>:<op>"
  uint64_t bytes = 0;
  int32_t producer = -1;            // op that made it (forward)
  int32_t last_forward_use = -1;    // last forward op that reads it (>= producer)
  int32_t first_backward_use = -1;  // first backward op that unpacks it
  int32_t last_backward_use = -1;
  int32_t block = -1;
  // Op-level recompute: its producer can make it again from tensors saved anyway, in this time.
  bool op_recomputable = false;
  double recompute_seconds = 0;
  // The input of its block (what a recompute segment keeps): never dropped by the block's recompute.
  bool block_input = false;
};

struct TraceBlock {
  std::string path;
  int32_t first_forward_op = -1, last_forward_op = -1;
  int32_t first_backward_op = -1, last_backward_op = -1;
};

struct StepTrace {
  std::string model;
  std::string source;  // "profiled" (measured times) or "cost model"
  std::vector<TraceOp> ops;          // forward ops, then backward ops, in execution order
  std::vector<TraceTensor> tensors;  // saved storages
  std::vector<TraceBlock> blocks;    // forward order
  uint64_t resident_bytes = 0;  // parameters, gradients and optimizer state: held all step

  // Forward time of block b (its ops' seconds).
  double block_forward_seconds(int32_t b) const;
  // An op-level recomputable tensor costs its producer's time again: sets every such tensor's
  // recompute_seconds from ops[producer].seconds (after the op times change).
  void recompute_costs_from_ops();
  // Throws ValueError naming the tensor or op whose indices are inconsistent.
  void validate() const;
};

// Binary protobuf, or text when `path` ends in ".textproto"; written atomically (temp + rename).
void save_trace(const StepTrace& trace, const std::string& path);
// IoError naming the file when it cannot be read, ValueError when it does not parse or its
// indices are inconsistent.
StepTrace load_trace(const std::string& path);

}  // namespace strata::memory::planner
