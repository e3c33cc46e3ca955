// Reductions give the same bits whatever the thread count or the data's alignment
// (docs/design.md, "Invariants"): bit-exact policy tests depend on it.
#include <gtest/gtest.h>
#include <omp.h>

#include <cstring>
#include <vector>

#include "strata/ops.h"
#include "support/tensor_compare.h"

namespace strata {
namespace {

uint64_t bits_of(const Tensor& t) {
  double v = t.item();
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// Restores the OpenMP thread count on scope exit.
class ThreadCountGuard {
 public:
  ThreadCountGuard() : saved_(omp_get_max_threads()) {}
  ~ThreadCountGuard() { omp_set_num_threads(saved_); }

 private:
  int saved_;
};

// Values of mixed magnitude and sign, so that the summation order changes the rounding.
std::vector<double> mixed_values(int64_t n, int64_t lead) {
  std::vector<double> v(size_t(n + lead));
  uint64_t s = 12345;
  for (double& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    double u = double(s >> 11) * 0x1.0p-53;
    x = (u - 0.5) * ((s >> 7) % 3 == 0 ? 1e4 : 1.0);
  }
  return v;
}

TEST(Determinism, SumBitsIndependentOfThreadCountAndAlignment) {
  const int64_t n = 1000003, lead = 5;  // a view 20 bytes into its buffer: not 64-byte aligned
  std::vector<double> v = mixed_values(n, lead);
  Tensor buffer = ops::from_vector(v, {n + lead}, DType::f32);
  Tensor offset_view = ops::narrow(buffer, 0, lead, n);
  Tensor fresh = ops::clone(offset_view);
  ASSERT_NE(offset_view.storage_offset(), 0);
  ASSERT_EQ(fresh.storage_offset(), 0);

  ThreadCountGuard restore;
  std::vector<uint64_t> sums, means;
  for (int threads : {1, 2}) {
    omp_set_num_threads(threads);
    for (const Tensor& x : {offset_view, fresh}) {
      sums.push_back(bits_of(ops::sum(x)));
      means.push_back(bits_of(ops::mean(x)));
    }
  }
  for (size_t i = 1; i < sums.size(); ++i) {
    EXPECT_EQ(sums[i], sums[0]) << "run " << i;
    EXPECT_EQ(means[i], means[0]) << "run " << i;
  }
  // And the value is right: f32 storage, double accumulation.
  double exact = 0;
  for (int64_t i = 0; i < n; ++i) exact += double(float(v[size_t(lead + i)]));
  EXPECT_NEAR(ops::sum(fresh).item(), exact, 1e-6 * std::abs(exact) + 1.0);
}

TEST(Determinism, RowSumsIndependentOfThreadCountAndLayout) {
  // [R, C] summed over each dim: the row path (parallel over rows) and the permuted-copy path.
  const int64_t R = 331, C = 1013, lead = 3;
  std::vector<double> v = mixed_values(R * C, lead);
  Tensor buffer = ops::from_vector(v, {R * C + lead}, DType::f32);
  Tensor x = ops::reshape(ops::narrow(buffer, 0, lead, R * C), {R, C});
  Tensor fresh = ops::clone(x);
  ThreadCountGuard restore;
  std::vector<std::vector<uint64_t>> rows, cols;
  for (int threads : {1, 2}) {
    omp_set_num_threads(threads);
    for (const Tensor& t : {x, fresh}) {
      rows.push_back(strata::testing::element_bits(ops::sum(t, {1})));
      cols.push_back(strata::testing::element_bits(ops::sum(t, {0})));
    }
  }
  for (size_t i = 1; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i], rows[0]) << "run " << i;
    EXPECT_EQ(cols[i], cols[0]) << "run " << i;
  }
}

}  // namespace
}  // namespace strata
