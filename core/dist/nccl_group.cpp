// The NCCL backend (CUDA tensors). The communicator is bootstrapped over MPI: rank 0 makes
// the unique id and broadcasts it through an MPI group. Collectives run on a dedicated
// non-blocking stream that first waits for the compute stream (the legacy default stream the
// CUDA backend uses), so they overlap with later compute; Work::wait() makes the compute
// stream wait for the collective (torch's ProcessGroupNCCL semantics) after polling its
// completion event against the group's timeout, aborting the communicator on expiry so a
// dead rank cannot hang the job.
#include "strata/config.h"
#include "strata/dist/process_group.h"

#if STRATA_HAVE_NCCL

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <cstring>
#include <sstream>
#include <thread>

#include "strata/core/factory.h"

namespace strata::dist {
namespace {

void cuda_check(cudaError_t rc, const std::string& what) {
  if (rc != cudaSuccess) throw CollectiveError(what + ": " + cudaGetErrorString(rc));
}
void nccl_check(ncclResult_t rc, const std::string& what) {
  if (rc != ncclSuccess) throw CollectiveError(what + ": " + ncclGetErrorString(rc));
}

ncclDataType_t nccl_type(DType d, const char* op) {
  switch (d) {
    case DType::f32: return ncclFloat32;
    case DType::f64: return ncclFloat64;
    case DType::f16: return ncclFloat16;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 10, 0)
    case DType::bf16: return ncclBfloat16;
#endif
    case DType::i32: return ncclInt32;
    case DType::i64: return ncclInt64;
    case DType::u8: return ncclUint8;
    default: throw NotImplementedError(std::string("nccl ") + op + ": unsupported dtype " + dtype_name(d));
  }
}

class NcclWork final : public Work {
 public:
  NcclWork(std::string description, cudaEvent_t done, ncclComm_t comm, std::chrono::milliseconds timeout, int rank)
      : description_(std::move(description)), done_(done), comm_(comm), timeout_(timeout), rank_(rank),
        started_(std::chrono::steady_clock::now()) {}
  ~NcclWork() override { cudaEventDestroy(done_); }
  void wait() override {
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    for (;;) {
      cudaError_t q = cudaEventQuery(done_);
      if (q == cudaSuccess) break;
      if (q != cudaErrorNotReady) cuda_check(q, description_ + " on rank " + std::to_string(rank_));
      ncclResult_t async_error = ncclSuccess;
      ncclCommGetAsyncError(comm_, &async_error);
      if (async_error != ncclSuccess)
        throw CollectiveError(description_ + " failed on rank " + std::to_string(rank_) + ": " +
                              ncclGetErrorString(async_error));
      if (std::chrono::steady_clock::now() >= deadline) {
        ncclCommAbort(comm_);
        throw CollectiveError(description_ + " timed out after " + std::to_string(timeout_.count()) + " ms on rank " +
                              std::to_string(rank_) + " (NCCL communicator aborted; a peer is dead or hung)");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    // Later compute-stream work sees the result.
    cuda_check(cudaStreamWaitEvent(nullptr, done_, 0), description_ + ": cudaStreamWaitEvent");
  }
  bool is_completed() const override { return cudaEventQuery(done_) == cudaSuccess; }
  std::string description() const override { return description_; }

 private:
  std::string description_;
  cudaEvent_t done_;
  ncclComm_t comm_;
  std::chrono::milliseconds timeout_;
  int rank_;
  std::chrono::steady_clock::time_point started_;
};

class NcclProcessGroup final : public ProcessGroup {
 public:
  NcclProcessGroup(int device, std::shared_ptr<ProcessGroup> bootstrap, ProcessGroupOptions options)
      : ProcessGroup(bootstrap->rank(), bootstrap->size(), options), device_(device), bootstrap_(std::move(bootstrap)) {
    cuda_check(cudaSetDevice(device_), "nccl: cudaSetDevice(" + std::to_string(device_) + ")");
    ncclUniqueId id;
    if (rank_ == 0) nccl_check(ncclGetUniqueId(&id), "nccl: ncclGetUniqueId");
    Tensor id_bytes = strata::zeros({int64_t(sizeof(id))}, DType::u8);
    if (rank_ == 0) std::memcpy(id_bytes.data_ptr(), &id, sizeof(id));
    bootstrap_->broadcast_sync(id_bytes, 0);
    std::memcpy(&id, id_bytes.data_ptr(), sizeof(id));
    nccl_check(ncclCommInitRank(&comm_, size_, id, rank_), "nccl: ncclCommInitRank (rank " + std::to_string(rank_) + ")");
    cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "nccl: cudaStreamCreateWithFlags");
  }
  ~NcclProcessGroup() override {
    if (stream_) cudaStreamSynchronize(stream_);
    if (comm_) ncclCommDestroy(comm_);
    if (stream_) cudaStreamDestroy(stream_);
  }
  const char* backend_name() const override { return "nccl"; }

  WorkPtr all_reduce(const Tensor& t, ReduceOp op) override {
    check_cuda("all_reduce", t);
    return launch(describe("all_reduce", t, reduce_op_name(op)), [&] {
      return ncclAllReduce(t.data_ptr(), t.data_ptr(), size_t(t.numel()), nccl_type(t.dtype(), "all_reduce"),
                           nccl_op(op), comm_, stream_);
    });
  }
  WorkPtr broadcast(const Tensor& t, int root) override {
    check_cuda("broadcast", t);
    check_root("broadcast", root);
    return launch(describe("broadcast", t, "root " + std::to_string(root)), [&] {
      return ncclBroadcast(t.data_ptr(), t.data_ptr(), size_t(t.numel()), nccl_type(t.dtype(), "broadcast"), root,
                           comm_, stream_);
    });
  }
  WorkPtr all_gather(const Tensor& out, const Tensor& in) override {
    check_all_gather(out, in);
    check_cuda("all_gather", in);
    return launch(describe("all_gather", in, ""), [&] {
      return ncclAllGather(in.data_ptr(), out.data_ptr(), size_t(in.numel()), nccl_type(in.dtype(), "all_gather"),
                           comm_, stream_);
    });
  }
  WorkPtr reduce_scatter(const Tensor& out, const Tensor& in, ReduceOp op) override {
    check_reduce_scatter(out, in);
    check_cuda("reduce_scatter", in);
    return launch(describe("reduce_scatter", in, reduce_op_name(op)), [&] {
      return ncclReduceScatter(in.data_ptr(), out.data_ptr(), size_t(out.numel()),
                               nccl_type(in.dtype(), "reduce_scatter"), nccl_op(op), comm_, stream_);
    });
  }
  WorkPtr barrier() override {
    if (!barrier_buf_.defined()) barrier_buf_ = strata::zeros({1}, TensorOptions(DType::f32).device(Device(DeviceType::CUDA, device_)));
    return all_reduce(barrier_buf_, ReduceOp::Sum);
  }
  void abort(int exit_code) override {
    if (comm_) ncclCommAbort(comm_);
    comm_ = nullptr;
    bootstrap_->abort(exit_code);
  }

 private:
  ncclRedOp_t nccl_op(ReduceOp op) const {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 10, 0)
    return op == ReduceOp::Avg ? ncclAvg : ncclSum;
#else
    STRATA_CHECK(op == ReduceOp::Sum, NotImplementedError, "nccl: ReduceOp::Avg needs NCCL >= 2.10");
    return ncclSum;
#endif
  }
  void check_cuda(const char* op, const Tensor& t) const {
    check_tensor(op, t);
    STRATA_CHECK(t.device().type == DeviceType::CUDA && t.device().index == device_, DeviceError, "nccl ", op,
                 ": tensor ", t.str(), " must be on cuda:", device_);
  }
  std::string describe(const char* op, const Tensor& t, const std::string& extra) {
    std::ostringstream d;
    d << op << " #" << ++seq_ << " (" << dtype_name(t.dtype()) << "[" << t.numel() << "]"
      << (extra.empty() ? "" : ", " + extra) << ")";
    return d.str();
  }
  template <class Enqueue>
  WorkPtr launch(const std::string& desc, Enqueue&& enqueue) {
    STRATA_CHECK(comm_ != nullptr, CollectiveError, desc, " on rank ", rank_, ": the NCCL communicator was aborted");
    cuda_check(cudaSetDevice(device_), desc + ": cudaSetDevice");
    cudaEvent_t ready = nullptr, done = nullptr;
    cuda_check(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming), desc + ": cudaEventCreate");
    cuda_check(cudaEventRecord(ready, nullptr), desc + ": cudaEventRecord");  // after the compute so far
    cuda_check(cudaStreamWaitEvent(stream_, ready, 0), desc + ": cudaStreamWaitEvent");
    cudaEventDestroy(ready);
    nccl_check(enqueue(), desc + " on rank " + std::to_string(rank_));
    cuda_check(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), desc + ": cudaEventCreate");
    cuda_check(cudaEventRecord(done, stream_), desc + ": cudaEventRecord");
    return std::make_shared<NcclWork>(desc, done, comm_, options_.timeout, rank_);
  }

  int device_;
  std::shared_ptr<ProcessGroup> bootstrap_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  uint64_t seq_ = 0;
  Tensor barrier_buf_;
};

}  // namespace

std::shared_ptr<ProcessGroup> make_nccl_group(int device, ProcessGroupOptions options) {
  return std::make_shared<NcclProcessGroup>(device, make_mpi_group(options), options);
}

bool nccl_available() { return true; }

}  // namespace strata::dist

#else  // !STRATA_HAVE_NCCL

namespace strata::dist {
std::shared_ptr<ProcessGroup> make_nccl_group(int, ProcessGroupOptions) {
  throw NotImplementedError(
      "make_nccl_group: Strata was built without NCCL (needs CUDA, MPI and NCCL: -DSTRATA_WITH_CUDA=ON "
      "-DSTRATA_WITH_MPI=ON)");
}
bool nccl_available() { return false; }
}  // namespace strata::dist

#endif
