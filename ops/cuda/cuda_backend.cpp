// CudaBackend: device discovery, per-device contexts, allocators, synchronization, and the
// factory ops/dispatch.cpp registers.
#include "ops/cuda/cuda_backend.h"

#include <algorithm>

#include "ops/common/cuda_arch.h"
#include "ops/cuda/cuda_check.h"

namespace strata::gpu {

CudaBackend::CudaBackend() = default;

CudaBackend::~CudaBackend() {
  // The registered backend is never destroyed (the registry is leaked); this runs for
  // backends made by hand, e.g. in tests. Errors are ignored: nothing can be done about them.
  for (auto& ctx : contexts_) {
    if (!ctx) continue;
    if (ctx->lt) (void)cublasLtDestroy(ctx->lt);
    if (ctx->blas) (void)cublasDestroy_v2(ctx->blas);
    if (ctx->workspace) ctx->allocator.deallocate(ctx->workspace, ctx->workspace_bytes, MemoryCategory::Temporary);
  }
}

void CudaBackend::init_devices() const {
  std::call_once(devices_once_, [this] {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      device_error_ = detail::concat("cudaGetDeviceCount: ", cudaGetErrorString(e), " (", cudaGetErrorName(e), ")");
      n = 0;
    } else if (n == 0) {
      device_error_ = "cudaGetDeviceCount reports no devices";
    }
    device_count_ = n;
    contexts_.resize(size_t(n));
    arch_errors_.resize(size_t(n));
    for (int i = 0; i < n; ++i) {
      contexts_[size_t(i)] = std::make_unique<DeviceContext>(i);
      int major = 0, minor = 0;
      if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, i) != cudaSuccess ||
          cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, i) != cudaSuccess) {
        (void)cudaGetLastError();
        continue;  // the first real call reports the device's own error
      }
      if (!common::cuda_archs_run_on(STRATA_CUDA_ARCHS, major, minor)) {
        std::string archs = STRATA_CUDA_ARCHS;
        std::replace(archs.begin(), archs.end(), ',', ';');
        cudaDeviceProp prop{};
        const bool named = cudaGetDeviceProperties(&prop, i) == cudaSuccess;
        arch_errors_[size_t(i)] = detail::concat(
            "cuda:", i, named ? detail::concat(" (", prop.name, ")") : std::string(),
            " has compute capability ", major, ".", minor,
            ", but this build holds CUDA code for STRATA_CUDA_ARCHITECTURES=\"", archs,
            "\" only: rebuild with -DSTRATA_CUDA_ARCHITECTURES=\"", major, minor, ";", archs, "\"");
      }
    }
  });
}

int CudaBackend::device_count() const {
  init_devices();
  return device_count_;
}

uint64_t CudaBackend::memory_capacity(int index) {
  context(index);
  DeviceGuard guard(index);
  size_t free_bytes = 0, total_bytes = 0;
  STRATA_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo on cuda:", index);
  return uint64_t(total_bytes);
}

DeviceContext& CudaBackend::context(int index) {
  init_devices();
  STRATA_CHECK(device_count_ > 0, DeviceError, "cuda:", index, " requested but no CUDA device is available (",
               device_error_, ")");
  STRATA_CHECK(index >= 0 && index < device_count_, DeviceError, "cuda:", index, " requested but only ",
               device_count_, " CUDA device(s) are present");
  STRATA_CHECK(arch_errors_[size_t(index)].empty(), DeviceError, arch_errors_[size_t(index)]);
  return *contexts_[size_t(index)];
}

Allocator& CudaBackend::allocator(int device_index) { return context(device_index).allocator; }

Allocator& CudaBackend::host_allocator() { return host_allocator_; }

void CudaBackend::synchronize(int device_index) {
  context(device_index);
  DeviceGuard guard(device_index);
  STRATA_CUDA_CHECK(cudaDeviceSynchronize(), "synchronize cuda:", device_index);
}

Tensor CudaBackend::empty(const Shape& shape, DType dtype, int device) {
  const size_t nbytes = shape_nbytes(shape, element_size(dtype), "empty");
  auto storage = std::make_shared<StorageImpl>(nbytes, Device(DeviceType::CUDA, device), &allocator(device),
                                               MemoryCategoryGuard::current());
  return Tensor::from_storage(std::move(storage), shape, contiguous_strides(shape), 0, dtype);
}

int check_on_device(const char* op, std::initializer_list<const Tensor*> ts, int device) {
  for (const Tensor* t : ts) {
    if (!t->defined()) continue;
    STRATA_CHECK(t->device().is_cuda(), DeviceError, op, ": CUDA kernel given ", t->str());
    if (device < 0) device = t->device().index;
    STRATA_CHECK(t->device().index == device, DeviceError, op, ": tensors on different devices (", t->str(),
                 " and cuda:", device, ")");
  }
  STRATA_CHECK(device >= 0, ValueError, op, ": no defined tensor");
  return device;
}

DeviceErrorSlot::DeviceErrorSlot(CudaBackend& backend, int device) : slot_(backend.empty({2}, DType::i64, device)) {
  STRATA_CUDA_CHECK(cudaMemsetAsync(slot_.data_ptr(), 0, 2 * sizeof(int64_t), compute_stream()),
                    "clearing an error slot on cuda:", device);
}

bool DeviceErrorSlot::read(int64_t* value) const {
  int64_t host[2] = {0, 0};
  STRATA_CUDA_CHECK(cudaMemcpy(host, slot_.data_ptr(), sizeof(host), cudaMemcpyDeviceToHost),
                    "reading an error slot on ", slot_.device().str());
  if (value) *value = host[1];
  return host[0] != 0;
}

std::unique_ptr<Backend> make_cuda_backend() { return std::make_unique<CudaBackend>(); }

}  // namespace strata::gpu
