// The planner's view of each block of a step trace: its figures (what it saves, what op-level
// recompute can make again, its times) and the offload variants the chain DP's options are built
// from. Private to memory/planner.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "strata/memory/planner/trace.h"

namespace strata::memory::planner {

// What the options of block b are made of.
struct BlockFigures {
  uint64_t saved = 0;         // every tensor it saves that backward reads
  uint64_t inputs = 0;        // ... of which its inputs (what a segment keeps)
  uint64_t recomputable = 0;  // ... of which ops' outputs that op-level recompute can make again
  uint64_t cheap = 0;         // ... of which the cheapest to make again (see cheapest_recomputes)
  uint64_t workspace = 0;     // the largest op workspace in its forward and backward
  double forward = 0, backward = 0, recompute_ops = 0, cheap_ops = 0;
};

// The block whose op made tensor x (-1: outside every block, or before the step).
int32_t producer_block(const StepTrace& t, const TraceTensor& x);

// Whether block-selective recompute drops tensor x (a cheap op's output, made again in backward).
// A block input counts when an op of an earlier block made it from tensors that block saves (the
// post-LN transformer's layer norm output, which the next block's projection saves): sim_plan_for
// keeps it where either block re-runs as a segment (a segment restarts from its inputs).
bool selective_drops(const StepTrace& t, const TraceTensor& x);

// Per tensor: op-level recomputable by an op that is not GEMM-like, at a cost per byte within
// twice the lowest of the trace's (elementwise ops' and norms' outputs, memory-bound), as opposed
// to outputs that take a GEMM to make again (which, at large sizes, can cost less than twice a
// GELU's per byte: BERT-large's intermediate projection): the "selective-cheap" options recompute
// only these.
std::vector<char> cheapest_recomputes(const StepTrace& t);

// Per block of the trace, in order.
std::vector<BlockFigures> figures(const StepTrace& t);

// One way of offloading a prefix of blocks (a tier, with or without selective recompute): a
// prefix group of the chain DP.
enum class Selective { None, All, Cheap };

struct OffloadVariant {
  std::string name;
  Selective selective;
  int group;
  double load_rate, load_latency, store_rate;
  std::vector<uint64_t> held;  // per block: bytes still in memory when forward ends
  std::vector<double> stall;   // per block: backward's wait for its load (see load_stalls)
};

// What selective recompute leaves out of a block's offload, and what it costs.
uint64_t kept_out(const BlockFigures& b, Selective s);
double recompute_cost(const BlockFigures& b, Selective s);

// Per block: the bytes an offloaded block still holds when forward ends, when it and every block
// before it store their tensors through one channel, first in first out, each store starting when
// its producer finishes (G10: stores as early as possible) and the memory freed when it completes.
std::vector<uint64_t> held_at_forward_end(const StepTrace& t, Selective selective, double rate, double latency);

// Per block: how long backward waits for its load when blocks 0..K-1 are offloaded, K being the
// blocks whose stores the forward pass can finish (the prefix the DP is likely to pick). Loads
// share one channel, first in first out, in the order backward needs them: block b's is issued
// when backward enters block b + depth (the last ones when backward starts), and each wait delays
// everything after it. The backward times are the trace's, without recompute, so waits are
// overestimated where segments re-run; blocks beyond K are charged their load alone.
std::vector<double> load_stalls(const StepTrace& t, const std::vector<BlockFigures>& f, const OffloadVariant& v,
                                size_t depth);

// What is saved outside every block and read in backward (kept by every plan).
uint64_t outside_bytes(const StepTrace& t);

}  // namespace strata::memory::planner
