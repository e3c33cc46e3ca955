// The CUDA backend against the CPU backend: every kernel runs on the same inputs on both and
// the results are compared (exactly where the CUDA kernel promises the CPU's bits, else
// within a per-dtype tolerance). The comparisons SKIP without a CUDA device; the
// registration checks run everywhere. One file (~720 lines) on purpose: one fixture, one device
// check, every kernel beside the others.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "ops/cpu/cpu_backend.h"
#include "ops/dispatch.h"
#include "strata/config.h"
#include "strata/core/generator.h"
#include "strata/ops.h"
#include "support/device_present.h"
#include "support/tensor_compare.h"

namespace strata {
namespace {

using strata::testing::element_bits;

Backend& gpu() { return BackendRegistry::instance().get(DeviceType::CUDA); }
cpu::CpuBackend& host() {
  static cpu::CpuBackend b;
  return b;
}
const Device kGpu(DeviceType::CUDA, 0);

// Random CPU values of `dt`: normal(0, scale) rounded to dt (integers truncate; bool: x > 0).
Tensor random_cpu(const Shape& shape, DType dt, uint64_t seed, double scale = 1.0) {
  Generator g(seed);
  GeneratorGuard guard(g);
  Tensor x = ops::mul(ops::randn(shape, DType::f64), scale);
  if (dt == DType::boolean) return ops::gt(x, 0.0);
  Tensor out = Tensor::empty(shape, dt, kCPU);
  host().copy(out, x);
  return out;
}

Tensor to_gpu(const Tensor& t) {
  Tensor out = Tensor::empty(t.shape(), t.dtype(), kGpu);
  gpu().copy(out, t);
  return out;
}

Tensor cpu_empty(const Shape& s, DType dt) { return Tensor::empty(s, dt, kCPU); }
Tensor gpu_empty(const Shape& s, DType dt) { return Tensor::empty(s, dt, kGpu); }

// CUDA's result (got) against the CPU's (want): |got - want| <= atol + rtol |want| elementwise.
using strata::testing::expect_close;

void expect_same(const Tensor& got, const Tensor& want, const std::string& what) {
  expect_close(got, want, 0, 0, what);
}

// Tolerance for results both backends compute in `dt` with differently rounded math.
double rtol_for(DType dt) {
  switch (dt) {
    case DType::f64: return 1e-12;
    case DType::f32: return 2e-5;
    case DType::f16: return 2e-3;
    case DType::bf16: return 1.6e-2;
    default: return 0;
  }
}

const DType kAllDtypes[] = {DType::f32, DType::f64, DType::bf16, DType::f16,
                            DType::i32, DType::i64, DType::u8,   DType::boolean};

// ---------------------------------------------------------------------------------------
// Registration (runs on every machine)

#if STRATA_HAVE_CUDA
TEST(CudaBackendRegistration, RegisteredAndCountsDevicesWithoutThrowing) {
  ops::detail::register_builtin_backends();
  ASSERT_TRUE(BackendRegistry::instance().has(DeviceType::CUDA));
  Backend& be = BackendRegistry::instance().get(DeviceType::CUDA);
  EXPECT_EQ(be.type(), DeviceType::CUDA);
  int n = -1;
  EXPECT_NO_THROW(n = be.device_count());
  EXPECT_GE(n, 0);
  // No driver device node: the runtime reports an error, which must read as zero devices.
  if (!std::filesystem::exists("/dev/nvidiactl")) {
    EXPECT_EQ(n, 0);
  }
}

TEST(CudaBackendRegistration, MissingDeviceIsADeviceErrorNamingIt) {
  ops::detail::register_builtin_backends();
  Backend& be = BackendRegistry::instance().get(DeviceType::CUDA);
  const int n = be.device_count();
  try {
    be.allocator(n);  // one past the last device
    ADD_FAILURE() << "allocator(" << n << ") did not throw";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("cuda:" + std::to_string(n)), std::string::npos) << e.what();
  }
  if (n == 0) {
    EXPECT_THROW(Tensor::empty({4}, DType::f32, kGpu), DeviceError);
    EXPECT_THROW(be.synchronize(0), DeviceError);
    EXPECT_THROW(be.create_stream(0), DeviceError);
  }
}
#else
TEST(CudaBackendRegistration, AbsentWhenBuiltWithoutCuda) {
  ops::detail::register_builtin_backends();
  EXPECT_FALSE(BackendRegistry::instance().has(DeviceType::CUDA));
  EXPECT_THROW(BackendRegistry::instance().get(DeviceType::CUDA), DeviceError);
}
#endif

// ---------------------------------------------------------------------------------------
// Copy and fill

TEST(CudaBackend, CopyRoundTripsEveryDtype) {
  SKIP_WITHOUT_CUDA_DEVICE();
  for (DType dt : kAllDtypes) {
    Tensor x = random_cpu({3, 17}, dt, 1, 4.0);
    Tensor back = cpu_empty(x.shape(), dt);
    gpu().copy(back, to_gpu(x));
    expect_same(back, x, std::string("round trip ") + dtype_name(dt));
  }
}

TEST(CudaBackend, StridedConvertingCopiesMatchTheCpu) {
  SKIP_WITHOUT_CUDA_DEVICE();
  for (DType from : kAllDtypes) {
    // Non-negative sources for u8 targets: converting a negative float to u8 is undefined.
    Tensor signed_x = random_cpu({3, 4, 5}, from, 2, 3.0);
    Tensor pos_x = from == DType::boolean ? signed_x : random_cpu({3, 4, 5}, from, 2, 3.0);
    if (from != DType::boolean && from != DType::u8) {
      Tensor a = cpu_empty({3, 4, 5}, DType::f64);
      host().copy(a, pos_x);
      pos_x = cpu_empty({3, 4, 5}, from);
      host().copy(pos_x, ops::abs(a));
    }
    for (DType to : kAllDtypes) {
      const Tensor& x = to == DType::u8 ? pos_x : signed_x;
      const std::string what = std::string(dtype_name(from)) + " -> " + dtype_name(to);
      Tensor xg = to_gpu(x);
      Tensor want = cpu_empty({5, 4, 3}, to);
      host().copy(want, x.permute({2, 1, 0}));
      // device -> device, strided source, contiguous destination
      Tensor d2d = gpu_empty({5, 4, 3}, to);
      gpu().copy(d2d, xg.permute({2, 1, 0}));
      expect_same(d2d, want, "device copy " + what);
      // host -> device into a strided destination
      Tensor h2d = gpu_empty({3, 4, 5}, to);
      gpu().copy(h2d.permute({2, 1, 0}), x.permute({2, 1, 0}));
      Tensor h2d_want = cpu_empty({3, 4, 5}, to);
      host().copy(h2d_want, x);
      expect_same(h2d, h2d_want, "host to device " + what);
      // device -> host into a strided destination, from a broadcast source
      Tensor row = xg.select(0, 1);
      Tensor d2h = cpu_empty({4, 2, 5}, to);
      gpu().copy(d2h.transpose(0, 1), row.unsqueeze(0).expand({2, 4, 5}));
      Tensor d2h_want = cpu_empty({4, 2, 5}, to);
      host().copy(d2h_want.transpose(0, 1), x.select(0, 1).unsqueeze(0).expand({2, 4, 5}));
      expect_same(d2h, d2h_want, "device to host " + what);
    }
  }
}

TEST(CudaBackend, FillMatchesTheCpuOnStridedViews) {
  SKIP_WITHOUT_CUDA_DEVICE();
  for (DType dt : kAllDtypes) {
    for (double v : {0.0, 2.5, -1.0, 7.0}) {
      if (dt == DType::u8 && v < 0) continue;
      Tensor want = random_cpu({4, 6}, dt, 3, 2.0);
      Tensor got = to_gpu(want);
      host().fill(want.slice(1, 1, 6, 2), v);
      gpu().fill(got.slice(1, 1, 6, 2), v);
      expect_same(got, want, std::string("fill ") + dtype_name(dt) + " " + std::to_string(v));
    }
  }
}

// ---------------------------------------------------------------------------------------
// Elementwise

bool needs_positive(EwOp op) {
  return op == EwOp::Log || op == EwOp::Sqrt || op == EwOp::Rsqrt || op == EwOp::Pow ||
         op == EwOp::PowScalar || op == EwOp::Reciprocal || op == EwOp::Div;
}

TEST(CudaBackend, ElementwiseMatchesTheCpuForEveryOpDtypeAndLayout) {
  SKIP_WITHOUT_CUDA_DEVICE();
  const DType dtypes[] = {DType::f32, DType::f64, DType::bf16, DType::f16, DType::i64, DType::i32, DType::boolean};
  for (int o = 0; o < int(EwOp::kCount); ++o) {
    const EwOp op = EwOp(o);
    const int arity = ew_op_arity(op);
    const bool cmp = op == EwOp::Eq || op == EwOp::Ne || op == EwOp::Lt || op == EwOp::Le || op == EwOp::Gt ||
                     op == EwOp::Ge;
    for (DType dt : dtypes) {
      const std::string what = std::string(ew_op_name(op)) + " " + dtype_name(dt);
      // a: [4, 6] seen through a transpose; b: a stride-0 broadcast row; c: contiguous.
      Tensor a0 = random_cpu({6, 4}, dt, 10 + uint64_t(o), 2.0);
      Tensor b0 = random_cpu({1, 6}, dt, 20 + uint64_t(o), 2.0);
      Tensor c0 = random_cpu({4, 6}, dt, 30 + uint64_t(o), 2.0);
      if (needs_positive(op) && is_floating(dt)) {
        for (Tensor* t : {&a0, &b0}) {
          Tensor p = ops::add(ops::abs(ops::to(*t, DType::f64)), 0.5);
          host().copy(*t, p);
        }
      }
      Tensor cond = random_cpu({4, 6}, DType::boolean, 40);
      std::vector<Tensor> in_cpu, in_gpu;
      if (op == EwOp::Where) {
        in_cpu = {cond, b0.expand({4, 6}), c0};
        in_gpu = {to_gpu(cond), to_gpu(b0).expand({4, 6}), to_gpu(c0)};
      } else {
        in_cpu = {a0.t(), b0.expand({4, 6}), c0};
        in_gpu = {to_gpu(a0).t(), to_gpu(b0).expand({4, 6}), to_gpu(c0)};
        in_cpu.resize(size_t(arity));
        in_gpu.resize(size_t(arity));
      }
      const DType out_dt = cmp ? DType::boolean : dt;
      // The output is a transposed view too.
      Tensor want = cpu_empty({6, 4}, out_dt), got = gpu_empty({6, 4}, out_dt);
      const EwParams p{0.5, 1.5};
      bool cpu_threw = false;
      try {
        host().elementwise(op, want.t(), in_cpu, p);
      } catch (const TypeError&) {
        cpu_threw = true;
      }
      if (cpu_threw) {
        EXPECT_THROW(gpu().elementwise(op, got.t(), in_gpu, p), TypeError) << what;
        continue;
      }
      gpu().elementwise(op, got.t(), in_gpu, p);
      expect_close(got, want, rtol_for(out_dt), is_floating(out_dt) ? 1e-6 : 0, what);
    }
  }
}

// ---------------------------------------------------------------------------------------
// Reductions

TEST(CudaBackend, ReduceRowsMatchesTheCpu) {
  SKIP_WITHOUT_CUDA_DEVICE();
  const std::pair<int64_t, int64_t> shapes[] = {{7, 5}, {1000, 33}, {4, 3000}, {1, 200000}, {3, 70001}};
  const ReduceOp ops_[] = {ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max, ReduceOp::Min, ReduceOp::ArgMax,
                           ReduceOp::ArgMin};
  for (auto [rows, n] : shapes) {
    for (DType dt : {DType::f32, DType::f64, DType::bf16, DType::i64, DType::i32}) {
      Tensor x = random_cpu({rows, n}, dt, uint64_t(rows * 7 + n), 3.0);
      Tensor xg = to_gpu(x);
      for (ReduceOp op : ops_) {
        if (op == ReduceOp::Mean && !is_floating(dt)) continue;
        const bool index = op == ReduceOp::ArgMax || op == ReduceOp::ArgMin;
        const DType out_dt = index ? DType::i64 : dt;
        Tensor want = cpu_empty({rows}, out_dt), got = gpu_empty({rows}, out_dt);
        host().reduce_rows(op, want, x, n);
        gpu().reduce_rows(op, got, xg, n);
        const std::string what = "reduce " + std::to_string(int(op)) + " " + dtype_name(dt) + " [" +
                                 std::to_string(rows) + ", " + std::to_string(n) + "]";
        const bool sum = op == ReduceOp::Sum || op == ReduceOp::Mean;
        if (sum && is_floating(dt)) {
          // Both accumulate in double in different orders; the f32/bf16 result rounds once.
          expect_close(got, want, dt == DType::f64 ? 1e-12 : (dt == DType::bf16 ? 8e-3 : 1e-6), 1e-9, what);
        } else {
          expect_same(got, want, what);
        }
      }
    }
  }
}

TEST(CudaBackend, ArgMaxTakesTheFirstNanElseTheFirstMaximum) {
  SKIP_WITHOUT_CUDA_DEVICE();
  const double nan = std::nan("");
  std::vector<double> v(4 * 2000, 0.0);
  v[5] = 3.0;             // row 0: tie between 5 and 1500
  v[1500] = 3.0;
  v[2000 + 700] = nan;    // row 1: NaNs at 700 and 1900
  v[2000 + 1900] = nan;
  v[2000 + 3] = 9.0;
  v[4000 + 1999] = -1.0;  // row 2: min at the end
  Tensor x = ops::from_vector(v, {4, 2000}, DType::f32);
  Tensor xg = to_gpu(x);
  for (ReduceOp op : {ReduceOp::ArgMax, ReduceOp::ArgMin, ReduceOp::Max, ReduceOp::Min}) {
    const DType out_dt = op == ReduceOp::ArgMax || op == ReduceOp::ArgMin ? DType::i64 : DType::f32;
    Tensor want = cpu_empty({4}, out_dt), got = gpu_empty({4}, out_dt);
    host().reduce_rows(op, want, x, 2000);
    gpu().reduce_rows(op, got, xg, 2000);
    expect_same(got, want, "extremum " + std::to_string(int(op)));
  }
}

TEST(CudaBackend, SumsAreBitIdenticalAcrossRunsAndAlignments) {
  SKIP_WITHOUT_CUDA_DEVICE();
  for (int64_t n : {int64_t(33), int64_t(5000), int64_t(300001)}) {
    Tensor x = random_cpu({3 * n + 1}, DType::f32, 7, 1.0);
    Tensor xg = to_gpu(x);
    Tensor aligned = xg.narrow(0, 0, 3 * n).reshape({3, n});
    Tensor shifted = gpu_empty({3 * n + 1}, DType::f32);
    gpu().copy(shifted.narrow(0, 1, 3 * n), aligned.reshape({3 * n}));
    Tensor unaligned = shifted.narrow(0, 1, 3 * n).reshape({3, n});  // 4 bytes past a 64-byte boundary
    Tensor r1 = gpu_empty({3}, DType::f32), r2 = gpu_empty({3}, DType::f32), r3 = gpu_empty({3}, DType::f32);
    gpu().reduce_rows(ReduceOp::Sum, r1, aligned, n);
    gpu().reduce_rows(ReduceOp::Sum, r2, aligned, n);
    gpu().reduce_rows(ReduceOp::Sum, r3, unaligned, n);
    EXPECT_EQ(element_bits(r1), element_bits(r2)) << n;
    EXPECT_EQ(element_bits(r1), element_bits(r3)) << n;
  }
}

// ---------------------------------------------------------------------------------------
// GEMM

TEST(CudaBackend, BmmMatchesTheCpuForEveryLayoutAndDtype) {
  SKIP_WITHOUT_CUDA_DEVICE();
  const int64_t B = 3, M = 17, K = 33, N = 9;
  for (DType dt : {DType::f32, DType::f64, DType::bf16, DType::f16}) {
    for (int layout = 0; layout < 5; ++layout) {
      // 0 plain, 1 a transposed, 2 b transposed, 3 a broadcast over the batch, 4 strided out
      const int64_t k = K;
      Tensor a = layout == 1 ? random_cpu({B, k, M}, dt, 50, 1.0).transpose(1, 2)
                 : layout == 3 ? random_cpu({1, M, k}, dt, 50, 1.0).expand({B, M, k})
                               : random_cpu({B, M, k}, dt, 50, 1.0);
      Tensor b = layout == 2 ? random_cpu({B, N, k}, dt, 51, 1.0).transpose(1, 2) : random_cpu({B, k, N}, dt, 51, 1.0);
      Tensor out0 = random_cpu(layout == 4 ? Shape{B, N, M} : Shape{B, M, N}, dt, 52, 1.0);
      auto view = [&](const Tensor& t) { return layout == 4 ? t.transpose(1, 2) : t; };
      auto dev = [&](const Tensor& t) {  // the same view of a device copy of t's storage layout
        if (layout == 1 && &t == &a) return to_gpu(random_cpu({B, k, M}, dt, 50, 1.0)).transpose(1, 2);
        if (layout == 3 && &t == &a) return to_gpu(random_cpu({1, M, k}, dt, 50, 1.0)).expand({B, M, k});
        if (layout == 2 && &t == &b) return to_gpu(random_cpu({B, N, k}, dt, 51, 1.0)).transpose(1, 2);
        return to_gpu(t);
      };
      Tensor want = out0;
      Tensor got = to_gpu(out0);
      for (auto [alpha, beta] : {std::pair{1.0, 0.0}, std::pair{0.5, 0.25}}) {
        host().bmm(view(want), a, b, alpha, beta);
        gpu().bmm(view(got), dev(a), dev(b), alpha, beta);
        const std::string what = std::string("bmm ") + dtype_name(dt) + " layout " + std::to_string(layout) +
                                 " alpha " + std::to_string(alpha);
        expect_close(got, want, dt == DType::bf16 ? 3e-2 : (dt == DType::f16 ? 5e-3 : 1e-4),
                     dt == DType::f64 ? 1e-12 : 1e-3, what);
      }
    }
  }
}

TEST(CudaBackend, BmmWithAnEmptyInnerDimensionScalesTheOutputByBeta) {
  SKIP_WITHOUT_CUDA_DEVICE();
  Tensor out0 = random_cpu({2, 3, 4}, DType::f32, 53, 1.0);
  Tensor a = gpu_empty({2, 3, 0}, DType::f32), b = gpu_empty({2, 0, 4}, DType::f32);
  Tensor got = to_gpu(out0);
  gpu().bmm(got, a, b, 1.0, 0.5);
  expect_same(got, ops::mul(out0, 0.5), "bmm K=0 beta=0.5");
  gpu().bmm(got, a, b, 1.0, 0.0);
  expect_same(got, ops::zeros({2, 3, 4}), "bmm K=0 beta=0");
}

// f32 GEMMs multiply in f32 unless the thread holds ops::AllowTf32Guard: then inputs round to
// TF32's 10-bit mantissa (relative error ~1e-3 over K = 1024 products), the CPU does not change.
TEST(CudaBackend, Tf32OnlyInsideTheGuard) {
  SKIP_WITHOUT_CUDA_DEVICE();
  const int64_t B = 2, M = 64, K = 1024, N = 48;
  Tensor a = random_cpu({B, M, K}, DType::f32, 60, 1.0), b = random_cpu({B, K, N}, DType::f32, 61, 1.0);
  Tensor want = ops::zeros({B, M, N});
  host().bmm(want, a, b, 1.0, 0.0);
  Tensor strict = gpu_empty({B, M, N}, DType::f32), tf32 = gpu_empty({B, M, N}, DType::f32);
  gpu().bmm(strict, to_gpu(a), to_gpu(b), 1.0, 0.0);
  {
    ops::AllowTf32Guard allow;
    EXPECT_TRUE(ops::tf32_allowed());
    gpu().bmm(tf32, to_gpu(a), to_gpu(b), 1.0, 0.0);
    Tensor cpu_in_guard = ops::zeros({B, M, N});
    host().bmm(cpu_in_guard, a, b, 1.0, 0.0);
    expect_same(cpu_in_guard, want, "CPU bmm inside AllowTf32Guard");
  }
  EXPECT_FALSE(ops::tf32_allowed());
  expect_close(strict, want, 1e-4, 1e-3, "f32 bmm outside the guard");
  expect_close(tf32, want, 2e-2, 0.5, "f32 bmm inside AllowTf32Guard (TF32)");
}

// ---------------------------------------------------------------------------------------
// Row kernels

TEST(CudaBackend, SoftmaxForwardAndBackwardMatchTheCpu) {
  SKIP_WITHOUT_CUDA_DEVICE();
  for (DType dt : {DType::f32, DType::f64}) {
    for (auto [R, C] : {std::pair<int64_t, int64_t>{5, 7}, {3, 1000}, {2, 4099}}) {
      for (bool log : {false, true}) {
        const std::string what = std::string(log ? "log_softmax " : "softmax ") + dtype_name(dt) + " C=" +
                                 std::to_string(C);
        Tensor x = random_cpu({R, C}, dt, 60, 3.0), g = random_cpu({R, C}, dt, 61, 1.0);
        Tensor y = cpu_empty({R, C}, dt), yg = gpu_empty({R, C}, dt);
        host().softmax(y, x, log);
        gpu().softmax(yg, to_gpu(x), log);
        expect_close(yg, y, dt == DType::f64 ? 1e-12 : 1e-5, 1e-7, what);
        Tensor dx = cpu_empty({R, C}, dt), dxg = gpu_empty({R, C}, dt);
        host().softmax_backward(dx, g, y, log);
        gpu().softmax_backward(dxg, to_gpu(g), to_gpu(y), log);
        expect_close(dxg, dx, dt == DType::f64 ? 1e-10 : 1e-4, 1e-6, what + " backward");
      }
    }
  }
}

TEST(CudaBackend, LayerNormForwardAndBackwardMatchTheCpu) {
  SKIP_WITHOUT_CUDA_DEVICE();
  for (DType dt : {DType::f32, DType::f64}) {
    // A warp per row up to 1024 columns (tiles of 4 to 32 per lane), a block per row above; 3000
    // rows make 47 chunks of weight/bias partials.
    for (auto [R, C] : {std::pair<int64_t, int64_t>{6, 10}, {4, 1000}, {700, 33}, {3000, 768}, {5, 1500}}) {
      for (bool affine : {false, true}) {
        const std::string what = std::string("layer_norm ") + dtype_name(dt) + " [" + std::to_string(R) + ", " +
                                 std::to_string(C) + "]" + (affine ? " affine" : "");
        Tensor x = random_cpu({R, C}, dt, 70, 2.0), g = random_cpu({R, C}, dt, 71, 1.0);
        Tensor w = affine ? random_cpu({C}, dt, 72, 1.0) : Tensor();
        Tensor b = affine ? random_cpu({C}, dt, 73, 1.0) : Tensor();
        auto dev = [](const Tensor& t) { return t.defined() ? to_gpu(t) : Tensor(); };
        Tensor y = cpu_empty({R, C}, dt), mu = cpu_empty({R}, dt), rs = cpu_empty({R}, dt);
        Tensor yg = gpu_empty({R, C}, dt), mug = gpu_empty({R}, dt), rsg = gpu_empty({R}, dt);
        host().layer_norm(y, mu, rs, x, w, b, 1e-5);
        gpu().layer_norm(yg, mug, rsg, to_gpu(x), dev(w), dev(b), 1e-5);
        const double rtol = dt == DType::f64 ? 1e-11 : 1e-5;
        expect_close(yg, y, rtol, 1e-6, what);
        expect_close(mug, mu, rtol, 1e-7, what + " mean");
        expect_close(rsg, rs, rtol, 1e-7, what + " rstd");
        Tensor dx = cpu_empty({R, C}, dt), dw = cpu_empty({C}, dt), db = cpu_empty({C}, dt);
        Tensor dxg = gpu_empty({R, C}, dt), dwg = gpu_empty({C}, dt), dbg = gpu_empty({C}, dt);
        host().layer_norm_backward(dx, dw, db, g, x, mu, rs, w);
        gpu().layer_norm_backward(dxg, dwg, dbg, to_gpu(g), to_gpu(x), mug, rsg, dev(w));
        expect_close(dxg, dx, dt == DType::f64 ? 1e-10 : 1e-4, 1e-5, what + " dx");
        expect_close(dwg, dw, dt == DType::f64 ? 1e-10 : 1e-4, 1e-5, what + " dw");
        expect_close(dbg, db, dt == DType::f64 ? 1e-10 : 1e-4, 1e-5, what + " db");
      }
    }
  }
}

TEST(CudaBackend, CrossEntropyForwardAndBackwardMatchTheCpu) {
  SKIP_WITHOUT_CUDA_DEVICE();
  const int64_t ignore = -100;
  for (DType dt : {DType::f32, DType::f64}) {
    for (int64_t V : {int64_t(10), int64_t(1000)}) {
      const int64_t R = 9;
      std::vector<int64_t> t(static_cast<size_t>(R));
      for (int64_t r = 0; r < R; ++r) t[size_t(r)] = r % 4 == 3 ? ignore : (r * 37) % V;
      Tensor target = ops::from_vector(t, {R});
      Tensor x = random_cpu({R, V}, dt, 80, 3.0), gl = random_cpu({R}, dt, 81, 1.0);
      Tensor loss = cpu_empty({R}, dt), lse = cpu_empty({R}, dt);
      Tensor lossg = gpu_empty({R}, dt), lseg = gpu_empty({R}, dt);
      host().cross_entropy(loss, lse, x, target, ignore);
      gpu().cross_entropy(lossg, lseg, to_gpu(x), to_gpu(target), ignore);
      const std::string what = std::string("cross_entropy ") + dtype_name(dt) + " V=" + std::to_string(V);
      const double rtol = dt == DType::f64 ? 1e-12 : 1e-5;
      expect_close(lossg, loss, rtol, 1e-6, what);
      expect_close(lseg, lse, rtol, 1e-6, what + " lse");
      Tensor dx = cpu_empty({R, V}, dt), dxg = gpu_empty({R, V}, dt);
      host().cross_entropy_backward(dx, gl, x, lse, target, ignore);
      gpu().cross_entropy_backward(dxg, to_gpu(gl), to_gpu(x), lseg, to_gpu(target), ignore);
      expect_close(dxg, dx, dt == DType::f64 ? 1e-11 : 1e-5, 1e-7, what + " backward");
    }
  }
}

// The fused kernel (one read of each row for loss, lse and gradient) against the CPU's two
// kernels; its gradient has the backward kernel's bits for the lse it wrote, in place (the LM
// head overwrites its logits) and in bf16 as well. V = 50257 runs many tiles per thread, so the
// running max is rescaled along the row.
TEST(CudaBackend, CrossEntropyWithGradMatchesTheCpuAndTheBackwardKernelsBits) {
  SKIP_WITHOUT_CUDA_DEVICE();
  const int64_t ignore = -100;
  for (DType dt : {DType::f32, DType::f64}) {
    for (int64_t V : {int64_t(10), int64_t(1000), int64_t(50257)}) {
      const int64_t R = 9;
      std::vector<int64_t> t(static_cast<size_t>(R));
      for (int64_t r = 0; r < R; ++r) t[size_t(r)] = r % 4 == 3 ? ignore : (r * 37) % V;
      Tensor target = ops::from_vector(t, {R});
      // A rising ramp on top of the noise: each tile's max exceeds the last one's.
      Tensor ramp = ops::mul(ops::arange(0, double(V), 1, TensorOptions(dt)), 8.0 / double(V));
      Tensor x = ops::add(random_cpu({R, V}, dt, 84, 3.0), ramp), gl = random_cpu({R}, dt, 85, 1.0);
      Tensor loss = cpu_empty({R}, dt), lse = cpu_empty({R}, dt), dx = cpu_empty({R, V}, dt);
      host().cross_entropy_with_grad(loss, lse, dx, gl, x, target, ignore);
      const Tensor xg = to_gpu(x), tg = to_gpu(target), glg = to_gpu(gl);
      Tensor lossg = gpu_empty({R}, dt), lseg = gpu_empty({R}, dt), dxg = gpu_empty({R, V}, dt);
      gpu().cross_entropy_with_grad(lossg, lseg, dxg, glg, xg, tg, ignore);
      const std::string what =
          std::string("cross_entropy_with_grad ") + dtype_name(dt) + " V=" + std::to_string(V);
      const double rtol = dt == DType::f64 ? 1e-12 : 1e-5;
      expect_close(lossg, loss, rtol, 1e-6, what);
      expect_close(lseg, lse, rtol, 1e-6, what + " lse");
      expect_close(dxg, dx, dt == DType::f64 ? 1e-11 : 1e-5, 1e-7, what + " gradient");
      Tensor twice = gpu_empty({R, V}, dt);
      gpu().cross_entropy_backward(twice, glg, xg, lseg, tg, ignore);
      expect_same(dxg, twice, what + ": the backward kernel's bits");
      Tensor inplace = to_gpu(x), loss2 = gpu_empty({R}, dt), lse2 = gpu_empty({R}, dt);
      gpu().cross_entropy_with_grad(loss2, lse2, inplace, glg, inplace, tg, ignore);
      expect_same(inplace, dxg, what + ": in place");
      expect_same(loss2, lossg, what + ": loss in place");
      if (dt == DType::f32) {
        Tensor narrow = Tensor::empty({R, V}, DType::bf16, xg.device());
        gpu().cross_entropy_with_grad(loss2, lse2, narrow, glg, xg, tg, ignore);
        expect_same(narrow, dxg.to(DType::bf16), what + ": bf16");
      }
    }
  }
  Tensor x = to_gpu(random_cpu({2, 5}, DType::f32, 86));
  Tensor target = to_gpu(ops::from_vector(std::vector<int64_t>{1, 5}, {2}));
  Tensor loss = gpu_empty({2}, DType::f32), lse = gpu_empty({2}, DType::f32),
         g = gpu_empty({2, 5}, DType::f32);
  EXPECT_THROW(
      gpu().cross_entropy_with_grad(loss, lse, g, to_gpu(random_cpu({2}, DType::f32, 87)), x, target, -100),
      IndexError);
}

TEST(CudaBackend, CrossEntropyRejectsATargetOutOfRange) {
  SKIP_WITHOUT_CUDA_DEVICE();
  Tensor x = to_gpu(random_cpu({2, 5}, DType::f32, 82));
  Tensor target = to_gpu(ops::from_vector(std::vector<int64_t>{1, 5}, {2}));
  Tensor loss = gpu_empty({2}, DType::f32), lse = gpu_empty({2}, DType::f32);
  EXPECT_THROW(gpu().cross_entropy(loss, lse, x, target, -100), IndexError);
}

TEST(CudaBackend, AttentionForwardAndBackwardMatchTheCpu) {
  SKIP_WITHOUT_CUDA_DEVICE();
  const double ninf = -std::numeric_limits<double>::infinity();
  const int64_t B = 2, H = 3, T = 5, S = 7, D = 4, Dv = 6;
  for (DType dt : {DType::f32, DType::f64}) {
    for (int variant = 0; variant < 3; ++variant) {  // 0 plain, 1 causal, 2 broadcast mask with a dead row
      const bool causal = variant == 1;
      Tensor q = random_cpu({B, H, T, D}, dt, 100), k = random_cpu({B, H, S, D}, dt, 101);
      Tensor v = random_cpu({B, H, S, Dv}, dt, 102), go = random_cpu({B, H, T, Dv}, dt, 103);
      Tensor mask, mask_g;
      if (variant == 2) {
        Tensor m = random_cpu({1, 1, T, S}, dt, 104);
        host().fill(m.select(2, 3), ninf);  // query 3 sees no key
        mask = m.expand({B, H, T, S});
        mask_g = to_gpu(m).expand({B, H, T, S});
      }
      const double scale = 0.4;
      Tensor o = cpu_empty({B, H, T, Dv}, dt), lse = cpu_empty({B, H, T}, dt);
      Tensor og = gpu_empty({B, H, T, Dv}, dt), lseg = gpu_empty({B, H, T}, dt);
      host().attention(o, lse, q, k, v, mask, causal, scale);
      gpu().attention(og, lseg, to_gpu(q), to_gpu(k), to_gpu(v), mask_g, causal, scale);
      const std::string what = std::string("attention ") + dtype_name(dt) + " variant " + std::to_string(variant);
      const double rtol = dt == DType::f64 ? 1e-11 : 1e-5;
      expect_close(og, o, rtol, 1e-6, what);
      expect_close(lseg, lse, rtol, 1e-6, what + " lse");
      Tensor dq = cpu_empty(q.shape(), dt), dk = cpu_empty(k.shape(), dt), dv = cpu_empty(v.shape(), dt);
      Tensor dqg = gpu_empty(q.shape(), dt), dkg = gpu_empty(k.shape(), dt), dvg = gpu_empty(v.shape(), dt);
      host().attention_backward(dq, dk, dv, go, q, k, v, o, lse, mask, causal, scale);
      gpu().attention_backward(dqg, dkg, dvg, to_gpu(go), to_gpu(q), to_gpu(k), to_gpu(v), og, lseg, mask_g, causal,
                               scale);
      const double brtol = dt == DType::f64 ? 1e-10 : 1e-4;
      expect_close(dqg, dq, brtol, 1e-5, what + " dq");
      expect_close(dkg, dk, brtol, 1e-5, what + " dk");
      expect_close(dvg, dv, brtol, 1e-5, what + " dv");
      // Heads in place, as scaled_dot_product_attention allocates out ([B, T, H, Dv] memory, so
      // the merge of the heads is a view) and as dO arrives through that merge: written and read
      // through their strides, with the same results.
      Tensor ogs = ops::transpose(gpu_empty({B, T, H, Dv}, dt), 1, 2), lsegs = gpu_empty({B, H, T}, dt);
      ASSERT_FALSE(ogs.is_contiguous());
      gpu().attention(ogs, lsegs, to_gpu(q), to_gpu(k), to_gpu(v), mask_g, causal, scale);
      expect_close(ops::contiguous(ogs), o, rtol, 1e-6, what + " heads in place");
      Tensor gos = ops::transpose(to_gpu(ops::contiguous(ops::transpose(go, 1, 2))), 1, 2);
      Tensor dqs = gpu_empty(q.shape(), dt), dks = gpu_empty(k.shape(), dt), dvs = gpu_empty(v.shape(), dt);
      gpu().attention_backward(dqs, dks, dvs, gos, to_gpu(q), to_gpu(k), to_gpu(v), ogs, lsegs, mask_g, causal, scale);
      expect_close(dqs, dq, brtol, 1e-5, what + " dq, heads in place");
      expect_close(dks, dk, brtol, 1e-5, what + " dk, heads in place");
      expect_close(dvs, dv, brtol, 1e-5, what + " dv, heads in place");
    }
  }
}

// ---------------------------------------------------------------------------------------
// Indexing

TEST(CudaBackend, IndexKernelsMatchTheCpuExactly) {
  SKIP_WITHOUT_CUDA_DEVICE();
  Tensor idx = ops::from_vector(std::vector<int64_t>{2, 0, 2, 3, 2, 1}, {6});
  Tensor idxg = to_gpu(idx);
  for (DType dt : {DType::f32, DType::f64, DType::i64, DType::i32, DType::bf16}) {
    for (int64_t dim : {0, 1}) {
      const std::string what = std::string(dtype_name(dt)) + " dim " + std::to_string(dim);
      Shape in_shape = dim == 0 ? Shape{4, 5} : Shape{3, 4, 5};
      Tensor x = random_cpu(in_shape, dt, 90, 3.0);
      Shape sel = in_shape;
      sel[size_t(dim)] = 6;
      // index_select
      Tensor want = cpu_empty(sel, dt), got = gpu_empty(sel, dt);
      host().index_select(want, x, dim, idx);
      gpu().index_select(got, to_gpu(x), dim, idxg);
      expect_same(got, want, "index_select " + what);
      // index_add with repeated indices: the CPU's order, so the same bits
      Tensor src = random_cpu(sel, dt, 91, 3.0);
      Tensor acc = x.clone(), accg = to_gpu(x);
      host().index_add(acc, dim, idx, src);
      gpu().index_add(accg, dim, idxg, to_gpu(src));
      expect_same(accg, acc, "index_add " + what);
      // gather / scatter_add with an index of x's rank
      Shape ishape = in_shape;
      ishape[size_t(dim)] = 7;
      std::vector<int64_t> iv(size_t(shape_numel(ishape)));
      for (size_t i = 0; i < iv.size(); ++i) iv[i] = int64_t((i * 7 + 3) % size_t(in_shape[size_t(dim)]));
      Tensor gidx = ops::from_vector(iv, ishape);
      Tensor gw = cpu_empty(ishape, dt), gg = gpu_empty(ishape, dt);
      host().gather(gw, x, dim, gidx);
      gpu().gather(gg, to_gpu(x), dim, to_gpu(gidx));
      expect_same(gg, gw, "gather " + what);
      Tensor ssrc = random_cpu(ishape, dt, 92, 3.0);
      Tensor sw = x.clone(), sg = to_gpu(x);
      host().scatter_add(sw, dim, gidx, ssrc);
      gpu().scatter_add(sg, dim, to_gpu(gidx), to_gpu(ssrc));
      expect_same(sg, sw, "scatter_add " + what);
    }
  }
}

TEST(CudaBackend, IndexOutOfRangeIsAnIndexError) {
  SKIP_WITHOUT_CUDA_DEVICE();
  Tensor x = to_gpu(random_cpu({4, 3}, DType::f32, 93));
  Tensor bad = to_gpu(ops::from_vector(std::vector<int64_t>{0, 4}, {2}));
  Tensor out = gpu_empty({2, 3}, DType::f32);
  EXPECT_THROW(gpu().index_select(out, x, 0, bad), IndexError);
  EXPECT_THROW(gpu().index_add(x, 0, bad, out), IndexError);
  Tensor gbad = to_gpu(ops::from_vector(std::vector<int64_t>{0, 1, -1, 0, 1, 2}, {2, 3}));
  EXPECT_THROW(gpu().gather(out, x, 0, gbad), IndexError);
  EXPECT_THROW(gpu().scatter_add(x, 0, gbad, out), IndexError);
}

// ---------------------------------------------------------------------------------------
// Random numbers

TEST(CudaBackend, PhiloxFillsGiveTheCpuNumbers) {
  SKIP_WITHOUT_CUDA_DEVICE();
  const RngState s{1234, 8};
  for (DType dt : {DType::f32, DType::bf16, DType::f16, DType::f64}) {
    for (bool strided : {false, true}) {
      const std::string what = std::string(dtype_name(dt)) + (strided ? " strided" : "");
      Tensor want = cpu_empty({6, 50}, dt), got = gpu_empty({6, 50}, dt);
      Tensor wv = strided ? want.slice(1, 0, 50, 2) : want, gv = strided ? got.slice(1, 0, 50, 2) : got;
      host().fill(want, 0.0);
      gpu().fill(got, 0.0);
      host().random_uniform(wv, s, -2.0, 3.0);
      gpu().random_uniform(gv, s, -2.0, 3.0);
      // f64 keeps the double transform, whose last bit can differ: libm's log/cos differ by an
      // ulp, and the CPU compiler may fuse mean + std * r * c into an FMA.
      const bool f64 = dt == DType::f64;
      expect_close(got, want, f64 ? 1e-14 : 0, f64 ? 1e-15 : 0, "uniform " + what);
      host().random_normal(wv, s, 0.5, 2.0);
      gpu().random_normal(gv, s, 0.5, 2.0);
      expect_close(got, want, f64 ? 1e-14 : 0, f64 ? 1e-15 : 0, "normal " + what);
    }
  }
}

// ---------------------------------------------------------------------------------------
// Memory, streams, events

TEST(CudaBackend, CachingAllocatorAccountsByCategoryAndReusesBlocks) {
  SKIP_WITHOUT_CUDA_DEVICE();
  Allocator& a = gpu().allocator(0);
  a.empty_cache();
  const MemorySnapshot before = a.stats().snapshot();
  void* p = a.allocate(1000, MemoryCategory::Parameter);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kAllocAlignment, 0u);
  MemorySnapshot s = a.stats().snapshot();
  EXPECT_EQ(s.current_of(MemoryCategory::Parameter) - before.current_of(MemoryCategory::Parameter), 1000);
  EXPECT_GE(s.reserved, before.reserved);
  const bool fresh_segment = s.reserved > before.reserved;
  void* q = a.allocate(3 << 20, MemoryCategory::SavedActivation);  // large pool
  EXPECT_EQ(reinterpret_cast<uintptr_t>(q) % kAllocAlignment, 0u);
  a.retag(3 << 20, MemoryCategory::SavedActivation, MemoryCategory::HostPool);
  a.deallocate(q, 3 << 20, MemoryCategory::HostPool);
  a.deallocate(p, 1000, MemoryCategory::Parameter);
  void* p2 = a.allocate(900, MemoryCategory::Temporary);  // same 1024-byte class: the cached block
  if (fresh_segment) {
    EXPECT_EQ(p2, p);
  }
  a.deallocate(p2, 900, MemoryCategory::Temporary);
  s = a.stats().snapshot();
  EXPECT_EQ(s.total_current, before.total_current);
  a.empty_cache();
  EXPECT_EQ(a.stats().snapshot().reserved, before.reserved);
  // Odd sizes stay 64-byte aligned when cut from one segment.
  std::vector<std::pair<void*, size_t>> blocks;
  for (size_t n : {size_t(1), size_t(100), size_t(513), size_t(4097), size_t(70000)}) {
    void* b = a.allocate(n, MemoryCategory::Temporary);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % kAllocAlignment, 0u) << n;
    blocks.emplace_back(b, n);
  }
  for (auto [b, n] : blocks) a.deallocate(b, n, MemoryCategory::Temporary);
}

TEST(CudaBackend, PinnedHostAllocatorIsAlignedAndAccounted) {
  SKIP_WITHOUT_CUDA_DEVICE();
  Allocator& h = gpu().host_allocator();
  EXPECT_TRUE(h.device().is_cpu());
  const int64_t before = h.stats().snapshot().current_of(MemoryCategory::HostPool);
  void* p = h.allocate(12345, MemoryCategory::HostPool);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kAllocAlignment, 0u);
  std::memset(p, 1, 12345);
  EXPECT_EQ(h.stats().snapshot().current_of(MemoryCategory::HostPool) - before, 12345);
  // A pinned host tensor copies to and from the device.
  auto storage = std::make_shared<StorageImpl>(p, 12345, kCPU, nullptr);
  Tensor t = Tensor::from_storage(storage, {12345}, {1}, 0, DType::u8);
  Tensor back = cpu_empty({12345}, DType::u8);
  gpu().copy(back, to_gpu(t));
  expect_same(back, t, "pinned round trip");
  h.deallocate(p, 12345, MemoryCategory::HostPool);
  EXPECT_EQ(h.stats().snapshot().current_of(MemoryCategory::HostPool), before);
  h.empty_cache();
}

TEST(CudaBackend, StreamsRunHostTasksInOrderAndRethrowTheirErrors) {
  SKIP_WITHOUT_CUDA_DEVICE();
  auto s = gpu().create_stream(0);
  EXPECT_TRUE(s->device().is_cuda());
  EXPECT_NE(s->native_handle(), nullptr);
  std::vector<int> order;
  for (int i = 0; i < 5; ++i) s->enqueue([&order, i] { order.push_back(i); });
  s->synchronize();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
  s->enqueue([] { throw ValueError("task failed"); });
  EXPECT_THROW(s->synchronize(), ValueError);
  EXPECT_NO_THROW(s->synchronize());  // reported once

  auto e = gpu().create_event();
  EXPECT_TRUE(e->query());  // never recorded
  auto other = gpu().create_stream(0);
  bool ran = false;
  s->enqueue([&ran] { ran = true; });
  e->record(*s);
  other->wait(*e);
  e->synchronize();
  EXPECT_TRUE(ran);
  EXPECT_TRUE(e->query());
  other->synchronize();
  EXPECT_NO_THROW(gpu().synchronize(0));
}

}  // namespace
}  // namespace strata

namespace strata {
namespace {

// A long index_add (an embedding's backward: 20,000 token ids into 300 rows, most repeated) takes
// the sorted path on CUDA and still sums every row in the index's order: the CPU's bits, also
// along dim 1.
TEST(CudaBackend, LongIndexAddSortsButKeepsTheCpusBits) {
  SKIP_WITHOUT_CUDA_DEVICE();
  manual_seed(21);
  const int64_t n = 20000;
  std::vector<int64_t> ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ids[size_t(i)] = (i * i * 7 + i * 13) % (i % 5 == 0 ? 3 : 300);
  Tensor index = ops::from_vector(ids, {n});
  Tensor src = ops::randn({n, 70}), base = ops::randn({300, 70});
  Tensor want = ops::index_add(base, 0, index, src);
  Tensor got = ops::index_add(base.to(cuda(0)), 0, index.to(cuda(0)), src.to(cuda(0)));
  EXPECT_EQ(got.to(kCPU).to_double_vector(), want.to_double_vector());
  Tensor src1 = ops::randn({2, n, 40}), base1 = ops::randn({2, 300, 40});
  EXPECT_EQ(
      ops::index_add(base1.to(cuda(0)), 1, index.to(cuda(0)), src1.to(cuda(0))).to(kCPU).to_double_vector(),
      ops::index_add(base1, 1, index, src1).to_double_vector());
}

// A hub row (10,000 of 22,000 entries: a graph's scatter onto a high-degree node) is summed in
// pieces, a warp each: within rounding of the CPU's sequential sum, the same bits on every run;
// the other rows keep the CPU's bits. Also along dim 1.
TEST(CudaBackend, LongIndexAddSumsAHubRowInPiecesTheSameEveryRun) {
  SKIP_WITHOUT_CUDA_DEVICE();
  manual_seed(22);
  const int64_t n = 22000, rows = 200;
  std::vector<int64_t> ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ids[size_t(i)] = i % 11 < 5 ? 7 : (i * 31 + 3) % rows;
  Tensor index = ops::from_vector(ids, {n});
  for (int64_t dim : {0, 1}) {
    SCOPED_TRACE("dim " + std::to_string(dim));
    Tensor src = dim == 0 ? ops::randn({n, 40}) : ops::randn({2, n, 24});
    Tensor base = dim == 0 ? ops::randn({rows, 40}) : ops::randn({2, rows, 24});
    Tensor want = ops::index_add(base, dim, index, src);
    auto on_device = [&] {
      return ops::index_add(base.to(cuda(0)), dim, index.to(cuda(0)), src.to(cuda(0))).to(kCPU);
    };
    Tensor got = on_device();
    EXPECT_EQ(on_device().to_double_vector(), got.to_double_vector());
    Tensor hub_w = ops::select(want, dim, 7), hub_g = ops::select(got, dim, 7);
    const double scale = ops::max(ops::abs(hub_w)).item();
    EXPECT_LE(ops::max(ops::abs(ops::sub(hub_g, hub_w))).item(), 1e-5 * std::max(1.0, scale));
    for (int64_t r : {0, 6, 8, 199}) {
      SCOPED_TRACE("row " + std::to_string(r));
      EXPECT_EQ(ops::contiguous(ops::select(got, dim, r)).to_double_vector(),
                ops::contiguous(ops::select(want, dim, r)).to_double_vector());
    }
  }
}

// max/min/argmax/argmin of a few long rows split each row into chunks (a graph index's range
// check reads 16M entries): the CPU's results, ties to the first index and the first NaN kept.
TEST(CudaBackend, ExtremaOfLongRowsSplitIntoChunksAndKeepTheCpusAnswers) {
  SKIP_WITHOUT_CUDA_DEVICE();
  manual_seed(23);
  const int64_t n = 200003;
  Tensor x = ops::randn({3, n});
  std::vector<double> v = x.to_double_vector();
  v[size_t(n + 70000)] = v[size_t(n + 150000)] = 9.0;                    // row 1: a tie, the first wins
  v[size_t(2 * n + 123456)] = std::numeric_limits<double>::quiet_NaN();  // row 2: a NaN
  v[size_t(2 * n + 190000)] = std::numeric_limits<double>::quiet_NaN();
  x = ops::from_vector(v, {3, n}, TensorOptions(DType::f32));
  const Tensor xg = x.to(cuda(0));
  expect_same(ops::max(xg, 1).values, ops::max(x, 1).values, "max");
  expect_same(ops::min(xg, 1).indices, ops::min(x, 1).indices, "min's indices");
  expect_same(ops::argmax(xg, 1), ops::argmax(x, 1), "argmax");
  expect_same(ops::argmin(xg, 1), ops::argmin(x, 1), "argmin");
  std::vector<int64_t> ids(size_t(n), 5);
  ids[77777] = -3;
  const Tensor index = ops::from_vector(ids, {n});
  expect_same(ops::min(index.to(cuda(0))), ops::min(index), "min of an index");
  expect_same(ops::max(index.to(cuda(0))), ops::max(index), "max of an index");
}

// arange is made on the device (no host copy) with the CPU's values in every dtype.
TEST(CudaBackend, ArangeIsMadeOnTheDeviceWithTheCpusValues) {
  SKIP_WITHOUT_CUDA_DEVICE();
  for (DType dt : {DType::i64, DType::i32, DType::f32, DType::f64, DType::bf16, DType::f16}) {
    SCOPED_TRACE(dtype_name(dt));
    for (auto [start, end, step] : {std::tuple{0.0, 5000.0, 1.0}, std::tuple{3.5, -20.0, -0.75}}) {
      Tensor want = arange(start, end, step, TensorOptions(dt));
      Tensor got = arange(start, end, step, TensorOptions(dt).device(cuda(0)));
      EXPECT_EQ(got.device(), cuda(0));
      EXPECT_EQ(got.to(kCPU).to_double_vector(), want.to_double_vector());
    }
  }
}

}  // namespace
}  // namespace strata
