// The in-process backend: ranks are threads of one process meeting at a shared Rendezvous.
// Each collective is two barriers: arrive (every rank has deposited a copy of its input), then
// depart (every rank has read what it needs), so a rank cannot overwrite its slot while a
// slower rank still reads it. Both barriers time out naming the ranks that are missing.
#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <sstream>

#include "core/dist/comm_worker.h"
#include "core/dist/reduce_in_rank_order.h"
#include "strata/dist/process_group.h"

namespace strata::dist {
namespace {

enum class Kind { AllReduce, Broadcast, AllGather, ReduceScatter, Barrier };
const char* kind_name(Kind k) {
  switch (k) {
    case Kind::AllReduce: return "all_reduce";
    case Kind::Broadcast: return "broadcast";
    case Kind::AllGather: return "all_gather";
    case Kind::ReduceScatter: return "reduce_scatter";
    case Kind::Barrier: return "barrier";
  }
  return "?";
}

struct Rendezvous {
  explicit Rendezvous(int world) : world(world), arrived(size_t(world), 0), departed(size_t(world), 0), slots(size_t(world)) {}
  struct Slot {
    Kind kind = Kind::Barrier;
    DType dtype = DType::f32;
    int64_t numel = 0;
    int root = 0;
    std::vector<char> data;  // a copy of this rank's input
  };
  int world;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<uint64_t> arrived, departed;  // per rank: the last collective entered / left
  std::vector<Slot> slots;
  std::string broken;  // the first failure, seen by every rank
};

class LocalProcessGroup final : public ProcessGroup {
 public:
  LocalProcessGroup(int rank, std::shared_ptr<Rendezvous> rv, ProcessGroupOptions options)
      : ProcessGroup(rank, rv->world, options), rv_(std::move(rv)) {}

  const char* backend_name() const override { return "local"; }

  WorkPtr all_reduce(const Tensor& t, ReduceOp op) override {
    check_cpu("all_reduce", t);
    return submit(Kind::AllReduce, t, t, 0, op);
  }
  WorkPtr broadcast(const Tensor& t, int root) override {
    check_cpu("broadcast", t);
    check_root("broadcast", root);
    return submit(Kind::Broadcast, t, t, root, ReduceOp::Sum);
  }
  WorkPtr all_gather(const Tensor& out, const Tensor& in) override {
    check_all_gather(out, in);
    check_cpu("all_gather", in);
    return submit(Kind::AllGather, out, in, 0, ReduceOp::Sum);
  }
  WorkPtr reduce_scatter(const Tensor& out, const Tensor& in, ReduceOp op) override {
    check_reduce_scatter(out, in);
    check_cpu("reduce_scatter", in);
    return submit(Kind::ReduceScatter, out, in, 0, op);
  }
  WorkPtr barrier() override { return submit(Kind::Barrier, Tensor(), Tensor(), 0, ReduceOp::Sum); }

  void abort(int exit_code) override {
    std::lock_guard<std::mutex> lock(rv_->mu);
    if (rv_->broken.empty()) rv_->broken = "rank " + std::to_string(rank_) + " aborted (exit code " +
                                           std::to_string(exit_code) + ")";
    rv_->cv.notify_all();
  }

 private:
  void check_cpu(const char* op, const Tensor& t) const {
    check_tensor(op, t);
    STRATA_CHECK(t.device().is_host_memory(), DeviceError, "local ", op, ": tensor ", t.str(),
                 " must be in host memory (the CPU or a sim device)");
  }

  WorkPtr submit(Kind kind, const Tensor& out, const Tensor& in, int root, ReduceOp op) {
    const uint64_t seq = ++seq_;
    std::ostringstream d;
    d << kind_name(kind) << " #" << seq;
    if (in.defined()) d << " (" << dtype_name(in.dtype()) << "[" << in.numel() << "]";
    if (kind == Kind::AllReduce || kind == Kind::ReduceScatter) d << ", " << reduce_op_name(op);
    if (kind == Kind::Broadcast) d << ", root " << root;
    if (in.defined()) d << ")";
    std::string desc = d.str();
    return worker_.submit(desc, [=, this] { run(desc, seq, kind, out, in, root, op); });
  }

  // Waits until every rank's counter in `counters` reached `seq`; throws naming the laggards.
  void await_all(std::unique_lock<std::mutex>& lock, const std::vector<uint64_t>& counters, uint64_t seq,
                 const std::string& desc, const char* phase) {
    const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
    auto all_there = [&] {
      return !rv_->broken.empty() || std::all_of(counters.begin(), counters.end(), [&](uint64_t c) { return c >= seq; });
    };
    if (!rv_->cv.wait_until(lock, deadline, all_there)) {
      std::ostringstream msg;
      msg << desc << " timed out after " << options_.timeout.count() << " ms on rank " << rank_ << " of " << size_ << ":";
      for (int i = 0; i < size_; ++i)
        if (counters[size_t(i)] < seq)
          msg << " rank " << i << " did not " << phase << " it (its last collective: #" << rv_->arrived[size_t(i)] << ");";
      rv_->broken = msg.str();
      rv_->cv.notify_all();
      throw CollectiveError(msg.str());
    }
    if (!rv_->broken.empty()) throw CollectiveError(desc + " failed on rank " + std::to_string(rank_) + ": " + rv_->broken);
  }

  void run(const std::string& desc, uint64_t seq, Kind kind, const Tensor& out, const Tensor& in, int root, ReduceOp op) {
    std::unique_lock<std::mutex> lock(rv_->mu);
    if (!rv_->broken.empty()) throw CollectiveError(desc + " failed on rank " + std::to_string(rank_) + ": " + rv_->broken);
    Rendezvous::Slot& mine = rv_->slots[size_t(rank_)];
    mine.kind = kind;
    mine.root = root;
    mine.dtype = in.defined() ? in.dtype() : DType::f32;
    mine.numel = in.defined() ? in.numel() : 0;
    mine.data.resize(in.defined() ? in.nbytes() : 0);
    if (in.defined() && in.nbytes() > 0) std::memcpy(mine.data.data(), in.data_ptr(), in.nbytes());
    rv_->arrived[size_t(rank_)] = seq;
    rv_->cv.notify_all();
    await_all(lock, rv_->arrived, seq, desc, "reach");
    for (int i = 0; i < size_; ++i) {
      const Rendezvous::Slot& s = rv_->slots[size_t(i)];
      if (s.kind != kind || s.dtype != mine.dtype || s.numel != mine.numel || s.root != root) {
        std::ostringstream msg;
        msg << desc << " on rank " << rank_ << " does not match rank " << i << "'s collective #" << seq << " ("
            << kind_name(s.kind) << " of " << dtype_name(s.dtype) << "[" << s.numel << "], root " << s.root
            << "): every rank must call the same collectives in the same order";
        rv_->broken = msg.str();
        rv_->cv.notify_all();
        throw CollectiveError(msg.str());
      }
    }
    lock.unlock();

    // Slots are read-only until every rank departs.
    std::vector<const void*> chunks(static_cast<size_t>(size_));
    switch (kind) {
      case Kind::AllReduce:
        for (int i = 0; i < size_; ++i) chunks[size_t(i)] = rv_->slots[size_t(i)].data.data();
        detail::reduce_in_rank_order(in.dtype(), out.data_ptr(), chunks.data(), size_, in.numel(), op, "local all_reduce");
        break;
      case Kind::Broadcast:
        if (rank_ != root) std::memcpy(out.data_ptr(), rv_->slots[size_t(root)].data.data(), out.nbytes());
        break;
      case Kind::AllGather:
        for (int i = 0; i < size_; ++i)
          std::memcpy(static_cast<char*>(out.data_ptr()) + size_t(i) * in.nbytes(), rv_->slots[size_t(i)].data.data(),
                      in.nbytes());
        break;
      case Kind::ReduceScatter:
        for (int i = 0; i < size_; ++i)
          chunks[size_t(i)] = rv_->slots[size_t(i)].data.data() + size_t(rank_) * out.nbytes();
        detail::reduce_in_rank_order(in.dtype(), out.data_ptr(), chunks.data(), size_, out.numel(), op,
                                     "local reduce_scatter");
        break;
      case Kind::Barrier:
        break;
    }
    if (out.defined()) out.bump_version();

    lock.lock();
    rv_->departed[size_t(rank_)] = seq;
    rv_->cv.notify_all();
    await_all(lock, rv_->departed, seq, desc, "finish");
  }

  std::shared_ptr<Rendezvous> rv_;
  uint64_t seq_ = 0;
  detail::CommWorker worker_;  // last: joins before the members above go away
};

}  // namespace

std::vector<std::shared_ptr<ProcessGroup>> make_local_group(int world, ProcessGroupOptions options) {
  STRATA_CHECK(world > 0, ValueError, "make_local_group: world size must be positive, got ", world);
  auto rv = std::make_shared<Rendezvous>(world);
  std::vector<std::shared_ptr<ProcessGroup>> out;
  for (int r = 0; r < world; ++r) out.push_back(std::make_shared<LocalProcessGroup>(r, rv, options));
  return out;
}

}  // namespace strata::dist
