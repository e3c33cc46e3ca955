#include "strata/core/allocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "strata/ops.h"

using namespace strata;

TEST(CachingCpuAllocator, BlocksAre64ByteAlignedAndReused) {
  CachingCpuAllocator a;
  void* p = a.allocate(1000, MemoryCategory::Temporary);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  a.deallocate(p, 1000, MemoryCategory::Temporary);
  void* q = a.allocate(990, MemoryCategory::Temporary);
  EXPECT_EQ(p, q) << "a freed block of the same size class is reused";
  a.deallocate(q, 990, MemoryCategory::Temporary);
  EXPECT_GT(a.stats().snapshot().reserved, 0);
  a.empty_cache();
  EXPECT_EQ(a.stats().snapshot().reserved, 0);
}

TEST(CachingCpuAllocator, PastTheHighWaterMarkAMissReturnsCachedBlocks) {
  constexpr size_t kMiB = size_t(1) << 20;
  // One live block at a time, of growing sizes: cached, they add up to 1 + 2 + ... + 8 = 36 MiB.
  auto most_held = [&](CachingCpuAllocator& a) {
    int64_t most = 0;
    for (size_t mb = 1; mb <= 8; ++mb) {
      void* p = a.allocate(mb * kMiB, MemoryCategory::Temporary);
      most = std::max(most, a.stats().snapshot().reserved);
      a.deallocate(p, mb * kMiB, MemoryCategory::Temporary);
    }
    return most;
  };
  CachingCpuAllocator roomy(size_t(1) << 30, size_t(1) << 30), tight(size_t(1) << 30, 10 * kMiB);
  EXPECT_EQ(most_held(roomy), int64_t(36 * kMiB)) << "under the mark every block stays cached";
  EXPECT_LE(most_held(tight), int64_t(10 * kMiB)) << "past it the cache gives way";
  // A step that repeats its sizes under the mark finds them cached: the same blocks come back.
  void* x = tight.allocate(3 * kMiB, MemoryCategory::Temporary);
  void* y = tight.allocate(5 * kMiB, MemoryCategory::Temporary);
  tight.deallocate(x, 3 * kMiB, MemoryCategory::Temporary);
  tight.deallocate(y, 5 * kMiB, MemoryCategory::Temporary);
  EXPECT_EQ(tight.allocate(3 * kMiB, MemoryCategory::Temporary), x);
  EXPECT_EQ(tight.allocate(5 * kMiB, MemoryCategory::Temporary), y);
  tight.deallocate(x, 3 * kMiB, MemoryCategory::Temporary);
  tight.deallocate(y, 5 * kMiB, MemoryCategory::Temporary);
}

TEST(MemoryStats, CategoriesTrackCurrentAndPeakAndRetag) {
  CachingCpuAllocator a;
  void* p = a.allocate(4096, MemoryCategory::Parameter);
  void* q = a.allocate(1024, MemoryCategory::Temporary);
  MemorySnapshot s = a.stats().snapshot();
  EXPECT_EQ(s.current_of(MemoryCategory::Parameter), 4096);
  EXPECT_EQ(s.current_of(MemoryCategory::Temporary), 1024);
  EXPECT_EQ(s.total_current, 5120);
  a.retag(1024, MemoryCategory::Temporary, MemoryCategory::SavedActivation);
  s = a.stats().snapshot();
  EXPECT_EQ(s.current_of(MemoryCategory::Temporary), 0);
  EXPECT_EQ(s.current_of(MemoryCategory::SavedActivation), 1024);
  EXPECT_EQ(s.peak_of(MemoryCategory::Temporary), 1024);
  a.deallocate(q, 1024, MemoryCategory::SavedActivation);
  a.stats().reset_peaks();
  s = a.stats().snapshot();
  EXPECT_EQ(s.peak_of(MemoryCategory::SavedActivation), 0);
  EXPECT_EQ(s.total_peak, 4096);
  a.deallocate(p, 4096, MemoryCategory::Parameter);
  EXPECT_EQ(a.stats().snapshot().total_current, 0);
}

TEST(MemoryStats, TensorAllocationsUseTheGuardCategoryAndStorageRetags) {
  MemoryStats& st = cpu_allocator().stats();
  int64_t before = st.snapshot().current_of(MemoryCategory::OptimizerState);
  {
    MemoryCategoryGuard g(MemoryCategory::OptimizerState);
    Tensor t = ops::zeros({256});
    EXPECT_EQ(st.snapshot().current_of(MemoryCategory::OptimizerState) - before, 1024);
    t.storage()->set_category(MemoryCategory::Gradient);
    EXPECT_EQ(st.snapshot().current_of(MemoryCategory::OptimizerState) - before, 0);
  }
  EXPECT_EQ(MemoryCategoryGuard::current(), MemoryCategory::Temporary);
}

TEST(MemoryStats, SavedTensorsAreAccountedAsSavedActivationsUntilReleased) {
  MemoryStats& st = cpu_allocator().stats();
  auto saved = [&] { return st.snapshot().current_of(MemoryCategory::SavedActivation); };
  const int64_t before = saved();
  Tensor x = ops::randn({1024}, TensorOptions().requires_grad(true));
  Tensor y = ops::tanh(x);  // saves its output (4 KiB)
  Tensor z = ops::sum(ops::mul(y, y));  // saves y twice: still one storage
  EXPECT_EQ(saved() - before, 4096);
  z.backward();  // releases every saved tensor
  EXPECT_EQ(saved() - before, 0);
  EXPECT_EQ(y.storage()->category(), MemoryCategory::Temporary);
}

// A request the system refuses is an OutOfMemoryError naming the device, the size, the category,
// what is in use and the tensor it was for, and the allocator keeps working. (AddressSanitizer's
// allocator aborts on such a request instead of returning null, so the check is skipped there.)
TEST(CachingCpuAllocator, ARefusedRequestIsAnOutOfMemoryErrorNamingItsTensor) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer aborts on allocations it cannot serve";
#else
  const Shape huge{int64_t(1) << 50};  // 4 PiB of f32: more than any address space holds
  Tensor held = ops::zeros({1000});    // something in use for the message to list
  std::string msg;
  try {
    MemoryCategoryGuard g(MemoryCategory::SavedActivation);
    Tensor t = Tensor::empty(huge, DType::f32, kCPU);
    ADD_FAILURE() << "a 4 PiB tensor was allocated";
  } catch (const OutOfMemoryError& e) {
    msg = e.what();
  }
  for (const char* part : {"cpu out of memory: cannot allocate ", " for saved_activations; ", " in use (",
                           "(the system refused it)", "the request: a [1125899906842624] f32 tensor"})
    EXPECT_NE(msg.find(part), std::string::npos) << "missing \"" << part << "\" in: " << msg;
  EXPECT_EQ(msg.find("capacity"), std::string::npos) << msg;  // the host has no capacity of its own
  CachingCpuAllocator a;
  EXPECT_THROW(a.allocate(size_t(1) << 62, MemoryCategory::Temporary), OutOfMemoryError);
  EXPECT_THROW(a.allocate(SIZE_MAX, MemoryCategory::Temporary), OutOfMemoryError);  // no rounding overflow
  void* p = a.allocate(4096, MemoryCategory::Temporary);
  EXPECT_NE(p, nullptr);
  a.deallocate(p, 4096, MemoryCategory::Temporary);
#endif
}
