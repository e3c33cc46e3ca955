// CUDA/cuBLAS error reporting and DeviceGuard.
#include "ops/cuda/cuda_check.h"

#include <cublasLt.h>

namespace strata::gpu {

void throw_cuda_error(cudaError_t err, const char* call, const std::string& context) {
  (void)cudaGetLastError();  // reset the non-sticky error state
  throw DeviceError(detail::concat(context.empty() ? "CUDA" : context, ": ", call, " failed: ",
                                   cudaGetErrorString(err), " (", cudaGetErrorName(err), ")"));
}

void throw_cublas_error(cublasStatus_t status, const char* call, const std::string& context, bool lt) {
  const char* what = lt ? cublasLtGetStatusString(status) : cublasGetStatusString(status);
  throw DeviceError(detail::concat(context.empty() ? "cuBLAS" : context, ": ", call, " failed: ",
                                   what ? what : "unknown status", " (status ", int(status), ")"));
}

DeviceGuard::DeviceGuard(int device) : device_(device) {
  STRATA_CUDA_CHECK(cudaGetDevice(&prev_), "selecting cuda:", device);
  if (prev_ != device) STRATA_CUDA_CHECK(cudaSetDevice(device), "selecting cuda:", device);
}

DeviceGuard::~DeviceGuard() {
  if (prev_ >= 0 && prev_ != device_) (void)cudaSetDevice(prev_);
}

}  // namespace strata::gpu
