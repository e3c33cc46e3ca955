// CudaBackend::conv2d / conv2d_backward / batch_norm (training and inference) through cuDNN's
// convolution and batch-norm API: one handle per device (on the legacy default stream, like
// every backend call), algorithms chosen once per problem by cudnnGet*Algorithm_v7 and cached,
// f32 without TF32 (CUDNN_FMA_MATH, like the GEMMs; TF32 inside ops::AllowTf32Guard) and f64,
// deterministic backward algorithms only. The eval-mode batch-norm backward and the statistics cuDNN does not write in inference
// are kernels of cuda_norm_pool.cu. The CPU implementation is the oracle (conformance harness).
//
// cuDNN 9 marks this API deprecated in favour of the graph API; it is still shipped and is what
// PyTorch's native path calls, so the warnings are silenced here and nowhere else.
#include "strata/config.h"

#if STRATA_HAVE_CUDNN
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

#include <cudnn.h>

#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "ops/cuda/cuda_backend.h"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_cudnn_handle.h"
#include "ops/cuda/cuda_norm_pool.h"
#include "strata/ops/matmul_precision.h"

namespace strata::gpu {

#define STRATA_CUDNN_CHECK(expr, ...)                                                                   \
  do {                                                                                                  \
    const cudnnStatus_t strata_cudnn_st_ = (expr);                                                      \
    STRATA_CHECK(strata_cudnn_st_ == CUDNN_STATUS_SUCCESS, DeviceError, __VA_ARGS__, ": " #expr " failed: ", \
                 cudnnGetErrorString(strata_cudnn_st_));                                                \
  } while (0)

cudnnHandle_t cudnn_handle(int device) {
  static std::mutex mu;
  constexpr int kMaxDevices = 64;
  static cudnnHandle_t handles[kMaxDevices] = {};
  STRATA_CHECK(device >= 0 && device < kMaxDevices, DeviceError, "cudnn: device index ", device, " out of range");
  std::lock_guard<std::mutex> lk(mu);
  if (!handles[device]) {
    DeviceGuard guard(device);
    STRATA_CUDNN_CHECK(cudnnCreate(&handles[device]), "cudnnCreate on cuda:", device);
    STRATA_CUDNN_CHECK(cudnnSetStream(handles[device], compute_stream()), "cudnnSetStream");
  }
  return handles[device];
}

namespace {

cudnnDataType_t cudnn_dtype(DType dt) { return dt == DType::f64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT; }

struct TensorDesc {
  cudnnTensorDescriptor_t d = nullptr;
  TensorDesc(DType dt, int n, int c, int h, int w) {
    STRATA_CUDNN_CHECK(cudnnCreateTensorDescriptor(&d), "cudnnCreateTensorDescriptor");
    STRATA_CUDNN_CHECK(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, cudnn_dtype(dt), n, c, h, w),
                       "cudnnSetTensor4dDescriptor ", n, "x", c, "x", h, "x", w);
  }
  ~TensorDesc() { cudnnDestroyTensorDescriptor(d); }
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
};

int i32(int64_t v) { return int(v); }

// Descriptors and algorithms of one convolution problem (shapes, geometry, dtype, device).
struct ConvProblem {
  std::unique_ptr<TensorDesc> x, y, bias;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnConvolutionFwdAlgo_t fwd{};
  cudnnConvolutionBwdDataAlgo_t bwd_data{};
  cudnnConvolutionBwdFilterAlgo_t bwd_filter{};
  size_t fwd_ws = 0, bwd_data_ws = 0, bwd_filter_ws = 0;
  ~ConvProblem() {
    if (w) cudnnDestroyFilterDescriptor(w);
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
  }
};

using ConvKey = std::tuple<int, int, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                           int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>;

ConvProblem& conv_problem(int device, const Tensor& x, const Tensor& w, const Tensor& y, const Conv2dParams& p) {
  static std::mutex mu;
  static std::map<ConvKey, std::unique_ptr<ConvProblem>> cache;
  const bool tf32 = x.dtype() == DType::f32 && ops::tf32_allowed();
  const ConvKey key{device, int(x.dtype()), tf32, x.size(0), x.size(1), x.size(2), x.size(3), w.size(0), w.size(2),
                    w.size(3), p.stride[0], p.stride[1], p.padding[0], p.padding[1], p.dilation[0], p.dilation[1],
                    p.groups, y.size(2)};
  std::lock_guard<std::mutex> lk(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return *it->second;
  cudnnHandle_t h = cudnn_handle(device);
  auto pr = std::make_unique<ConvProblem>();
  const DType dt = x.dtype();
  pr->x = std::make_unique<TensorDesc>(dt, i32(x.size(0)), i32(x.size(1)), i32(x.size(2)), i32(x.size(3)));
  pr->y = std::make_unique<TensorDesc>(dt, i32(y.size(0)), i32(y.size(1)), i32(y.size(2)), i32(y.size(3)));
  pr->bias = std::make_unique<TensorDesc>(dt, 1, i32(w.size(0)), 1, 1);
  STRATA_CUDNN_CHECK(cudnnCreateFilterDescriptor(&pr->w), "cudnnCreateFilterDescriptor");
  STRATA_CUDNN_CHECK(cudnnSetFilter4dDescriptor(pr->w, cudnn_dtype(dt), CUDNN_TENSOR_NCHW, i32(w.size(0)),
                                                i32(w.size(1)), i32(w.size(2)), i32(w.size(3))),
                     "conv2d: cudnnSetFilter4dDescriptor ", shape_str(w.shape()));
  STRATA_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&pr->conv), "cudnnCreateConvolutionDescriptor");
  STRATA_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(pr->conv, i32(p.padding[0]), i32(p.padding[1]), i32(p.stride[0]),
                                                     i32(p.stride[1]), i32(p.dilation[0]), i32(p.dilation[1]),
                                                     CUDNN_CROSS_CORRELATION, cudnn_dtype(dt)),
                     "conv2d: cudnnSetConvolution2dDescriptor");
  STRATA_CUDNN_CHECK(cudnnSetConvolutionGroupCount(pr->conv, i32(p.groups)), "cudnnSetConvolutionGroupCount");
  // CUDNN_DEFAULT_MATH lets f32 convolutions use TF32 Tensor Cores; CUDNN_FMA_MATH forbids it.
  STRATA_CUDNN_CHECK(cudnnSetConvolutionMathType(pr->conv, tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH),
                     "cudnnSetConvolutionMathType");

  // The heuristics' best algorithm; backward ones must be deterministic (same bits every run).
  {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int n = 0;
    STRATA_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(h, pr->x->d, pr->w, pr->conv, pr->y->d,
                                                              CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf),
                       "conv2d: cudnnGetConvolutionForwardAlgorithm_v7");
    int pick = -1;
    for (int i = 0; i < n && pick < 0; ++i)
      if (perf[i].status == CUDNN_STATUS_SUCCESS) pick = i;
    STRATA_CHECK(pick >= 0, NotImplementedError, "conv2d: cuDNN has no forward algorithm for x ",
                 shape_str(x.shape()), " and weight ", shape_str(w.shape()));
    pr->fwd = perf[pick].algo;
    STRATA_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(h, pr->x->d, pr->w, pr->conv, pr->y->d, pr->fwd,
                                                               &pr->fwd_ws),
                       "conv2d: cudnnGetConvolutionForwardWorkspaceSize");
  }
  {
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    int n = 0;
    STRATA_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, pr->w, pr->y->d, pr->conv, pr->x->d,
                                                                   CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, perf),
                       "conv2d: cudnnGetConvolutionBackwardDataAlgorithm_v7");
    int pick = -1;
    for (int i = 0; i < n && pick < 0; ++i)
      if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].determinism == CUDNN_DETERMINISTIC) pick = i;
    STRATA_CHECK(pick >= 0, NotImplementedError, "conv2d_backward: cuDNN has no deterministic data-gradient algorithm for x ",
                 shape_str(x.shape()), " and weight ", shape_str(w.shape()));
    pr->bwd_data = perf[pick].algo;
    STRATA_CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(h, pr->w, pr->y->d, pr->conv, pr->x->d,
                                                                    pr->bwd_data, &pr->bwd_data_ws),
                       "conv2d: cudnnGetConvolutionBackwardDataWorkspaceSize");
  }
  {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    int n = 0;
    STRATA_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, pr->x->d, pr->y->d, pr->conv, pr->w,
                                                                     CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, perf),
                       "conv2d: cudnnGetConvolutionBackwardFilterAlgorithm_v7");
    int pick = -1;
    for (int i = 0; i < n && pick < 0; ++i)
      if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].determinism == CUDNN_DETERMINISTIC) pick = i;
    STRATA_CHECK(pick >= 0, NotImplementedError, "conv2d_backward: cuDNN has no deterministic weight-gradient algorithm for x ",
                 shape_str(x.shape()), " and weight ", shape_str(w.shape()));
    pr->bwd_filter = perf[pick].algo;
    STRATA_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(h, pr->x->d, pr->y->d, pr->conv, pr->w,
                                                                      pr->bwd_filter, &pr->bwd_filter_ws),
                       "conv2d: cudnnGetConvolutionBackwardFilterWorkspaceSize");
  }
  ConvProblem& ref = *pr;
  cache.emplace(key, std::move(pr));
  return ref;
}

// alpha / beta scalars in the compute type cuDNN wants (double for f64 tensors, else float).
struct Scalars {
  float f[2] = {1.f, 0.f};
  double d[2] = {1.0, 0.0};
  bool dbl;
  explicit Scalars(DType dt, double beta = 0.0) : dbl(dt == DType::f64) { f[1] = float(beta), d[1] = beta; }
  const void* one() const { return dbl ? static_cast<const void*>(&d[0]) : &f[0]; }
  const void* beta() const { return dbl ? static_cast<const void*>(&d[1]) : &f[1]; }
};

}  // namespace

void CudaBackend::conv2d(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias,
                         const Conv2dParams& p) {
  check_nchw_kernel_inputs("conv2d", {&out, &x, &w, &bias}, x.dtype());
  const int dev = check_on_device("conv2d", {&out, &x, &w, &bias});
  if (out.numel() == 0) return;
  context(dev);
  DeviceGuard guard(dev);
  ConvProblem& pr = conv_problem(dev, x, w, out, p);
  cudnnHandle_t h = cudnn_handle(dev);
  Tensor ws = pr.fwd_ws ? empty({int64_t(pr.fwd_ws)}, DType::u8, dev) : Tensor();
  Scalars s(x.dtype());
  STRATA_CUDNN_CHECK(cudnnConvolutionForward(h, s.one(), pr.x->d, x.data_ptr(), pr.w, w.data_ptr(), pr.conv, pr.fwd,
                                             ws.defined() ? ws.data_ptr() : nullptr, pr.fwd_ws, s.beta(), pr.y->d,
                                             out.data_ptr()),
                     "conv2d x ", shape_str(x.shape()), " weight ", shape_str(w.shape()));
  if (bias.defined()) {
    Scalars add(x.dtype(), 1.0);
    STRATA_CUDNN_CHECK(cudnnAddTensor(h, add.one(), pr.bias->d, bias.data_ptr(), add.beta(), pr.y->d, out.data_ptr()),
                       "conv2d bias");
  }
}

void CudaBackend::conv2d_backward(const Tensor& gx, const Tensor& gw, const Tensor& gb, const Tensor& gy,
                                  const Tensor& x, const Tensor& w, const Conv2dParams& p) {
  check_nchw_kernel_inputs("conv2d_backward", {&gx, &gw, &gb, &gy, &x, &w}, x.dtype());
  const int dev = check_on_device("conv2d_backward", {&gx, &gw, &gb, &gy, &x, &w});
  if (gy.numel() == 0 || x.numel() == 0) {
    for (const Tensor* t : {&gx, &gw, &gb})
      if (t->defined()) fill(*t, 0.0);
    return;
  }
  context(dev);
  DeviceGuard guard(dev);
  ConvProblem& pr = conv_problem(dev, x, w, gy, p);
  cudnnHandle_t h = cudnn_handle(dev);
  Scalars s(x.dtype());
  if (gx.defined()) {
    Tensor ws = pr.bwd_data_ws ? empty({int64_t(pr.bwd_data_ws)}, DType::u8, dev) : Tensor();
    STRATA_CUDNN_CHECK(cudnnConvolutionBackwardData(h, s.one(), pr.w, w.data_ptr(), pr.y->d, gy.data_ptr(), pr.conv,
                                                    pr.bwd_data, ws.defined() ? ws.data_ptr() : nullptr,
                                                    pr.bwd_data_ws, s.beta(), pr.x->d, gx.data_ptr()),
                       "conv2d_backward (data) x ", shape_str(x.shape()), " weight ", shape_str(w.shape()));
  }
  if (gw.defined()) {
    Tensor ws = pr.bwd_filter_ws ? empty({int64_t(pr.bwd_filter_ws)}, DType::u8, dev) : Tensor();
    STRATA_CUDNN_CHECK(cudnnConvolutionBackwardFilter(h, s.one(), pr.x->d, x.data_ptr(), pr.y->d, gy.data_ptr(),
                                                      pr.conv, pr.bwd_filter, ws.defined() ? ws.data_ptr() : nullptr,
                                                      pr.bwd_filter_ws, s.beta(), pr.w, gw.data_ptr()),
                       "conv2d_backward (weight) x ", shape_str(x.shape()), " weight ", shape_str(w.shape()));
  }
  if (gb.defined())
    STRATA_CUDNN_CHECK(cudnnConvolutionBackwardBias(h, s.one(), pr.y->d, gy.data_ptr(), s.beta(), pr.bias->d,
                                                    gb.data_ptr()),
                       "conv2d_backward (bias)");
}

// ---- batch norm ----

namespace {

// x [N, C, ...] as the 4-D NCHW descriptor cuDNN's spatial batch norm takes.
std::unique_ptr<TensorDesc> bn_desc(const Tensor& x) {
  const int64_t N = x.size(0), C = x.size(1), HW = x.numel() / std::max<int64_t>(N * C, 1);
  return std::make_unique<TensorDesc>(x.dtype(), i32(N), i32(C), i32(HW), 1);
}

// weight / bias, or ones / zeros when the layer has no affine parameters.
Tensor or_fill(CudaBackend& b, const Tensor& t, int64_t C, DType dt, int dev, double v) {
  if (t.defined()) return t;
  Tensor f = b.empty({C}, dt, dev);
  b.fill(f, v);
  return f;
}

}  // namespace

void CudaBackend::batch_norm(const Tensor& out, const Tensor& mean, const Tensor& invstd, const Tensor& x,
                             const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                             const Tensor& running_var, bool training, double momentum, double eps) {
  check_nchw_kernel_inputs("batch_norm", {&out, &mean, &invstd, &x, &weight, &bias, &running_mean, &running_var}, x.dtype());
  const int dev = check_on_device("batch_norm", {&out, &mean, &invstd, &x, &weight, &bias, &running_mean, &running_var});
  STRATA_CHECK(eps >= CUDNN_BN_MIN_EPSILON, ValueError, "batch_norm: cuDNN needs eps >= ", CUDNN_BN_MIN_EPSILON,
               ", got ", eps);
  if (x.numel() == 0) return;
  context(dev);
  DeviceGuard guard(dev);
  cudnnHandle_t h = cudnn_handle(dev);
  const int64_t C = x.size(1);
  auto xd = bn_desc(x);
  TensorDesc cd(x.dtype(), 1, i32(C), 1, 1);
  Tensor w = or_fill(*this, weight, C, x.dtype(), dev, 1.0), b = or_fill(*this, bias, C, x.dtype(), dev, 0.0);
  Scalars s(x.dtype());
  if (training) {
    STRATA_CUDNN_CHECK(cudnnBatchNormalizationForwardTraining(
                           h, CUDNN_BATCHNORM_SPATIAL, s.one(), s.beta(), xd->d, x.data_ptr(), xd->d, out.data_ptr(),
                           cd.d, w.data_ptr(), b.data_ptr(), momentum,
                           running_mean.defined() ? running_mean.data_ptr() : nullptr,
                           running_var.defined() ? running_var.data_ptr() : nullptr, eps, mean.data_ptr(),
                           invstd.data_ptr()),
                       "batch_norm (training) x ", shape_str(x.shape()));
    return;
  }
  STRATA_CUDNN_CHECK(cudnnBatchNormalizationForwardInference(h, CUDNN_BATCHNORM_SPATIAL, s.one(), s.beta(), xd->d,
                                                             x.data_ptr(), xd->d, out.data_ptr(), cd.d, w.data_ptr(),
                                                             b.data_ptr(), running_mean.data_ptr(),
                                                             running_var.data_ptr(), eps),
                     "batch_norm (inference) x ", shape_str(x.shape()));
  launch_bn_eval_stats(mean, invstd, running_mean, running_var, eps);
}

void CudaBackend::batch_norm_backward(const Tensor& gx, const Tensor& gw, const Tensor& gb, const Tensor& gy,
                                      const Tensor& x, const Tensor& weight, const Tensor& mean, const Tensor& invstd,
                                      bool training) {
  check_nchw_kernel_inputs("batch_norm_backward", {&gx, &gw, &gb, &gy, &x, &weight, &mean, &invstd}, x.dtype());
  const int dev = check_on_device("batch_norm_backward", {&gx, &gw, &gb, &gy, &x, &weight, &mean, &invstd});
  if (x.numel() == 0) return;
  context(dev);
  DeviceGuard guard(dev);
  if (!training) {  // the affine map with fixed statistics: not cuDNN's training backward
    launch_bn_eval_backward(gx, gw, gb, gy, x, weight, mean, invstd);
    return;
  }
  cudnnHandle_t h = cudnn_handle(dev);
  const int64_t C = x.size(1);
  const DType dt = x.dtype();
  auto xd = bn_desc(x);
  TensorDesc cd(dt, 1, i32(C), 1, 1);
  Tensor w = or_fill(*this, weight, C, dt, dev, 1.0);
  // cuDNN writes all three gradients; scratch for the ones not wanted.
  Tensor dx = gx.defined() ? gx : empty(x.shape(), dt, dev);
  Tensor dw = gw.defined() ? gw : empty({C}, dt, dev), db = gb.defined() ? gb : empty({C}, dt, dev);
  Scalars s(dt);
  STRATA_CUDNN_CHECK(cudnnBatchNormalizationBackward(h, CUDNN_BATCHNORM_SPATIAL, s.one(), s.beta(), s.one(), s.beta(),
                                                     xd->d, x.data_ptr(), xd->d, gy.data_ptr(), xd->d, dx.data_ptr(),
                                                     cd.d, w.data_ptr(), dw.data_ptr(), db.data_ptr(),
                                                     CUDNN_BN_MIN_EPSILON, mean.data_ptr(), invstd.data_ptr()),
                     "batch_norm_backward x ", shape_str(x.shape()));
}

}  // namespace strata::gpu

#pragma GCC diagnostic pop

#else  // CUDA without cuDNN: the ops say so.
#include "ops/cuda/cuda_backend.h"

namespace strata::gpu {

void CudaBackend::conv2d(const Tensor& out, const Tensor&, const Tensor&, const Tensor&, const Conv2dParams&) {
  throw NotImplementedError("conv2d on " + out.device().str() + ": Strata was built without cuDNN");
}
void CudaBackend::conv2d_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor& gy, const Tensor&,
                                  const Tensor&, const Conv2dParams&) {
  throw NotImplementedError("conv2d_backward on " + gy.device().str() + ": Strata was built without cuDNN");
}
void CudaBackend::batch_norm(const Tensor& out, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                             const Tensor&, const Tensor&, const Tensor&, bool, double, double) {
  throw NotImplementedError("batch_norm on " + out.device().str() + ": Strata was built without cuDNN");
}
void CudaBackend::batch_norm_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor& gy, const Tensor&,
                                      const Tensor&, const Tensor&, const Tensor&, bool) {
  throw NotImplementedError("batch_norm_backward on " + gy.device().str() + ": Strata was built without cuDNN");
}

}  // namespace strata::gpu
#endif  // STRATA_HAVE_CUDNN
