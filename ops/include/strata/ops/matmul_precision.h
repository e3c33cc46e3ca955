// AllowTf32Guard: f32 GEMMs and convolutions on this thread may run on TF32 Tensor Cores.
//
//   {
//     ops::AllowTf32Guard tf32;          // as torch.backends.cuda.matmul.allow_tf32 = True
//     Tensor loss = model.loss(x, y);
//     loss.backward();                   // hold it over backward too: its GEMMs read it there
//   }
//
// Off by default, as in PyTorch: f32 products multiply in f32 (cuBLASLt CUBLAS_COMPUTE_32F,
// cuDNN CUDNN_FMA_MATH), which the CPU oracle matches to rounding. Inside the guard, on CUDA
// devices, f32 GEMMs use CUBLAS_COMPUTE_32F_FAST_TF32 and cuDNN convolutions may convert to TF32
// (10-bit mantissa inputs, f32 accumulate: ~7x the f32 rate on Hopper). Tensors stay f32. The
// CPU and Meta backends ignore it. The planner's cost model has the same switch (strata_plan
// --precision tf32: the hardware profile's matmul_flops_tf32).
#pragma once

namespace strata::ops {

class AllowTf32Guard {
 public:
  explicit AllowTf32Guard(bool allow = true);
  ~AllowTf32Guard();
  AllowTf32Guard(const AllowTf32Guard&) = delete;
  AllowTf32Guard& operator=(const AllowTf32Guard&) = delete;

 private:
  bool prev_;
};

// Whether f32 GEMMs and convolutions on this thread may use TF32.
bool tf32_allowed();

}  // namespace strata::ops
