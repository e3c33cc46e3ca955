// GEMM throughput of strata::ops::matmul (f32): prints one JSON line per shape with the
// median and best GFLOP/s over --reps timed runs. Driven by tools/bench/gemm_bench.py, which
// runs PyTorch and NumPy on the same shapes in the same session and reports ratios.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "strata/ops.h"

int main(int argc, char** argv) {
  using namespace strata;
  int reps = 20;
  std::vector<std::vector<int64_t>> shapes = {{1024, 1024, 1024}, {4096, 768, 768}};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc) reps = std::atoi(argv[++i]);
  }
  for (const auto& s : shapes) {
    const int64_t M = s[0], K = s[1], N = s[2];
    Tensor a = ops::randn({M, K});
    Tensor b = ops::randn({K, N});
    std::vector<double> secs;
    for (int r = 0; r < reps + 3; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      Tensor c = ops::matmul(a, b);
      auto t1 = std::chrono::steady_clock::now();
      if (r >= 3) secs.push_back(std::chrono::duration<double>(t1 - t0).count());
    }
    std::sort(secs.begin(), secs.end());
    const double flops = 2.0 * double(M) * double(N) * double(K);
    std::printf("{\"M\": %ld, \"K\": %ld, \"N\": %ld, \"median_gflops\": %.2f, \"best_gflops\": %.2f}\n", long(M),
                long(K), long(N), flops / secs[secs.size() / 2] * 1e-9, flops / secs.front() * 1e-9);
  }
  return 0;
}
