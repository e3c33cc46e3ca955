// ProcessGroup: collectives among the ranks of a data-parallel job (torch.distributed's
// ProcessGroup in C++), with three backends: MPI (CPU tensors), NCCL (CUDA tensors,
// bootstrapped over MPI) and an in-process one whose ranks are threads (for tests).
//
//   auto pg = dist::make_mpi_group();                     // under mpirun -np N
//   dist::WorkPtr w = pg->all_reduce(grad, dist::ReduceOp::Avg);   // starts, returns at once
//   ...                                                     // overlap: keep computing
//   w->wait();                                              // grad now holds the average
//
// Every collective is asynchronous and runs in the order it was called (all ranks must call
// the same collectives in the same order, as with MPI). Reductions are deterministic: the
// MPI and in-process backends sum contributions in rank order (x0 + x1 + ... + x{N-1}), so
// every rank gets the same bits and a rerun gets them again. A collective that does not
// complete within the group's timeout fails with CollectiveError naming the collective, its
// sequence number and the ranks that did not take part, instead of hanging; after a
// failure the group is broken and every later collective fails at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "strata/core/error.h"
#include "strata/core/tensor.h"

namespace strata::dist {

// A collective failed: a timeout, a rank that died or left, mismatched calls across ranks.
class CollectiveError : public Error {
  using Error::Error;
};

enum class ReduceOp { Sum, Avg };
const char* reduce_op_name(ReduceOp op);

// A started collective. wait() blocks until it completed (rethrowing its CollectiveError);
// for NCCL it makes the current CUDA compute stream wait instead of the host.
class Work {
 public:
  virtual ~Work() = default;
  virtual void wait() = 0;
  virtual bool is_completed() const = 0;
  // "all_reduce #12 (f32[4096], avg)": for messages and traces.
  virtual std::string description() const = 0;
  // How long the collective itself ran once started (0 until completed, or where unknown).
  virtual double run_seconds() const { return 0.0; }
};
using WorkPtr = std::shared_ptr<Work>;

struct ProcessGroupOptions {
  // A collective that has not completed after this long fails with CollectiveError.
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
};

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  std::chrono::milliseconds timeout() const { return options_.timeout; }
  virtual const char* backend_name() const = 0;

  // All tensors: contiguous, floating (f32/f64 on CPU; NCCL also bf16/f16), on the device
  // the backend serves, with the same shape and dtype on every rank. Results are in place.
  // Callers keep the tensors alive and untouched until the Work completes.

  // t = sum (or mean) over ranks of t.
  virtual WorkPtr all_reduce(const Tensor& t, ReduceOp op = ReduceOp::Sum) = 0;
  // t = t of rank `root`.
  virtual WorkPtr broadcast(const Tensor& t, int root = 0) = 0;
  // out (size() * in.numel() elements) = concatenation of every rank's `in`, in rank order.
  virtual WorkPtr all_gather(const Tensor& out, const Tensor& in) = 0;
  // out (in.numel() / size() elements) = rank()'th chunk of the sum (or mean) of every
  // rank's `in`.
  virtual WorkPtr reduce_scatter(const Tensor& out, const Tensor& in, ReduceOp op = ReduceOp::Sum) = 0;
  virtual WorkPtr barrier() = 0;

  // Blocking conveniences.
  void all_reduce_sync(const Tensor& t, ReduceOp op = ReduceOp::Sum) { all_reduce(t, op)->wait(); }
  void broadcast_sync(const Tensor& t, int root = 0) { broadcast(t, root)->wait(); }
  void barrier_sync() { barrier()->wait(); }
  // Sum/mean of one double over ranks (losses and counters for logging).
  double all_reduce_scalar(double value, ReduceOp op = ReduceOp::Sum);

  // Ends the whole job after a fatal error on this rank (MPI_Abort under MPI, so mpirun
  // stops every rank and names this one); in-process groups only mark the group broken.
  virtual void abort(int exit_code) {}

 protected:
  ProcessGroup(int rank, int size, ProcessGroupOptions options);
  // Argument checks shared by the backends; throw ValueError/ShapeError naming the collective.
  void check_tensor(const char* op, const Tensor& t) const;
  void check_all_gather(const Tensor& out, const Tensor& in) const;
  void check_reduce_scatter(const Tensor& out, const Tensor& in) const;
  void check_root(const char* op, int root) const;

  int rank_;
  int size_;
  ProcessGroupOptions options_;
};

// ---- backends ----

// `world` in-process ranks sharing one rendezvous; element r is rank r. Each rank is meant
// to be driven by its own thread (tests). A rank that stops calling collectives makes the
// others time out naming it.
std::vector<std::shared_ptr<ProcessGroup>> make_local_group(int world, ProcessGroupOptions options = {});

// The MPI world (MPI_COMM_WORLD); initializes MPI (MPI_THREAD_MULTIPLE) on first use and
// finalizes it at exit. Collectives run on a communication thread (so they progress while
// the caller computes), deterministic in rank order. Throws NotImplementedError when Strata
// was built without MPI.
std::shared_ptr<ProcessGroup> make_mpi_group(ProcessGroupOptions options = {});

// NCCL over the MPI world for CUDA tensors on cuda:`device` (the unique id is broadcast from
// rank 0 over MPI). Collectives are enqueued on a dedicated stream that waits for the compute
// stream; Work::wait() makes the compute stream wait for them. Throws NotImplementedError
// when Strata was built without NCCL (needs CUDA and MPI).
std::shared_ptr<ProcessGroup> make_nccl_group(int device, ProcessGroupOptions options = {});

bool mpi_available();   // built with MPI
bool nccl_available();  // built with NCCL

// Rank and world size the launcher put in the environment (Open MPI's OMPI_COMM_WORLD_RANK /
// _SIZE, then PMI_RANK / PMI_SIZE, then torchrun's RANK / WORLD_SIZE), {0, 1} when absent.
struct LaunchEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  bool launched() const { return world_size > 1; }
};
LaunchEnv launch_env();

}  // namespace strata::dist
