// cuda_archs_run_on: which devices a build's STRATA_CUDA_ARCHITECTURES serves, so that a device the
// build has no code for is refused with a clear message instead of "no kernel image".
#include "ops/common/cuda_arch.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

using common::cuda_archs_run_on;

TEST(CudaArch, SassRunsWithinAMajorVersionAndPtxOnNewerDevices) {
  EXPECT_TRUE(cuda_archs_run_on("90", 9, 0));
  EXPECT_FALSE(cuda_archs_run_on("90", 8, 0));  // an A100 on an H100-only build
  EXPECT_FALSE(cuda_archs_run_on("90", 8, 9));  // an RTX 4090 too
  EXPECT_TRUE(cuda_archs_run_on("90", 10, 0));  // PTX, compiled by the driver
  EXPECT_FALSE(cuda_archs_run_on("90-real", 10, 0));
  EXPECT_TRUE(cuda_archs_run_on("80", 8, 6));  // sm_80 SASS runs on 8.6
  EXPECT_TRUE(cuda_archs_run_on("80-real", 8, 9));
  EXPECT_FALSE(cuda_archs_run_on("86-real", 8, 0));
  EXPECT_FALSE(cuda_archs_run_on("86-virtual", 8, 0));
  EXPECT_TRUE(cuda_archs_run_on("86-virtual", 9, 0));
  EXPECT_TRUE(cuda_archs_run_on("90a", 9, 0));
  EXPECT_FALSE(cuda_archs_run_on("90a", 10, 0));  // architecture-specific: that device only
  EXPECT_TRUE(cuda_archs_run_on("80;86;89;90", 8, 9));
  EXPECT_TRUE(cuda_archs_run_on("80,90", 8, 0));
  EXPECT_TRUE(cuda_archs_run_on("120", 12, 0));
  EXPECT_FALSE(cuda_archs_run_on("120", 9, 0));
  EXPECT_TRUE(cuda_archs_run_on("all-major", 7, 5));
  EXPECT_FALSE(cuda_archs_run_on("", 9, 0));
  EXPECT_FALSE(cuda_archs_run_on("bogus", 9, 0));
}

}  // namespace
}  // namespace strata
