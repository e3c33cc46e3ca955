// The optimizers' device path: the Backend's composed AdamW and SGD updates and gradient norm (what
// a GPU backend without fused kernels runs, and the fused kernels' reference), checked against the
// host loops they replace.
#include <gtest/gtest.h>

#include <cmath>

#include "strata/strata.h"
#include "support/device_present.h"
#include "support/tensor_compare.h"

using namespace strata;

namespace {

Tensor values(int64_t n, uint64_t seed, DType dt) {
  manual_seed(seed);
  return ops::randn({n}, TensorOptions(dt));
}

// a within tol * (1 + |b|) of b, element by element.
void expect_close(const Tensor& a, const Tensor& b, double tol) {
  strata::testing::expect_close(a, b, tol, tol);
}

}  // namespace

TEST(DeviceUpdates, ComposedAdamWFollowsTheHostLoop) {
  for (DType dt : {DType::f64, DType::f32}) {
    Tensor p_loop = values(1000, 1, dt), p_comp = p_loop.clone();
    optim::AdamW opt({p_loop}, optim::AdamWOptions(3e-2).weight_decay(0.1));
    Tensor m = ops::zeros({1000}, TensorOptions(dt)), v = ops::zeros({1000}, TensorOptions(dt));
    for (int step = 1; step <= 4; ++step) {
      Tensor g = values(1000, 10 + step, dt);
      p_loop.set_grad(g);
      opt.step();
      backend_for(kCPU).Backend::adamw_update(p_comp, g, m, v,
                                              AdamWUpdate{3e-2, 0.9, 0.999, 1e-8, 0.1, double(step)});
    }
    expect_close(p_comp, p_loop, dt == DType::f64 ? 1e-12 : 2e-6);
    expect_close(m, opt.state_of(p_loop)->at("exp_avg"), dt == DType::f64 ? 1e-12 : 2e-6);
  }
}

TEST(DeviceUpdates, ComposedSgdFollowsTheHostLoop) {
  for (bool nesterov : {false, true}) {
    Tensor p_loop = values(500, 2, DType::f64), p_comp = p_loop.clone();
    optim::SGD opt({p_loop}, optim::SGDOptions(0.1).momentum(0.9).nesterov(nesterov).weight_decay(0.01));
    Tensor buf = ops::zeros({500}, TensorOptions(DType::f64));
    for (int step = 1; step <= 3; ++step) {
      Tensor g = values(500, 20 + step, DType::f64);
      p_loop.set_grad(g);
      opt.step();
      backend_for(kCPU).Backend::sgd_update(p_comp, g, buf,
                                            SgdUpdate{0.1, 0.9, 0.0, 0.01, nesterov, step == 1});
    }
    expect_close(p_comp, p_loop, 1e-12);
  }
}

TEST(DeviceUpdates, ComposedNormPowerSumsMatchTheirDefinition) {
  Tensor g = values(777, 3, DType::f32);
  std::vector<double> x = g.to_double_vector();
  double s1 = 0, s2 = 0, s3 = 0, mx = 0;
  for (double e : x)
    s1 += std::fabs(e), s2 += e * e, s3 += std::pow(std::fabs(e), 3.0), mx = std::max(mx, std::fabs(e));
  Backend& be = backend_for(kCPU);
  EXPECT_NEAR(be.Backend::norm_power_sum(g, 1.0), s1, 1e-9 * s1);
  EXPECT_NEAR(be.Backend::norm_power_sum(g, 2.0), s2, 1e-9 * s2);
  EXPECT_NEAR(be.Backend::norm_power_sum(g, 3.0), s3, 1e-9 * s3);
  EXPECT_EQ(be.Backend::norm_power_sum(g, INFINITY), mx);
}

// Four steps of the fused device updates against the optimizers' host loops: AdamW, and SGD with
// and without momentum, dampening, Nesterov and weight decay (the first step seeds the momentum
// buffer). The kernels round every operation; GCC contracts the host loops' multiply-adds into FMAs,
// so the two agree within a few ulps, not bit for bit (an H200 showed both).
TEST(CudaBackendOptimizers, FusedUpdatesFollowTheHostLoops) {
  SKIP_WITHOUT_CUDA_DEVICE();
  const Device gpu = cuda(0);
  // Four steps of one optimizer made by `make` on the CPU and on the device, from the same start.
  const auto four_steps_agree = [&](DType dt, uint64_t seed, const auto& make, const std::string& what) {
    Tensor p_cpu = values(4099, seed, dt), p_gpu = p_cpu.to(gpu);
    auto cpu_opt = make(p_cpu), gpu_opt = make(p_gpu);
    for (int step = 1; step <= 4; ++step) {
      const Tensor g = values(4099, 10 * seed + step, dt);
      p_cpu.set_grad(g);
      p_gpu.set_grad(g.to(gpu));
      cpu_opt.step();
      gpu_opt.step();
    }
    SCOPED_TRACE(std::string(dtype_name(dt)) + " " + what);
    expect_close(p_gpu.to(kCPU), p_cpu, dt == DType::f64 ? 1e-12 : 1e-5);
  };
  for (DType dt : {DType::f32, DType::f64}) {
    const std::vector<optim::SGDOptions> sgds = {
        optim::SGDOptions(0.1), optim::SGDOptions(0.1).momentum(0.9).weight_decay(1e-2),
        optim::SGDOptions(0.05).momentum(0.8).dampening(0.25),
        optim::SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(1e-4)};
    for (const optim::SGDOptions& o : sgds)
      four_steps_agree(
          dt, 5, [&](const Tensor& p) { return optim::SGD({p}, o); },
          "SGD momentum " + std::to_string(o.momentum()) + " nesterov " + std::to_string(o.nesterov()));
    four_steps_agree(
        dt, 6, [](const Tensor& p) { return optim::AdamW({p}, optim::AdamWOptions(3e-2).weight_decay(0.1)); },
        "AdamW");
  }
}
