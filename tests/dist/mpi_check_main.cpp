// strata_mpi_check: checks the MPI process group under mpirun (ctest runs it; see
// tests/dist/CMakeLists.txt). Modes:
//   collectives  every collective against values computed locally in rank order (exact)
//   kill         rank 1 is SIGKILLed; rank 0's next collective must fail within the timeout
//                naming rank 1 (run with --enable-recovery so mpirun leaves rank 0 alive)
//   hang         rank 1 stays alive but stops calling collectives; rank 0 must say so
//   bench MB N   N all-reduces of MB megabytes: ms each (tools/bench/dp_bench.sh)
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "strata/dist/process_group.h"
#include "strata/ops.h"

using namespace strata;
using namespace strata::dist;

namespace {

int failures = 0;

void expect_equal(const char* what, int rank, const std::vector<float>& got, const std::vector<float>& want) {
  if (got == want) return;
  ++failures;
  std::fprintf(stderr, "rank %d: %s mismatch (first of %zu: got %.9g want %.9g)\n", rank, what, got.size(),
               got.empty() ? 0.0 : double(got[0]), want.empty() ? 0.0 : double(want[0]));
}

// Rank r's input for element j: values whose sum depends on the order.
float input(int r, int64_t j) { return (r % 2 ? -1.0f : 1.0f) * (1e7f + float(j % 97) * 0.37f) + float(r) * 1e-3f; }

int collectives(ProcessGroup& pg) {
  const int W = pg.size(), r = pg.rank();
  for (int64_t n : {int64_t(1), int64_t(7), int64_t(W * 5), int64_t(1 << 20) + 3}) {
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg}) {
      std::vector<float> mine(static_cast<size_t>(n)), want(static_cast<size_t>(n));
      for (int64_t j = 0; j < n; ++j) {
        mine[size_t(j)] = input(r, j);
        float s = input(0, j);
        for (int i = 1; i < W; ++i) s += input(i, j);
        want[size_t(j)] = op == ReduceOp::Avg ? s / float(W) : s;
      }
      Tensor t = ops::from_vector(mine, {n});
      pg.all_reduce(t, op)->wait();
      expect_equal("all_reduce", r, t.to_vector<float>(), want);
    }
  }
  Tensor b = ops::full({5}, double(r + 1));
  pg.broadcast(b, W - 1)->wait();
  expect_equal("broadcast", r, b.to_vector<float>(), std::vector<float>(5, float(W)));
  Tensor in = ops::full({3}, double(r));
  Tensor out = ops::zeros({3 * W});
  pg.all_gather(out, in)->wait();
  std::vector<float> gathered;
  for (int i = 0; i < W; ++i) gathered.insert(gathered.end(), 3, float(i));
  expect_equal("all_gather", r, out.to_vector<float>(), gathered);
  Tensor big = ops::full({4 * W}, double(r + 1));
  Tensor chunk = ops::zeros({4});
  pg.reduce_scatter(chunk, big, ReduceOp::Sum)->wait();
  expect_equal("reduce_scatter", r, chunk.to_vector<float>(), std::vector<float>(4, float(W * (W + 1) / 2)));
  pg.barrier_sync();
  std::printf("rank %d of %d: collectives %s\n", r, W, failures ? "FAILED" : "OK");
  return failures ? 1 : 0;
}

int fault(ProcessGroup& pg, bool kill) {
  pg.barrier_sync();
  if (pg.rank() == 1) {
    if (kill) raise(SIGKILL);
    sleep(60);  // alive, but never reaches the next collective
    return 0;
  }
  const auto t0 = std::chrono::steady_clock::now();
  try {
    Tensor t = ops::ones({1024});
    pg.all_reduce(t)->wait();
    std::printf("rank %d: the all_reduce completed without rank 1\n", pg.rank());
    return 1;
  } catch (const CollectiveError& e) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("rank %d after %.1f s: %s\n", pg.rank(), s, e.what());
    std::fflush(stdout);
    pg.abort(3);
  }
  return 1;
}

int bench(ProcessGroup& pg, double mb, int iters) {
  Tensor t = ops::ones({int64_t(mb * 1024 * 1024 / 4)});
  pg.all_reduce(t)->wait();  // warm-up
  pg.barrier_sync();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) pg.all_reduce(t, ReduceOp::Avg)->wait();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
  if (pg.rank() == 0) std::printf("all_reduce %.1f MB x %d ranks: %.2f ms (%.2f GB/s algorithm bandwidth)\n", mb, pg.size(),
                                  1e3 * s, mb / 1024 / s);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "collectives";
  try {
    ProcessGroupOptions o;
    if (mode != "collectives") o.timeout = std::chrono::milliseconds(3000);
    auto pg = make_mpi_group(o);
    if (mode == "collectives") return collectives(*pg);
    if (mode == "bench") return bench(*pg, argc > 2 ? std::atof(argv[2]) : 16.0, argc > 3 ? std::atoi(argv[3]) : 20);
    return fault(*pg, mode == "kill");
  } catch (const Error& e) {
    std::fprintf(stderr, "strata_mpi_check: %s\n", e.what());
    return 1;
  }
}
