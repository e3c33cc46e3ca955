// The tensor cache's raw transfers on CUDA: page-locking the host pool and staging buffers once,
// and device <-> host copies on a non-blocking copy stream per device, ordered against the
// compute stream (the legacy default stream) only through events.
#include <cuda_runtime_api.h>

#include <mutex>
#include <vector>

#include "ops/cuda/cuda_backend.h"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_crc32c.h"
#include "strata/core/crc32c.h"

namespace strata::gpu {

namespace {

// An event created already recorded on a stream (the transfers' own: no lazy device choice).
class TransferEvent final : public Event {
 public:
  TransferEvent(int device, cudaStream_t stream) : device_(device) {
    STRATA_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming), "transfer event on cuda:",
                      device);
    cudaError_t e = cudaEventRecord(event_, stream);
    if (e != cudaSuccess) {
      (void)cudaEventDestroy(event_);
      throw_cuda_error(e, "cudaEventRecord", detail::concat("transfer event on cuda:", device));
    }
  }
  ~TransferEvent() override { (void)cudaEventDestroy(event_); }
  void record(Stream&) override {
    throw DeviceError("a transfer event is recorded once, when the transfer is issued");
  }
  bool query() const override {
    cudaError_t e = cudaEventQuery(event_);
    if (e == cudaSuccess) return true;
    if (e == cudaErrorNotReady) {
      (void)cudaGetLastError();
      return false;
    }
    throw_cuda_error(e, "cudaEventQuery", detail::concat("transfer on cuda:", device_));
  }
  void synchronize() override {
    STRATA_CUDA_CHECK(cudaEventSynchronize(event_), "waiting for a transfer on cuda:", device_);
  }
  cudaEvent_t event() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
  int device_;
};

// The copy stream of a device, created on first use (non-blocking: it does not serialize with
// the legacy default stream the kernels run on).
cudaStream_t copy_stream(DeviceContext& ctx) {
  std::lock_guard<std::mutex> lk(ctx.mu);
  if (!ctx.copy_stream) {
    DeviceGuard guard(ctx.index);
    STRATA_CUDA_CHECK(cudaStreamCreateWithFlags(&ctx.copy_stream, cudaStreamNonBlocking),
                      "creating the copy stream of cuda:", ctx.index);
  }
  return ctx.copy_stream;
}

}  // namespace

void CudaBackend::register_host_memory(void* host, size_t bytes) {
  if (device_count() == 0 || bytes == 0) return;  // nothing to copy to: plain memory will do
  STRATA_CUDA_CHECK(cudaHostRegister(host, bytes, cudaHostRegisterPortable),
                    "page-locking ", bytes, " bytes of host memory for transfers");
}

void CudaBackend::unregister_host_memory(void* host) {
  if (device_count() == 0) return;
  cudaError_t e = cudaHostUnregister(host);
  if (e != cudaSuccess) (void)cudaGetLastError();  // never registered (no device then): fine
}

std::unique_ptr<Event> CudaBackend::record_compute(int device_index) {
  DeviceContext& ctx = context(device_index);
  DeviceGuard guard(ctx.index);
  return std::make_unique<TransferEvent>(ctx.index, compute_stream());
}

std::unique_ptr<Event> CudaBackend::copy_bytes_async(void* dst, const void* src, size_t bytes, int device_index,
                                                     Event* after) {
  DeviceContext& ctx = context(device_index);
  cudaStream_t stream = copy_stream(ctx);
  DeviceGuard guard(ctx.index);
  if (after) {
    auto* te = dynamic_cast<TransferEvent*>(after);
    if (te) {
      STRATA_CUDA_CHECK(cudaStreamWaitEvent(stream, te->event(), 0), "ordering a transfer on cuda:", ctx.index);
    } else {
      after->synchronize();  // some other kind of event: wait on the host
    }
  }
  STRATA_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream), "copying ", bytes,
                    " bytes between host and cuda:", ctx.index, " (tensor cache)");
  return std::make_unique<TransferEvent>(ctx.index, stream);
}

uint32_t CudaBackend::crc32c_of(const void* ptr, size_t bytes, int device_index) {
  if (bytes == 0) return 0;
  DeviceContext& ctx = context(device_index);
  cudaStream_t stream = copy_stream(ctx);  // after the transfers that filled `ptr`
  DeviceGuard guard(ctx.index);
  const uint64_t segments = (uint64_t(bytes) + kCrcSegmentBytes - 1) / kCrcSegmentBytes;
  void* scratch = nullptr;
  STRATA_CUDA_CHECK(cudaMallocAsync(&scratch, segments * sizeof(uint32_t), stream), "CRC-32C scratch for ", bytes,
                    " bytes on cuda:", ctx.index);
  std::vector<uint32_t> crcs(segments);
  cudaError_t e = cudaSuccess;
  try {
    launch_crc32c_segments(ptr, bytes, static_cast<uint32_t*>(scratch), stream);
    e = cudaMemcpyAsync(crcs.data(), scratch, segments * sizeof(uint32_t), cudaMemcpyDeviceToHost, stream);
  } catch (...) {
    (void)cudaFreeAsync(scratch, stream);
    throw;
  }
  (void)cudaFreeAsync(scratch, stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
  if (e != cudaSuccess)
    throw_cuda_error(e, "cudaMemcpyAsync", detail::concat("CRC-32C of ", bytes, " bytes on cuda:", ctx.index));
  return crc32c_from_segments(crcs.data(), kCrcSegmentBytes, bytes);
}

}  // namespace strata::gpu
