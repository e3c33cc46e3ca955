// CUDA/cuBLAS error checks (every failure becomes a DeviceError naming the call, the error
// string and the op) and DeviceGuard, which makes a device current for a scope.
#pragma once

#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include <string>

#include "strata/core/error.h"

namespace strata::gpu {

// Throws DeviceError "<context>: <call> failed: <error string> (<error name>)"; clears the
// runtime's last-error slot first so a later check does not report the same failure again.
[[noreturn]] void throw_cuda_error(cudaError_t err, const char* call, const std::string& context);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call, const std::string& context,
                                     bool lt);

// Makes `device` current and restores the previous device on exit (no-op when equal).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int prev_ = -1;
  int device_ = -1;
};

}  // namespace strata::gpu

// STRATA_CUDA_CHECK(call, context...): the context pieces are concatenated only on failure.
#define STRATA_CUDA_CHECK(expr, ...)                                                          \
  do {                                                                                        \
    const cudaError_t strata_cuda_err_ = (expr);                                              \
    if (strata_cuda_err_ != cudaSuccess)                                                      \
      ::strata::gpu::throw_cuda_error(strata_cuda_err_, #expr, ::strata::detail::concat(__VA_ARGS__)); \
  } while (0)

#define STRATA_CUBLAS_CHECK(expr, ...)                                                        \
  do {                                                                                        \
    const cublasStatus_t strata_cublas_st_ = (expr);                                          \
    if (strata_cublas_st_ != CUBLAS_STATUS_SUCCESS)                                           \
      ::strata::gpu::throw_cublas_error(strata_cublas_st_, #expr,                            \
                                         ::strata::detail::concat(__VA_ARGS__), false);        \
  } while (0)

#define STRATA_CUBLASLT_CHECK(expr, ...)                                                      \
  do {                                                                                        \
    const cublasStatus_t strata_cublas_st_ = (expr);                                          \
    if (strata_cublas_st_ != CUBLAS_STATUS_SUCCESS)                                           \
      ::strata::gpu::throw_cublas_error(strata_cublas_st_, #expr,                            \
                                         ::strata::detail::concat(__VA_ARGS__), true);         \
  } while (0)

// After a kernel launch: reports a bad launch configuration (or an earlier asynchronous
// fault) against the kernel and op that was being launched.
#define STRATA_CUDA_CHECK_LAUNCH(...) STRATA_CUDA_CHECK(cudaGetLastError(), __VA_ARGS__)
