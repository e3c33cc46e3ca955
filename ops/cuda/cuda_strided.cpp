// make_strided_args: the shared dim coalescing (ops/common/strided_layout.h), so both backends
// walk the same layout.
#include "ops/cuda/cuda_strided.h"

namespace strata::gpu {

template <int N>
StridedArgs<N> make_strided_args(const std::array<const Tensor*, N>& ts) {
  std::array<const Shape*, N> strides;
  std::array<int64_t, N> esize;
  for (int k = 0; k < N; ++k) {
    STRATA_CHECK(ts[k]->shape() == ts[0]->shape(), ShapeError, "CUDA kernel: operand ", ts[k]->str(),
                 " does not have the output's shape ", shape_str(ts[0]->shape()));
    strides[size_t(k)] = &ts[k]->strides();
    esize[size_t(k)] = int64_t(ts[k]->element_size());
  }
  common::StridedLayout<N> L = common::coalesce<N>(ts[0]->shape(), strides, esize);
  StridedArgs<N> a{};
  a.ndim = L.ndim;
  a.numel = 1;
  for (int d = 0; d < L.ndim; ++d) {
    a.shape[d] = L.shape[d];
    a.numel *= L.shape[d];
    for (int k = 0; k < N; ++k) a.stride[k][d] = L.stride[k][d];
  }
  for (int k = 0; k < N; ++k) {
    a.ptr[k] = static_cast<char*>(ts[k]->data_ptr());
    a.dtype[k] = ts[k]->dtype();
  }
  return a;
}

template StridedArgs<1> make_strided_args<1>(const std::array<const Tensor*, 1>&);
template StridedArgs<2> make_strided_args<2>(const std::array<const Tensor*, 2>&);
template StridedArgs<3> make_strided_args<3>(const std::array<const Tensor*, 3>&);
template StridedArgs<4> make_strided_args<4>(const std::array<const Tensor*, 4>&);

}  // namespace strata::gpu
