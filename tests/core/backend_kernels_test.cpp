// The kernel list (strata/core/backend_kernels.def): what a backend that implements only the dense kernels
// gets from Backend for the others.
#include <gtest/gtest.h>

#include <string>

#include "strata/strata.h"
#include "support/error_of.h"

namespace strata {
namespace {

using testing::error_of;

// A backend with the dense kernels alone; each records that it ran and does nothing.
class DenseOnly final : public Backend {
 public:
  DeviceType type() const override { return DeviceType::Meta; }
  Allocator& allocator(int) override { return cpu_allocator(); }
  Allocator& host_allocator() override { return cpu_allocator(); }
  std::unique_ptr<Stream> create_stream(int) override { return nullptr; }
  std::unique_ptr<Event> create_event() override { return nullptr; }
  void synchronize(int) override {}
#define STRATA_DENSE_KERNEL(ret, name, params, args) \
  ret name params override { calls += std::string(calls.empty() ? "" : " ") + #name; }
#include "strata/core/backend_kernels.def"

  std::string calls;
};

TEST(BackendKernels, AKernelABackendLacksIsNotImplementedNamingTheKernelAndTheDevice) {
  DenseOnly b;
  const Tensor t = Tensor::empty({4, 4}, DType::f32, kMeta), none;
  EXPECT_EQ(error_of<NotImplementedError>([&] { b.spmm(t, t, t, none, none, t); }),
            "spmm: no kernel on meta");
  EXPECT_EQ(
      error_of<NotImplementedError>([&] { b.segment_mm_weight_grad(t, t, none, t, none, none, t, false); }),
      "segment_mm_weight_grad: no kernel on meta");
  EXPECT_EQ(error_of<NotImplementedError>([&] { b.conv2d(t, t, t, none, Conv2dParams{}); }),
            "conv2d: no kernel on meta");
  EXPECT_EQ(error_of<NotImplementedError>(
                [&] { b.attention_backward(t, t, t, t, t, t, t, t, t, none, true, 1.0); }),
            "attention_backward: no kernel on meta");
  EXPECT_TRUE(b.calls.empty()) << b.calls;
}

TEST(BackendKernels, AFusedKernelABackendLacksIsComposedOfItsDenseKernels) {
  DenseOnly b;
  const Tensor out = Tensor::empty({1, 2, 3}, DType::f32, kMeta),
               a = Tensor::empty({1, 2, 4}, DType::f32, kMeta),
               w = Tensor::empty({1, 4, 3}, DType::f32, kMeta), bias = Tensor::empty({3}, DType::f32, kMeta);
  b.bmm_bias(out, a, w, bias);
  EXPECT_EQ(b.calls, "copy bmm") << "the bias copied into out, then one GEMM adding to it";
  b.calls.clear();
  const Tensor loss = Tensor::empty({2}, DType::f32, kMeta),
               logits = Tensor::empty({2, 5}, DType::f32, kMeta),
               target = Tensor::empty({2}, DType::i64, kMeta);
  b.cross_entropy_with_grad(loss, loss, logits, loss, logits, target, -100);
  EXPECT_EQ(b.calls, "cross_entropy cross_entropy_backward");
}

}  // namespace
}  // namespace strata
