#include <gtest/gtest.h>

#include "memory/tiers/extent_allocator.h"
#include "strata/core/error.h"

using strata::memory::ExtentAllocator;

TEST(ExtentAllocator, RoundsToAlignmentAndCoalescesOnFree) {
  ExtentAllocator a(64 * 4096, 4096);
  auto x = a.allocate(1);
  auto y = a.allocate(4097);
  auto z = a.allocate(3 * 4096);
  ASSERT_TRUE(x && y && z);
  EXPECT_EQ(*x, 0u);
  EXPECT_EQ(*y, 4096u);
  EXPECT_EQ(*z, 3 * 4096u);
  EXPECT_EQ(a.used(), 6 * 4096u);
  a.free(*y, 4097);
  EXPECT_EQ(a.free_ranges(), 2u);  // the hole and the tail
  a.free(*x, 1);
  a.free(*z, 3 * 4096);
  EXPECT_EQ(a.free_ranges(), 1u);
  EXPECT_EQ(a.used(), 0u);
  EXPECT_EQ(a.peak(), 6 * 4096u);
}

TEST(ExtentAllocator, FirstFitReusesHolesAndReportsFull) {
  ExtentAllocator a(4 * 4096, 4096);
  auto x = a.allocate(2 * 4096);
  auto y = a.allocate(2 * 4096);
  ASSERT_TRUE(x && y);
  EXPECT_FALSE(a.allocate(1).has_value());
  a.free(*x, 2 * 4096);
  auto z = a.allocate(4096);
  ASSERT_TRUE(z);
  EXPECT_EQ(*z, 0u);
  EXPECT_FALSE(a.allocate(2 * 4096).has_value());
  EXPECT_THROW(a.free(*z + 4096 * 8, 4096), strata::ValueError);
}

TEST(ExtentAllocator, DoubleFreeIsAnError) {
  ExtentAllocator a(8 * 4096, 4096);
  auto x = a.allocate(4096);
  auto y = a.allocate(4096);
  ASSERT_TRUE(x && y);
  a.free(*x, 4096);
  EXPECT_THROW(a.free(*x, 4096), strata::ValueError);
}

TEST(ExtentAllocator, GrowsAtItsEndJoiningTheFreeTail) {
  ExtentAllocator a(4 * 4096, 4096);
  auto x = a.allocate(3 * 4096);
  ASSERT_TRUE(x);
  EXPECT_FALSE(a.allocate(2 * 4096)) << "one block is left";
  a.grow(6 * 4096 + 100);  // rounded down to the alignment
  EXPECT_EQ(a.capacity(), 6 * 4096u);
  EXPECT_EQ(a.free_ranges(), 1u) << "the old tail and the new space are one range";
  auto y = a.allocate(3 * 4096);
  ASSERT_TRUE(y);
  EXPECT_EQ(*y, 3 * 4096u);
  a.grow(2 * 4096);  // never shrinks
  EXPECT_EQ(a.capacity(), 6 * 4096u);
  a.free(*x, 3 * 4096);
  a.free(*y, 3 * 4096);
  EXPECT_EQ(a.free_ranges(), 1u);
  EXPECT_EQ(a.used(), 0u);
}
