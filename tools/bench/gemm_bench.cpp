// GEMM throughput of strata::ops::matmul (f32): prints one JSON line per shape with the
// median and best GFLOP/s over --reps timed runs. Driven by tools/bench/gemm_bench.py, which
// runs PyTorch and NumPy on the same shapes in the same session and reports ratios.
// --bf16: instead, GPT-2 124M's linear shapes (B*T = 1024 rows) through ops::linear in f32 and
// under ops::AutocastGuard (bf16 operands, oneDNN matmul; the casts included), one JSON line
// each with both rates (the check that autocast's GEMMs run at the CPU's bf16 rate).
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
  bool bf16 = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc) reps = std::atoi(argv[++i]);
    else if (a == "--bf16") bf16 = true;
  }
  if (bf16) {
    // {rows, in, out}: c_attn, attn c_proj, c_fc, mlp c_proj, the LM head's 667-row chunk.
    const std::vector<std::vector<int64_t>> lin = {
        {1024, 768, 2304}, {1024, 768, 768}, {1024, 768, 3072}, {1024, 3072, 768}, {667, 768, 50304}};
    auto median_s = [&](const Tensor& x, const Tensor& w, bool amp) {
      std::vector<double> secs;
      for (int r = 0; r < reps + 3; ++r) {
        ops::AutocastGuard g(DType::bf16, amp);
        auto t0 = std::chrono::steady_clock::now();
        Tensor y = ops::linear(x, w);
        auto t1 = std::chrono::steady_clock::now();
        if (r >= 3) secs.push_back(std::chrono::duration<double>(t1 - t0).count());
      }
      std::sort(secs.begin(), secs.end());
      return secs[secs.size() / 2];
    };
    for (const auto& s : lin) {
      const int64_t M = s[0], K = s[1], N = s[2];
      Tensor x = ops::randn({M, K}), w = ops::randn({N, K});
      const double f32 = median_s(x, w, false), b16 = median_s(x, w, true);
      const double flops = 2.0 * double(M) * double(N) * double(K);
      std::printf("{\"M\": %ld, \"K\": %ld, \"N\": %ld, \"f32_gflops\": %.2f, \"bf16_autocast_gflops\": %.2f, "
                  "\"speedup\": %.2f}\n",
                  long(M), long(K), long(N), flops / f32 * 1e-9, flops / b16 * 1e-9, f32 / b16);
    }
    return 0;
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
