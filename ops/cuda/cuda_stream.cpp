// CudaStream (a cudaStream_t; host tasks run through cudaLaunchHostFunc) and CudaEvent.
#include <exception>
#include <functional>
#include <memory>
#include <mutex>

#include "ops/cuda/cuda_backend.h"
#include "ops/cuda/cuda_check.h"

namespace strata::gpu {

namespace {

// The first exception a stream's host tasks threw, rethrown by synchronize().
struct TaskErrors {
  std::mutex mu;
  std::exception_ptr first;
};

struct HostTask {
  std::function<void()> fn;
  std::shared_ptr<TaskErrors> errors;
};

void run_host_task(void* data) {
  std::unique_ptr<HostTask> task(static_cast<HostTask*>(data));
  try {
    task->fn();
  } catch (...) {
    std::lock_guard<std::mutex> lk(task->errors->mu);
    if (!task->errors->first) task->errors->first = std::current_exception();
  }
}

class CudaEvent;

// A blocking stream (cudaStreamCreate's default flags): it is ordered with the legacy default
// stream the backend's kernels run on, so work enqueued here sees every earlier kernel's
// results without extra events. Tasks run on CUDA's callback thread and, as CUDA requires
// of host functions, must not call CUDA themselves.
class CudaStream final : public Stream {
 public:
  explicit CudaStream(int device) : device_(device) {
    DeviceGuard guard(device);
    STRATA_CUDA_CHECK(cudaStreamCreate(&stream_), "create_stream on cuda:", device);
  }
  ~CudaStream() override {
    if (!stream_) return;
    int prev = -1;
    (void)cudaGetDevice(&prev);
    (void)cudaSetDevice(device_);
    (void)cudaStreamSynchronize(stream_);  // pending host tasks hold pointers into this stream's state
    (void)cudaStreamDestroy(stream_);
    if (prev >= 0) (void)cudaSetDevice(prev);
  }
  Device device() const override { return Device(DeviceType::CUDA, device_); }

  void enqueue(std::function<void()> task) override {
    auto* t = new HostTask{std::move(task), errors_};
    cudaError_t e = cudaLaunchHostFunc(stream_, run_host_task, t);
    if (e != cudaSuccess) {
      delete t;
      throw_cuda_error(e, "cudaLaunchHostFunc", detail::concat("Stream::enqueue on cuda:", device_));
    }
  }

  void synchronize() override {
    STRATA_CUDA_CHECK(cudaStreamSynchronize(stream_), "Stream::synchronize on cuda:", device_);
    std::exception_ptr e;
    {
      std::lock_guard<std::mutex> lk(errors_->mu);
      std::swap(e, errors_->first);
    }
    if (e) std::rethrow_exception(e);
  }

  void wait(Event& event) override;

  void* native_handle() const override { return stream_; }
  cudaStream_t stream() const { return stream_; }
  int device_index() const { return device_; }

 private:
  int device_;
  cudaStream_t stream_ = nullptr;
  std::shared_ptr<TaskErrors> errors_ = std::make_shared<TaskErrors>();
};

// The cudaEvent_t is created on first record(), on the recording stream's device (a CUDA
// event belongs to one device).
class CudaEvent final : public Event {
 public:
  ~CudaEvent() override {
    if (event_) (void)cudaEventDestroy(event_);
  }

  void record(Stream& s) override {
    auto* cs = dynamic_cast<CudaStream*>(&s);
    STRATA_CHECK(cs != nullptr, DeviceError, "CUDA event recorded on a ", s.device().str(), " stream");
    DeviceGuard guard(cs->device_index());
    if (event_ && device_ != cs->device_index()) {
      STRATA_CUDA_CHECK(cudaEventDestroy(event_), "Event::record");
      event_ = nullptr;
    }
    if (!event_) {
      STRATA_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming), "Event::record on cuda:",
                        cs->device_index());
      device_ = cs->device_index();
    }
    STRATA_CUDA_CHECK(cudaEventRecord(event_, cs->stream()), "Event::record on cuda:", device_);
  }

  bool query() const override {
    if (!event_) return true;
    cudaError_t e = cudaEventQuery(event_);
    if (e == cudaSuccess) return true;
    if (e == cudaErrorNotReady) {
      (void)cudaGetLastError();
      return false;
    }
    throw_cuda_error(e, "cudaEventQuery", detail::concat("Event::query on cuda:", device_));
  }

  void synchronize() override {
    if (event_) STRATA_CUDA_CHECK(cudaEventSynchronize(event_), "Event::synchronize on cuda:", device_);
  }

  cudaEvent_t event() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
  int device_ = -1;
};

void CudaStream::wait(Event& event) {
  auto* ce = dynamic_cast<CudaEvent*>(&event);
  STRATA_CHECK(ce != nullptr, DeviceError, "a CUDA stream cannot wait for a non-CUDA event");
  if (!ce->event()) return;  // never recorded: nothing to wait for
  STRATA_CUDA_CHECK(cudaStreamWaitEvent(stream_, ce->event(), 0), "Stream::wait on cuda:", device_);
}

}  // namespace

std::unique_ptr<Stream> CudaBackend::create_stream(int device_index) {
  context(device_index);
  return std::make_unique<CudaStream>(device_index);
}

std::unique_ptr<Event> CudaBackend::create_event() { return std::make_unique<CudaEvent>(); }

}  // namespace strata::gpu
