#include <gtest/gtest.h>

#include <cstdint>

#include "strata/core/allocator.h"
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
