// The MPI backend (CPU tensors). One communication thread per group makes every MPI call
// (MPI_THREAD_MULTIPLE is requested so the main thread may still MPI_Abort): nonblocking
// collectives polled with MPI_Test until done or until the group's timeout. Reductions are
// an all-to-all (rank i receives chunk i of everyone's buffer), a local sum in rank order,
// then an all-gather of the reduced chunks: as much traffic as a ring all-reduce, and the
// same bits on every rank and every run whatever algorithm Open MPI picks.
//
// When a collective times out, the rank asks every peer over a control communicator where
// it is; peers answer from their polling loops (busy or idle), so the error can say which
// rank is dead or hung and which is merely waiting.
#include "strata/config.h"
#include "strata/dist/process_group.h"

#if STRATA_HAVE_MPI

#include <mpi.h>

#include <array>
#include <atomic>
#include <cstring>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "core/dist/comm_worker.h"
#include "core/dist/reduce_in_rank_order.h"

namespace strata::dist {
namespace {

constexpr int kProbeTag = 7001;  // payload: asker's collective sequence number
constexpr int kReplyTag = 7002;  // payload: {current collective (0 if idle), last completed}
constexpr auto kSpinFor = std::chrono::milliseconds(20);  // polling without sleeping, per request

// MPI is initialized once per process (hardware-like process-wide state) and finalized when
// the last group using it goes away; it cannot be initialized again after that.
class MpiRuntime {
 public:
  static std::shared_ptr<MpiRuntime> acquire() {
    static std::mutex mu;
    static std::weak_ptr<MpiRuntime> current;
    static bool finalized_by_us = false;
    std::lock_guard<std::mutex> lock(mu);
    if (auto rt = current.lock()) return rt;
    STRATA_CHECK(!finalized_by_us, CollectiveError,
                 "make_mpi_group: MPI was already finalized (when the last MPI group was destroyed)");
    auto rt = std::shared_ptr<MpiRuntime>(new MpiRuntime(), [](MpiRuntime* p) {
      delete p;
      finalized_by_us = true;
    });
    current = rt;
    return rt;
  }
  ~MpiRuntime() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owns_ && !finalized) MPI_Finalize();
  }

 private:
  MpiRuntime() {
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) {
      int provided = 0;
      STRATA_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) == MPI_SUCCESS, CollectiveError,
                   "make_mpi_group: MPI_Init_thread failed");
      owns_ = true;
      STRATA_CHECK(provided >= MPI_THREAD_SERIALIZED, CollectiveError,
                   "make_mpi_group: the MPI library provides thread level ", provided,
                   "; Strata's communication thread needs MPI_THREAD_SERIALIZED or better");
    }
  }
  bool owns_ = false;
};

MPI_Datatype mpi_type(DType d) {
  switch (d) {
    case DType::f32: return MPI_FLOAT;
    case DType::f64: return MPI_DOUBLE;
    default: return MPI_BYTE;
  }
}

class MpiProcessGroup final : public ProcessGroup {
 public:
  MpiProcessGroup(std::shared_ptr<MpiRuntime> rt, int rank, int size, MPI_Comm comm, MPI_Comm ctrl,
                  ProcessGroupOptions options)
      : ProcessGroup(rank, size, options), rt_(std::move(rt)), comm_(comm), ctrl_(ctrl),
        worker_(std::make_unique<detail::CommWorker>([this] { answer_probes(); })) {}

  ~MpiProcessGroup() override {
    worker_.reset();  // joins the communication thread: no MPI call runs after this
    if (!aborted_) {
      MPI_Comm_free(&comm_);
      MPI_Comm_free(&ctrl_);
    }
  }

  const char* backend_name() const override { return "mpi"; }

  WorkPtr all_reduce(const Tensor& t, ReduceOp op) override {
    check_cpu_float("all_reduce", t);
    return submit("all_reduce", t, op, -1, [=, this](const std::string& d, uint64_t s) { run_reduce(d, s, t, t, op, true); });
  }
  WorkPtr broadcast(const Tensor& t, int root) override {
    check_cpu("broadcast", t);
    check_root("broadcast", root);
    return submit("broadcast", t, ReduceOp::Sum, root, [=, this](const std::string& d, uint64_t s) {
      MPI_Request req;
      check(MPI_Ibcast(t.data_ptr(), count_of(t), mpi_type(t.dtype()), root, comm_, &req), d);
      wait_request(req, d, s);
      t.bump_version();
    });
  }
  WorkPtr all_gather(const Tensor& out, const Tensor& in) override {
    check_all_gather(out, in);
    check_cpu("all_gather", in);
    return submit("all_gather", in, ReduceOp::Sum, -1, [=, this](const std::string& d, uint64_t s) {
      MPI_Request req;
      check(MPI_Iallgather(in.data_ptr(), count_of(in), mpi_type(in.dtype()), out.data_ptr(), count_of(in),
                           mpi_type(in.dtype()), comm_, &req),
            d);
      wait_request(req, d, s);
      out.bump_version();
    });
  }
  WorkPtr reduce_scatter(const Tensor& out, const Tensor& in, ReduceOp op) override {
    check_reduce_scatter(out, in);
    check_cpu_float("reduce_scatter", in);
    return submit("reduce_scatter", in, op, -1,
                  [=, this](const std::string& d, uint64_t s) { run_reduce(d, s, out, in, op, false); });
  }
  WorkPtr barrier() override {
    return submit("barrier", Tensor(), ReduceOp::Sum, -1, [this](const std::string& d, uint64_t s) {
      MPI_Request req;
      check(MPI_Ibarrier(comm_, &req), d);
      wait_request(req, d, s);
    });
  }

  void abort(int exit_code) override {
    aborted_ = true;
    worker_->mark_broken("rank " + std::to_string(rank_) + " aborted");
    MPI_Abort(MPI_COMM_WORLD, exit_code);
  }

 private:
  void check_cpu(const char* op, const Tensor& t) const {
    check_tensor(op, t);
    STRATA_CHECK(
        t.device().is_host_memory(), DeviceError, "mpi ", op, ": tensor ", t.str(),
        " must be in host memory, on the CPU or a sim device (CUDA tensors go through the NCCL group)");
    STRATA_CHECK(t.nbytes() / (t.dtype() == DType::f32 || t.dtype() == DType::f64 ? t.element_size() : 1) < size_t(1) << 31,
                 NotImplementedError, "mpi ", op, ": tensor ", t.str(), " has more than 2^31 elements");
  }
  void check_cpu_float(const char* op, const Tensor& t) const {
    check_cpu(op, t);
    STRATA_CHECK(t.dtype() == DType::f32 || t.dtype() == DType::f64, NotImplementedError, "mpi ", op, ": ",
                 t.str(), ": only f32 and f64 reductions are implemented");
  }
  static int count_of(const Tensor& t) {
    return int(t.dtype() == DType::f32 || t.dtype() == DType::f64 ? t.numel() : int64_t(t.nbytes()));
  }
  void check(int rc, const std::string& desc) {
    if (rc == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    throw CollectiveError(desc + " failed on rank " + std::to_string(rank_) + ": " + std::string(text, size_t(len)));
  }

  WorkPtr submit(const char* op_name, const Tensor& t, ReduceOp op, int root,
                 std::function<void(const std::string&, uint64_t)> body) {
    const uint64_t seq = ++submitted_;
    std::ostringstream d;
    d << op_name << " #" << seq;
    if (t.defined()) {
      d << " (" << dtype_name(t.dtype()) << "[" << t.numel() << "]";
      if (std::strcmp(op_name, "all_reduce") == 0 || std::strcmp(op_name, "reduce_scatter") == 0)
        d << ", " << reduce_op_name(op);
      if (root >= 0) d << ", root " << root;
      d << ")";
    }
    std::string desc = d.str();
    return worker_->submit(desc, [this, desc, seq, body = std::move(body)] {
      current_.store(seq);
      try {
        body(desc, seq);
      } catch (...) {
        current_.store(0);
        throw;
      }
      current_.store(0);
      completed_.store(seq);
    });
  }

  // all_reduce (out == in, `all`) or reduce_scatter (out = this rank's chunk).
  void run_reduce(const std::string& desc, uint64_t seq, const Tensor& out, const Tensor& in, ReduceOp op, bool all) {
    const int W = size_;
    const size_t es = in.element_size();
    const int64_t n = in.numel();
    const int64_t c = all ? (n + W - 1) / W : out.numel();  // chunk per rank
    if (W == 1) {
      if (!all) std::memcpy(out.data_ptr(), in.data_ptr(), out.nbytes());
      return;  // sum or mean of one contribution
    }
    const size_t chunk_bytes = size_t(c) * es;
    // The send side of the all-to-all must hold W chunks of c; pad when n is not a multiple.
    const char* send = static_cast<const char*>(in.data_ptr());
    if (all && n != c * W) {
      send_buf_.assign(chunk_bytes * size_t(W), 0);
      std::memcpy(send_buf_.data(), in.data_ptr(), in.nbytes());
      send = send_buf_.data();
    }
    recv_buf_.resize(chunk_bytes * size_t(W));
    MPI_Request req;
    check(MPI_Ialltoall(send, int(c), mpi_type(in.dtype()), recv_buf_.data(), int(c), mpi_type(in.dtype()), comm_, &req),
          desc);
    wait_request(req, desc, seq);
    std::vector<const void*> chunks(static_cast<size_t>(W));
    for (int i = 0; i < W; ++i) chunks[size_t(i)] = recv_buf_.data() + size_t(i) * chunk_bytes;
    if (!all) {
      detail::reduce_in_rank_order(in.dtype(), out.data_ptr(), chunks.data(), W, c, op, "mpi reduce_scatter");
      out.bump_version();
      return;
    }
    mine_buf_.resize(chunk_bytes);
    detail::reduce_in_rank_order(in.dtype(), mine_buf_.data(), chunks.data(), W, c, op, "mpi all_reduce");
    char* gathered = static_cast<char*>(out.data_ptr());
    if (n != c * W) {
      send_buf_.resize(chunk_bytes * size_t(W));
      gathered = send_buf_.data();
    }
    check(MPI_Iallgather(mine_buf_.data(), int(c), mpi_type(in.dtype()), gathered, int(c), mpi_type(in.dtype()), comm_,
                         &req),
          desc);
    wait_request(req, desc, seq);
    if (gathered != out.data_ptr()) std::memcpy(out.data_ptr(), gathered, out.nbytes());
    out.bump_version();
  }

  // Polls `req` until it completes; on timeout, asks the peers where they are and throws.
  void wait_request(MPI_Request& req, const std::string& desc, uint64_t seq) {
    const auto start = std::chrono::steady_clock::now();
    const auto deadline = start + options_.timeout;
    int spins = 0;
    for (;;) {
      int done = 0;
      check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), desc);
      if (done) return;
      answer_probes();
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) throw CollectiveError(diagnose(desc, seq));
      // Shared-memory transfers move in fragments, each needing an MPI_Test on both sides, so
      // a transfer in progress is polled with yields (a sleep per fragment made a 13 MB
      // all-reduce ~10x slower). A wait that lasts (a peer still computing) backs off to
      // sleeps so the communication thread does not take a core from the compute threads.
      if (now - start < kSpinFor)
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(++spins > 1000 ? 500 : 50));
    }
  }

  // Answers "where are you?" from peers: {collective in progress (0 = idle), last completed}.
  void answer_probes() {
    for (;;) {
      int flag = 0;
      MPI_Status st;
      if (MPI_Iprobe(MPI_ANY_SOURCE, kProbeTag, ctrl_, &flag, &st) != MPI_SUCCESS || !flag) return;
      uint64_t asked = 0;
      MPI_Recv(&asked, 1, MPI_UINT64_T, st.MPI_SOURCE, kProbeTag, ctrl_, MPI_STATUS_IGNORE);
      uint64_t reply[2] = {current_.load(), completed_.load()};
      MPI_Send(reply, 2, MPI_UINT64_T, st.MPI_SOURCE, kReplyTag, ctrl_);
    }
  }

  std::string diagnose(const std::string& desc, uint64_t seq) {
    std::ostringstream msg;
    msg << desc << " timed out after " << options_.timeout.count() << " ms on rank " << rank_ << " of " << size_ << ":";
    const int W = size_;
    std::vector<MPI_Request> sends(size_t(W), MPI_REQUEST_NULL), recvs(size_t(W), MPI_REQUEST_NULL);
    std::vector<std::array<uint64_t, 2>> replies(static_cast<size_t>(W));
    uint64_t asked = seq;
    for (int p = 0; p < W; ++p) {
      if (p == rank_) continue;
      MPI_Irecv(replies[size_t(p)].data(), 2, MPI_UINT64_T, p, kReplyTag, ctrl_, &recvs[size_t(p)]);
      MPI_Isend(&asked, 1, MPI_UINT64_T, p, kProbeTag, ctrl_, &sends[size_t(p)]);
    }
    const auto grace = std::min<std::chrono::milliseconds>(options_.timeout, std::chrono::milliseconds(1000));
    const auto until = std::chrono::steady_clock::now() + grace;
    std::vector<bool> answered(size_t(W), false);
    for (;;) {
      bool all = true;
      for (int p = 0; p < W; ++p) {
        if (p == rank_ || answered[size_t(p)]) continue;
        int flag = 0;
        if (MPI_Test(&recvs[size_t(p)], &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && flag) answered[size_t(p)] = true;
        else all = false;
      }
      answer_probes();
      if (all || std::chrono::steady_clock::now() >= until) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    bool named = false;
    for (int p = 0; p < W; ++p) {
      if (p == rank_) continue;
      if (!answered[size_t(p)]) {
        msg << " rank " << p << " is not responding (dead, or hung outside Strata's communication thread);";
        named = true;
        MPI_Cancel(&recvs[size_t(p)]);
        MPI_Request_free(&recvs[size_t(p)]);
      } else if (replies[size_t(p)][0] != seq) {
        const uint64_t cur = replies[size_t(p)][0], last = replies[size_t(p)][1];
        msg << " rank " << p << " is alive but has not reached it ("
            << (cur ? "it is in collective #" + std::to_string(cur) : "idle after collective #" + std::to_string(last))
            << ");";
        named = true;
      }
      if (sends[size_t(p)] != MPI_REQUEST_NULL) MPI_Request_free(&sends[size_t(p)]);
    }
    if (!named) msg << " every rank is waiting in it (a slow network or a too short --collective-timeout);";
    return msg.str();
  }

  std::shared_ptr<MpiRuntime> rt_;
  MPI_Comm comm_, ctrl_;
  uint64_t submitted_ = 0;
  std::atomic<uint64_t> current_{0}, completed_{0};
  std::vector<char> send_buf_, recv_buf_, mine_buf_;  // communication thread only
  bool aborted_ = false;
  std::unique_ptr<detail::CommWorker> worker_;
};

}  // namespace

std::shared_ptr<ProcessGroup> make_mpi_group(ProcessGroupOptions options) {
  auto rt = MpiRuntime::acquire();
  MPI_Comm comm, ctrl;
  STRATA_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &comm) == MPI_SUCCESS && MPI_Comm_dup(MPI_COMM_WORLD, &ctrl) == MPI_SUCCESS,
               CollectiveError, "make_mpi_group: MPI_Comm_dup failed");
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(ctrl, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  return std::make_shared<MpiProcessGroup>(std::move(rt), rank, size, comm, ctrl, options);
}

bool mpi_available() { return true; }

}  // namespace strata::dist

#else  // !STRATA_HAVE_MPI

namespace strata::dist {
std::shared_ptr<ProcessGroup> make_mpi_group(ProcessGroupOptions) {
  throw NotImplementedError("make_mpi_group: Strata was built without MPI (configure with -DSTRATA_WITH_MPI=ON)");
}
bool mpi_available() { return false; }
}  // namespace strata::dist

#endif
