// feature_gather_bench: an epoch of sampled minibatches' feature gathers (the input nodes of
// NeighborSampler's first block on an R-MAT graph, so hubs come back often) from a feature file
// larger than the process's budget, through MappedFeatureStore with the budget as its resident
// limit, beside the plain in-memory index copy (ops::index_select on the whole table in memory)
// and TensorFeatureStore. The mapped store's epoch runs twice: from a cold page cache (the
// file's pages evicted first) and warm. Every method's rows are checked against index_select's
// before anything is timed.
//
//   strata_feature_gather_bench --nodes-log2 20 --features 256 --budget 256M --threads 2
//
// With --device cuda (and a GPU), PyTorch-Direct's microbenchmark (Wu, arXiv 2412.04747, section 4.5)
// follows: random rows of 2048..2076 bytes from page-locked host memory onto the GPU, read by the zero-copy
// kernel with aligned and naive lane mappings, beside the staged path (rows gathered on the host
// into page-locked memory, then copied) and index_select on a table in GPU memory (the ideal).
#include <fcntl.h>
#include <omp.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "host_info.h"
#include "strata/config.h"
#include "strata/core/backend.h"
#include "strata/core/byte_size.h"
#include "strata/core/factory.h"
#include "strata/io/features/feature_file.h"
#include "strata/io/features/feature_store.h"
#include "strata/io/graphs/graph_generators.h"
#include "strata/io/graphs/neighbor_sampler.h"
#include "strata/ops/indexing.h"

#if STRATA_HAVE_CUDA
#include "ops/cuda/cuda_feature_gather.h"
#endif

using namespace strata;
using namespace strata::io;

namespace {

using bench::cpu_model;
using bench::now_s;

// A field of /proc/self/status in MiB (VmRSS, VmHWM, RssFile).
double status_mib(const std::string& field) {
  std::ifstream f("/proc/self/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind(field + ":", 0) == 0) return std::stod(line.substr(field.size() + 1)) / 1024.0;
  return 0;
}

// Makes VmHWM start again from the current RSS (Linux: "5" to /proc/self/clear_refs).
void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }

// Writes N x F f32 rows whose values name their place (row * F + col), slice by slice.
void write_features(const std::string& path, int64_t n, int64_t f) {
  FeatureFileWriter w(path, n, f, DType::f32);
  const int64_t slice = std::max<int64_t>(1, (int64_t(16) << 20) / (f * 4));
  for (int64_t begin = 0; begin < n; begin += slice) {
    const int64_t k = std::min(slice, n - begin);
    Tensor rows = Tensor::empty({k, f}, DType::f32);
    float* p = rows.data<float>();
    for (int64_t i = 0; i < k * f; ++i) p[i] = float((begin * f + i) % 16777216);
    w.append(rows);
  }
  w.commit();
}

// Drops the file's clean pages from the page cache, so the next reads come from the drive.
void evict(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

struct Epoch {
  double seconds = 0;
  int64_t rows = 0;
  double peak_resident_mib = 0;  // MappedFeatureStore only
};

template <class Gather>
Epoch run_epoch(const std::vector<Tensor>& batches, Gather gather,
                const MappedFeatureStore* mapped = nullptr) {
  Epoch e;
  for (const Tensor& ids : batches) {
    const double t0 = now_s();
    Tensor rows = gather(ids);
    e.seconds += now_s() - t0;
    e.rows += ids.numel();
    if (mapped != nullptr)
      e.peak_resident_mib = std::max(e.peak_resident_mib, double(mapped->resident_bytes()) / (1 << 20));
  }
  return e;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0;
}

#if STRATA_HAVE_CUDA
// PyTorch-Direct's microbenchmark on cuda:0: `m` random rows of each size from `n` rows in page-locked
// host memory.
void gpu_microbenchmark(int64_t n, int64_t m, int threads, int reps) {
  Backend& gpu = backend_for(cuda(0));
  if (gpu.device_count() == 0) {
    std::printf("\nno CUDA device: the zero-copy microbenchmark is skipped\n");
    return;
  }
  std::mt19937_64 rng(5);
  std::vector<int64_t> ids(static_cast<size_t>(m));
  for (int64_t& v : ids) v = int64_t(rng() % uint64_t(n));
  const Tensor ids_cpu = from_vector(ids, {m});
  const Tensor ids_gpu = ids_cpu.to(cuda(0));
  std::printf("\nzero-copy gather onto cuda:0: %lld random rows of %lld, page-locked host memory\n",
              (long long)m, (long long)n);
  std::printf("%-10s %14s %14s %14s %14s %12s %12s\n", "row bytes", "staged GB/s", "naive GB/s",
              "aligned GB/s", "in-GPU GB/s", "aligned/stg", "aligned/nv");
  auto best = [&](auto f) {
    double t = 1e30;
    for (int r = 0; r < reps; ++r) {
      gpu.synchronize(0);
      const double t0 = now_s();
      f();
      gpu.synchronize(0);
      t = std::min(t, now_s() - t0);
    }
    return t;
  };
  for (int64_t row_bytes = 2048; row_bytes <= 2076; row_bytes += 4) {
    const int64_t f = row_bytes / 4;
    Tensor table = Tensor::empty({n, f}, DType::f32);  // page-aligned: a large block
    std::memset(table.data_ptr(), 0, table.nbytes());
    for (int64_t r = 0; r < n; r += 997) table.data<float>()[r * f] = float(r);
    gpu::register_device_readable(table.data_ptr(), table.nbytes());
    TensorFeatureStore staged(table, {.num_threads = threads});
    const Tensor out = Tensor::empty({m, f}, DType::f32, cuda(0));
    const Tensor want = ops::index_select(table, 0, ids_cpu);
    gpu::gather_host_rows(out, table.data_ptr(), n, row_bytes, ids_gpu, gpu::RowAlignment::kAligned);
    const bool ok_aligned = same_bytes(out.to(kCPU), want);
    gpu::gather_host_rows(out, table.data_ptr(), n, row_bytes, ids_gpu, gpu::RowAlignment::kNaive);
    const bool ok_naive = same_bytes(out.to(kCPU), want);
    const bool ok_staged = same_bytes(staged.gather(ids_cpu, cuda(0)).to(kCPU), want);
    if (!ok_aligned || !ok_naive || !ok_staged) {
      std::printf("MISMATCH at %lld-byte rows (aligned %d, naive %d, staged %d)\n", (long long)row_bytes,
                  ok_aligned, ok_naive, ok_staged);
      std::exit(1);
    }
    const double t_staged = best([&] { staged.gather(ids_cpu, cuda(0)); });
    const double t_naive = best([&] {
      gpu::gather_host_rows(out, table.data_ptr(), n, row_bytes, ids_gpu, gpu::RowAlignment::kNaive, false);
    });
    const double t_aligned = best([&] {
      gpu::gather_host_rows(out, table.data_ptr(), n, row_bytes, ids_gpu, gpu::RowAlignment::kAligned, false);
    });
    gpu::unregister_device_readable(table.data_ptr());
    const Tensor on_gpu = table.to(cuda(0));
    const double t_ideal = best([&] { ops::index_select(on_gpu, 0, ids_gpu); });
    const double gb = double(m * row_bytes) / 1e9;
    std::printf("%-10lld %14.2f %14.2f %14.2f %14.2f %12.2f %12.2f\n", (long long)row_bytes, gb / t_staged,
                gb / t_naive, gb / t_aligned, gb / t_ideal, t_staged / t_aligned, t_naive / t_aligned);
  }
}
#endif

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Feature gathers of sampled minibatches: memory-mapped file vs in-memory index copy"};
  int scale = 20, threads = 2, gpu_reps = 5;
  int64_t edge_factor = 8, features = 256, batch = 1024, batches = 40, gpu_rows = 1 << 20,
          gpu_gather = 1 << 18;
  std::vector<int64_t> fanouts{15, 10};
  std::string budget_text = "256M", path = "/tmp/strata_feature_gather_bench.npy", device = "cpu";
  app.add_option("--nodes-log2", scale, "R-MAT scale: 2^scale nodes");
  app.add_option("--edge-factor", edge_factor);
  app.add_option("--features", features, "F of the f32 feature rows");
  app.add_option("--batch", batch, "seed nodes per minibatch");
  app.add_option("--fanouts", fanouts, "input layer first")->delimiter(',');
  app.add_option("--batches", batches, "minibatches in the epoch");
  app.add_option("--threads", threads, "loader threads (and OpenMP threads of index_select)");
  app.add_option("--budget", budget_text, "the process's budget: the mapped store's resident limit");
  app.add_option("--file", path, "the feature file (written when missing or of another shape)");
  app.add_option("--device", device, "cpu, or cuda for the zero-copy microbenchmark too");
  app.add_option("--gpu-rows", gpu_rows, "rows in page-locked memory for the zero-copy microbenchmark");
  app.add_option("--gpu-gather", gpu_gather, "rows per gather in the zero-copy microbenchmark");
  app.add_option("--gpu-reps", gpu_reps);
  CLI11_PARSE(app, argc, argv);
  const uint64_t budget = parse_byte_size(budget_text, "--budget");
  omp_set_num_threads(threads);

  double t0 = now_s();
  GraphDataset data = generate_rmat({.scale = scale, .edge_factor = edge_factor, .seed = 1});
  const int64_t n = data.graph.num_nodes();
  std::printf(
      "graph: %s, %lld nodes, %lld edges, built in %.1f s\nCPU: %s, %u hardware threads; %d loader threads\n",
      data.name.c_str(), (long long)n, (long long)data.graph.num_edges(), now_s() - t0, cpu_model().c_str(),
      std::thread::hardware_concurrency(), threads);

  // The epoch's minibatches: input nodes of the first block for shuffled seed batches.
  t0 = now_s();
  NeighborSampler sampler(data.graph, fanouts, 1);
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(7));
  batches = std::min(batches, n / batch);
  std::vector<Tensor> inputs;
  for (int64_t b = 0; b < batches; ++b)
    inputs.push_back(
        sampler.sample(std::span<const int64_t>(order.data() + b * batch, size_t(batch)), 0, b)[0].nodes);
  int64_t total_rows = 0;
  for (const Tensor& t : inputs) total_rows += t.numel();
  std::printf("%lld minibatches of %lld seeds, fanouts", (long long)batches, (long long)batch);
  for (int64_t f : fanouts) std::printf(" %lld", (long long)f);
  std::printf(": %.0f input rows per batch on average (sampled in %.1f s)\n",
              double(total_rows) / double(batches), now_s() - t0);

  const uint64_t file_bytes = uint64_t(n) * uint64_t(features) * 4;
  bool reuse = false;
  if (std::filesystem::exists(path)) {
    try {
      MappedFeatureStore probe(path, {.num_threads = 0});
      reuse = probe.num_rows() == n && probe.num_features() == features && probe.dtype() == DType::f32;
    } catch (const Error&) {
    }
  }
  t0 = now_s();
  if (!reuse) write_features(path, n, features);
  std::printf("feature file %s: %lld x %lld f32 = %.0f MiB (%s in %.1f s); budget %.0f MiB\n", path.c_str(),
              (long long)n, (long long)features, double(file_bytes) / (1 << 20), reuse ? "reused" : "written",
              now_s() - t0, double(budget) / (1 << 20));
  if (file_bytes <= budget) std::printf("WARNING: the file is not larger than the budget\n");

  // The mapped store under the budget: a cold epoch, then a warm one; then cold without the
  // read-ahead window. Each store is gone (its pages unmapped) before the file is evicted again.
  const FeatureStoreOptions mapped_options{.num_threads = threads, .resident_limit_bytes = budget};
  const double rss_before = status_mib("VmRSS");
  reset_peak_rss();
  Epoch cold, warm, cold_no_ahead;
  bool maps_rows = true;
  double cache_hit_rate = 0;
  {
    MappedFeatureStore mapped(path, mapped_options);
    auto gather = [&](const Tensor& ids) { return mapped.gather(ids); };
    evict(path);
    cold = run_epoch(inputs, gather, &mapped);
    warm = run_epoch(inputs, gather, &mapped);
    maps_rows = mapped.maps_rows();
    cache_hit_rate = double(mapped.rows_from_cache()) / double(std::max<int64_t>(1, cold.rows + warm.rows));
  }
  {
    FeatureStoreOptions no_ahead = mapped_options;
    no_ahead.prefetch_window_bytes = 0;
    MappedFeatureStore mapped(path, no_ahead);
    evict(path);
    cold_no_ahead = run_epoch(inputs, [&](const Tensor& ids) { return mapped.gather(ids); });
  }
  const double rss_mapped = status_mib("VmHWM");

  // The in-memory baseline: the whole table read into memory, then index_select.
  t0 = now_s();
  MappedFeatureStore mapped(path, mapped_options);
  std::vector<int64_t> all(static_cast<size_t>(n));
  std::iota(all.begin(), all.end(), 0);
  const Tensor table = mapped.gather(from_vector(all, {n}));
  std::printf("in-memory table loaded in %.1f s\n", now_s() - t0);
  TensorFeatureStore memory(table, {.num_threads = threads});
  for (size_t b = 0; b < std::min<size_t>(inputs.size(), 3); ++b) {
    const Tensor want = ops::index_select(table, 0, inputs[b]);
    if (!same_bytes(mapped.gather(inputs[b]), want) || !same_bytes(memory.gather(inputs[b]), want)) {
      std::printf("MISMATCH: batch %zu's rows differ from index_select's\n", b);
      return 1;
    }
  }
  const Epoch base = run_epoch(inputs, [&](const Tensor& ids) { return ops::index_select(table, 0, ids); });
  const Epoch mem = run_epoch(inputs, [&](const Tensor& ids) { return memory.gather(ids); });

  const double row_gb = double(features * 4) / 1e9;
  std::printf("\n%-52s %12s %10s %10s\n", "", "rows/s", "GB/s", "vs index");
  auto line = [&](const std::string& name, const Epoch& e) {
    const double rate = double(e.rows) / e.seconds, base_rate = double(base.rows) / base.seconds;
    std::printf("%-52s %12.0f %10.2f %10.2f\n", name.c_str(), rate, rate * row_gb, rate / base_rate);
  };
  line("ops::index_select, table in memory", base);
  line("TensorFeatureStore, table in memory", mem);
  line("MappedFeatureStore, cold page cache", cold);
  line("MappedFeatureStore, cold, no read-ahead window", cold_no_ahead);
  line("MappedFeatureStore, warm page cache", warm);
  std::printf(
      "\nMappedFeatureStore under the %.0f MiB budget: rows %s; its mapping peaked at %.0f MiB resident; "
      "process "
      "RSS %.0f MiB before its epochs (graph, sampler, batches), peak %.0f MiB during them; %.0f MiB with "
      "the "
      "in-memory table\n",
      double(budget) / (1 << 20),
      maps_rows ? "copied from the mapping"
                : ("read with pread (file > budget), " + std::to_string(int(100 * cache_hit_rate + 0.5)) +
                   "% of them from its row cache")
                      .c_str(),
      std::max(cold.peak_resident_mib, warm.peak_resident_mib), rss_before, rss_mapped, status_mib("VmRSS"));

#if STRATA_HAVE_CUDA
  if (device == "cuda") gpu_microbenchmark(gpu_rows, gpu_gather, threads, gpu_reps);
#endif
  return 0;
}
