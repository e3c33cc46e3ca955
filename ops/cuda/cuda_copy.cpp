// CudaBackend::copy: device <-> device (same device or peer) and host <-> device, any strides
// and dtypes. Host transfers go through one contiguous buffer; the dtype conversion happens on
// whichever side makes the transfer smaller (both sides convert bit-identically).
#include "ops/cpu/cpu_backend.h"
#include "ops/cuda/cuda_backend.h"
#include "ops/cuda/cuda_check.h"

namespace strata::gpu {

namespace {
// The dtype a host <-> device transfer carries: the narrower of the two.
DType staging_dtype(const Tensor& dst, const Tensor& src) {
  return element_size(dst.dtype()) < element_size(src.dtype()) ? dst.dtype() : src.dtype();
}
}  // namespace

void CudaBackend::copy(const Tensor& dst, const Tensor& src) {
  STRATA_CHECK(dst.shape() == src.shape(), ShapeError, "copy: destination ", dst.str(), " and source ",
               src.str(), " differ in shape");
  const bool dst_cuda = dst.device().is_cuda(), src_cuda = src.device().is_cuda();
  STRATA_CHECK((dst_cuda || dst.device().is_cpu()) && (src_cuda || src.device().is_cpu()) &&
                   (dst_cuda || src_cuda),
               DeviceError, "CUDA copy between ", src.str(), " and ", dst.str());
  if (dst.numel() == 0) return;
  if (dst_cuda && src_cuda) {
    if (dst.device() == src.device()) return copy_same_device(dst, src);
    return copy_peer(dst, src);
  }
  if (dst_cuda) return copy_host_to_device(dst, src);
  copy_device_to_host(dst, src);
}

void CudaBackend::copy_same_device(const Tensor& dst, const Tensor& src) {
  const int dev = dst.device().index;
  context(dev);
  DeviceGuard guard(dev);
  if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous()) {
    STRATA_CUDA_CHECK(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), dst.nbytes(), cudaMemcpyDeviceToDevice,
                                      compute_stream()),
                      "copy ", src.str(), " -> ", dst.str());
    return;
  }
  launch_convert(dst, src);
}

void CudaBackend::copy_host_to_device(const Tensor& dst, const Tensor& src) {
  const int dev = dst.device().index;
  context(dev);
  DeviceGuard guard(dev);
  const DType stage = staging_dtype(dst, src);
  Tensor host = src;
  if (!src.is_contiguous() || src.dtype() != stage) {
    host = Tensor::empty(src.shape(), stage, kCPU);
    cpu::CpuBackend().copy(host, src);
  }
  const bool direct = dst.is_contiguous() && dst.dtype() == stage;
  Tensor target = direct ? dst : empty(dst.shape(), stage, dev);
  // Synchronous: returns once `host` has been read, so it may be freed right after.
  STRATA_CUDA_CHECK(cudaMemcpy(target.data_ptr(), host.data_ptr(), host.nbytes(), cudaMemcpyHostToDevice),
                    "copy ", src.str(), " -> ", dst.str());
  if (!direct) copy_same_device(dst, target);
}

void CudaBackend::copy_device_to_host(const Tensor& dst, const Tensor& src) {
  const int dev = src.device().index;
  context(dev);
  DeviceGuard guard(dev);
  const DType stage = staging_dtype(dst, src);
  Tensor dev_src = src;
  if (!src.is_contiguous() || src.dtype() != stage) {
    dev_src = empty(src.shape(), stage, dev);
    copy_same_device(dev_src, src);
  }
  const bool direct = dst.is_contiguous() && dst.dtype() == stage;
  Tensor host = direct ? dst : Tensor::empty(dst.shape(), stage, kCPU);
  // Waits for the kernels before it on the legacy stream and returns once the data is on the host.
  STRATA_CUDA_CHECK(cudaMemcpy(host.data_ptr(), dev_src.data_ptr(), dev_src.nbytes(), cudaMemcpyDeviceToHost),
                    "copy ", src.str(), " -> ", dst.str());
  if (!direct) cpu::CpuBackend().copy(dst, host);
}

void CudaBackend::copy_peer(const Tensor& dst, const Tensor& src) {
  const int sdev = src.device().index, ddev = dst.device().index;
  context(sdev);
  context(ddev);
  const DType stage = staging_dtype(dst, src);
  Tensor from = src;
  if (!src.is_contiguous() || src.dtype() != stage) {
    from = empty(src.shape(), stage, sdev);
    copy_same_device(from, src);
  }
  const bool direct = dst.is_contiguous() && dst.dtype() == stage;
  Tensor to = direct ? dst : empty(dst.shape(), stage, ddev);
  // Serialized with all work on both devices (legacy semantics of cudaMemcpyPeer).
  STRATA_CUDA_CHECK(cudaMemcpyPeer(to.data_ptr(), ddev, from.data_ptr(), sdev, from.nbytes()), "copy ", src.str(),
                    " -> ", dst.str());
  if (!direct) copy_same_device(dst, to);
}

}  // namespace strata::gpu
