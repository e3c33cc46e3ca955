// CPU elementwise kernels: instantiates ops/common's ew_apply for f32, f64 and i64.
#include "ops/common/elementwise_math.h"
#include "ops/cpu/cpu_backend.h"
#include "ops/cpu/strided_loop.h"

namespace strata::cpu {

namespace {

template <EwOp OP, class T>
void ew_kernel(const Tensor& out, std::span<const Tensor> in, const EwParams& prm) {
  using Out = std::conditional_t<common::ew_is_comparison(OP), bool, T>;
  using In0 = std::conditional_t<OP == EwOp::Where, bool, T>;
  const T p0 = T(prm.p0), p1 = T(prm.p1);
  const int arity = ew_op_arity(OP);
  char* o = static_cast<char*>(out.data_ptr());
  if (arity == 1) {
    strided_for_each<2>(out.shape(), {o, static_cast<char*>(in[0].data_ptr())},
                        {&out.strides(), &in[0].strides()}, {int64_t(sizeof(Out)), int64_t(sizeof(In0))},
                        [=](std::array<char*, 2> p, const int64_t* s, int64_t n) {
                          Out* y = reinterpret_cast<Out*>(p[0]);
                          const In0* a = reinterpret_cast<const In0*>(p[1]);
                          if (s[0] == int64_t(sizeof(Out)) && s[1] == int64_t(sizeof(In0))) {
                            for (int64_t i = 0; i < n; ++i)
                              y[i] = Out(common::ew_apply<OP, T>(T(a[i]), T(0), T(0), p0, p1));
                          } else {
                            for (int64_t i = 0; i < n; ++i)
                              *reinterpret_cast<Out*>(p[0] + i * s[0]) = Out(common::ew_apply<OP, T>(
                                  T(*reinterpret_cast<const In0*>(p[1] + i * s[1])), T(0), T(0), p0, p1));
                          }
                        });
  } else if (arity == 2) {
    strided_for_each<3>(out.shape(),
                        {o, static_cast<char*>(in[0].data_ptr()), static_cast<char*>(in[1].data_ptr())},
                        {&out.strides(), &in[0].strides(), &in[1].strides()},
                        {int64_t(sizeof(Out)), int64_t(sizeof(T)), int64_t(sizeof(T))},
                        [=](std::array<char*, 3> p, const int64_t* s, int64_t n) {
                          Out* y = reinterpret_cast<Out*>(p[0]);
                          const T* a = reinterpret_cast<const T*>(p[1]);
                          const T* b = reinterpret_cast<const T*>(p[2]);
                          const int64_t e = sizeof(T);
                          if (s[0] == int64_t(sizeof(Out)) && s[1] == e && s[2] == e) {
                            for (int64_t i = 0; i < n; ++i)
                              y[i] = Out(common::ew_apply<OP, T>(a[i], b[i], T(0), p0, p1));
                          } else if (s[0] == int64_t(sizeof(Out)) && s[1] == e && s[2] == 0) {
                            const T bv = b[0];
                            for (int64_t i = 0; i < n; ++i)
                              y[i] = Out(common::ew_apply<OP, T>(a[i], bv, T(0), p0, p1));
                          } else {
                            for (int64_t i = 0; i < n; ++i)
                              *reinterpret_cast<Out*>(p[0] + i * s[0]) = Out(common::ew_apply<OP, T>(
                                  *reinterpret_cast<const T*>(p[1] + i * s[1]),
                                  *reinterpret_cast<const T*>(p[2] + i * s[2]), T(0), p0, p1));
                          }
                        });
  } else {
    strided_for_each<4>(out.shape(),
                        {o, static_cast<char*>(in[0].data_ptr()), static_cast<char*>(in[1].data_ptr()),
                         static_cast<char*>(in[2].data_ptr())},
                        {&out.strides(), &in[0].strides(), &in[1].strides(), &in[2].strides()},
                        {int64_t(sizeof(Out)), int64_t(sizeof(In0)), int64_t(sizeof(T)), int64_t(sizeof(T))},
                        [=](std::array<char*, 4> p, const int64_t* s, int64_t n) {
                          for (int64_t i = 0; i < n; ++i)
                            *reinterpret_cast<Out*>(p[0] + i * s[0]) = Out(common::ew_apply<OP, T>(
                                T(*reinterpret_cast<const In0*>(p[1] + i * s[1])),
                                *reinterpret_cast<const T*>(p[2] + i * s[2]),
                                *reinterpret_cast<const T*>(p[3] + i * s[3]), p0, p1));
                        });
  }
}

template <class T>
void ew_typed(EwOp op, const Tensor& out, std::span<const Tensor> in, const EwParams& p) {
  const bool ran = common::dispatch_ew_op<T>(op, [&](auto tag) { ew_kernel<decltype(tag)::value, T>(out, in, p); });
  STRATA_CHECK(ran, TypeError, "elementwise ", ew_op_name(op), ": not defined for ", dtype_name(out.dtype()),
               " tensors");
}

}  // namespace

void CpuBackend::elementwise(EwOp op, const Tensor& out, std::span<const Tensor> in,
                             const EwParams& p) {
  const int arity = ew_op_arity(op);
  STRATA_CHECK(int(in.size()) == arity, ValueError, "elementwise ", ew_op_name(op), ": expected ",
               arity, " inputs, got ", in.size());
  if (out.numel() == 0) return;
  const bool cmp = common::ew_is_comparison(op);
  // The compute dtype is the (non-condition) inputs' dtype.
  DType dt = in[op == EwOp::Where ? 1 : 0].dtype();
  for (int i = op == EwOp::Where ? 1 : 0; i < arity; ++i)
    STRATA_CHECK(in[i].dtype() == dt, TypeError, "elementwise ", ew_op_name(op),
                 ": input dtypes differ (", in[0].str(), ")");
  STRATA_CHECK(cmp ? out.dtype() == DType::boolean : out.dtype() == dt, TypeError, "elementwise ",
               ew_op_name(op), ": output ", out.str(), " for inputs of ", dtype_name(dt));
  if (op == EwOp::Where)
    STRATA_CHECK(in[0].dtype() == DType::boolean, TypeError, "where: condition must be bool, got ", in[0].str());

  if (dt == DType::f32) return ew_typed<float>(op, out, in, p);
  if (dt == DType::f64) return ew_typed<double>(op, out, in, p);
  if (dt == DType::i64) return ew_typed<int64_t>(op, out, in, p);
  // 16-bit floats compute in f32, other integers in i64: convert, compute, convert back.
  DType wide = is_floating(dt) ? DType::f32 : DType::i64;
  std::vector<Tensor> w;
  for (int i = 0; i < arity; ++i)
    w.push_back(op == EwOp::Where && i == 0 ? in[0] : contiguous_as(in[i], wide));
  Tensor wout = cmp ? out : Tensor::empty(out.shape(), wide, kCPU);
  elementwise(op, wout, w, p);
  if (!cmp) copy(out, wout);
}

}  // namespace strata::cpu
