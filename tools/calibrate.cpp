// strata_calibrate: measures this machine for the planner (memcpy bandwidth, O_DIRECT write/read
// bandwidth and latency by request size, GEMM rates, streaming bandwidth) and writes a hardware
// profile whose every figure names the measurement that produced it. With --device cuda[:N] or
// sim[:N] the compute figures are that device's, and its capacity, host-to-device and
// device-to-host copy rates (the backend's asynchronous copies from page-locked host memory), link
// latency and kernel launch time are measured too.
#include <fcntl.h>
#include <omp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include "strata/core/crc32c.h"  // the checksum the NVMe tier computes
#include "strata/core/error.h"
#include "strata/memory/planner/hardware.h"
#include "strata/strata.h"
#include "tools/cli_parse.h"

using namespace strata;
using namespace strata::memory::planner;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

template <class F>
double best_of(int reps, F&& f) {
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    auto t0 = Clock::now();
    f();
    best = std::min(best, seconds_since(t0));
  }
  return best;
}

std::string today() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&t));
  return buf;
}

std::string host() {
  char buf[256] = {};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

// Copy rate with the process's threads, each copying its share (what the host pool's copies get).
double memcpy_rate(size_t bytes, int reps) {
  std::vector<char> a(bytes, 1), b(bytes, 0);
  double t = best_of(reps, [&] {
#pragma omp parallel
    {
#pragma omp for schedule(static)
      for (int64_t part = 0; part < 64; ++part) {
        size_t lo = bytes / 64 * size_t(part), hi = part == 63 ? bytes : bytes / 64 * size_t(part + 1);
        std::memcpy(b.data() + lo, a.data() + lo, hi - lo);
      }
    }
  });
  return double(bytes) / t;
}

// One thread checksumming (CRC-32C) 4 MiB chunks in place: the CPU work the tensor cache's I/O
// threads do per offloaded byte now that whole 4 KiB-aligned chunks of tensor memory go to and
// from the file without a staging copy (memory/tiers/nvme_tier.cpp; ragged tails and unaligned
// memory are still copied, a small share of an activation's bytes).
double checksum_rate(size_t bytes, int reps) {
  const size_t chunk = size_t(4) << 20;
  std::vector<char> src(bytes, 3);
  uint32_t sink = 0;
  double t = best_of(reps, [&] {
    for (size_t at = 0; at < bytes; at += chunk) sink ^= crc32c(src.data() + at, std::min(chunk, bytes - at));
  });
  if (sink == 0x12345678) std::fprintf(stderr, " ");  // keeps the checksums from being optimised away
  return double(bytes) / t;
}

// The device measured (cpu unless --device says otherwise); timings wait for its work.
Device g_device = kCPU;
void sync_device() { backend_for(g_device).synchronize(g_device.index); }

// The bf16 rate is linear's under autocast (bf16 operands, f32 result): autocast reaches linear and
// the LM head, not matmul.
double gemm_rate(int64_t m, int64_t n, int64_t k, bool bf16, int reps) {
  Tensor a = ops::randn({m, k}).to(g_device), b = ops::randn({k, n}).to(g_device);
  Tensor w = bf16 ? ops::randn({n, k}).to(g_device) : Tensor();
  auto run = [&] {
    if (bf16) {
      ops::AutocastGuard ac(DType::bf16);
      (void)ops::linear(a, w);
    } else {
      (void)ops::matmul(a, b);
    }
    sync_device();
  };
  run();
  return 2.0 * double(m) * double(n) * double(k) / best_of(reps, run);
}

// Streaming rate of an elementwise op over a large tensor: bytes read + written per second.
double stream_rate(int64_t n, int reps) {
  Tensor x = ops::randn({n}).to(g_device), y = ops::randn({n}).to(g_device);
  (void)ops::add(x, y);
  sync_device();
  return 3.0 * 4.0 * double(n) / best_of(reps, [&] {
           (void)ops::add(x, y);
           sync_device();
         });
}

// Seconds one copy of `bytes` takes between page-locked host memory and the device (to_device:
// host to device), through the backend's asynchronous copies, best of `reps`.
double copy_seconds(size_t bytes, bool to_device, int reps) {
  Backend& be = backend_for(g_device);
  void* host = nullptr;
  STRATA_CHECK(::posix_memalign(&host, 4096, bytes) == 0, Error, "strata_calibrate: out of memory");
  std::memset(host, 0x5A, bytes);
  be.register_host_memory(host, bytes);
  Tensor dev = Tensor::empty({int64_t(bytes)}, DType::u8, g_device);
  const double t = best_of(reps, [&] {
    auto done = to_device ? be.copy_bytes_async(dev.data_ptr(), host, bytes, g_device.index, nullptr)
                          : be.copy_bytes_async(host, dev.data_ptr(), bytes, g_device.index, nullptr);
    if (done) done->synchronize();
  });
  be.unregister_host_memory(host);
  std::free(host);
  return t;
}

// Median seconds of a one-element add, waited for: what the cost model charges per kernel.
double launch_seconds(int reps) {
  Tensor x = ops::ones({1}).to(g_device);
  std::vector<double> v;
  for (int i = 0; i < 20 * reps; ++i) {
    auto t0 = Clock::now();
    (void)ops::add(x, x);
    sync_device();
    v.push_back(seconds_since(t0));
  }
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct DirectFile {
  int fd = -1;
  std::string path;
  DirectFile(const std::string& dir, size_t bytes) {
    path = dir + "/strata_calibrate." + std::to_string(::getpid());
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_DIRECT, 0600);
    STRATA_CHECK(fd >= 0, IoError, "strata_calibrate: cannot open '", path, "' with O_DIRECT: ", std::strerror(errno));
    ::unlink(path.c_str());
    STRATA_CHECK(::posix_fallocate(fd, 0, off_t(bytes)) == 0, IoError, "strata_calibrate: cannot allocate ", bytes,
                 " bytes in '", dir, "'");
  }
  ~DirectFile() {
    if (fd >= 0) ::close(fd);
  }
};

// Queue depth 1: one request at a time over `total` bytes; returns {bytes/s, seconds per request}.
SizedRate direct_io(const DirectFile& f, bool write, size_t request, size_t total, void* buf) {
  const size_t n = std::max<size_t>(1, total / request);
  auto t0 = Clock::now();
  for (size_t i = 0; i < n; ++i) {
    ssize_t r = write ? ::pwrite(f.fd, buf, request, off_t(i * request)) : ::pread(f.fd, buf, request, off_t(i * request));
    STRATA_CHECK(r == ssize_t(request), IoError, "strata_calibrate: ", write ? "write" : "read", " of ", request,
                 " bytes at offset ", i * request, " in '", f.path, "' returned ", r, ": ", std::strerror(errno));
  }
  if (write) ::fdatasync(f.fd);
  double t = seconds_since(t0);
  return SizedRate{request, double(n * request) / t, t / double(n)};
}

// What compute loses to an I/O thread: a GEMM loop on the OpenMP threads (~1 s) alone and beside
// a thread doing what the NVMe tier's store thread does per chunk (CRC-32C of 4 MiB in place, then
// an O_DIRECT write of it), interleaved `reps` times. Returns the wall seconds the GEMM loop lost
// per second of checksum work the thread did (bytes moved / `crc_rate`): the simulator charges
// that much compute time per offloaded byte. Above 1 when the thread's syscalls and the device's
// memory traffic cost compute more than the checksum alone.
double compute_steal(const DirectFile& f, size_t file_bytes, double crc_rate, int reps, double* lost_out) {
  Tensor a = ops::randn({1024, 1024}), b = ops::randn({1024, 1024});
  (void)ops::matmul(a, b);
  auto gemm_loop = [&] {
    auto t0 = Clock::now();
    for (int i = 0; i < 100; ++i) (void)ops::matmul(a, b);
    return seconds_since(t0);
  };
  const size_t chunk = size_t(4) << 20;
  void* buf = nullptr;
  STRATA_CHECK(::posix_memalign(&buf, 4096, chunk) == 0, Error, "strata_calibrate: out of memory");
  std::memset(buf, 0x3C, chunk);
  std::vector<double> alone, beside, moved;
  for (int r = 0; r < reps; ++r) {
    alone.push_back(gemm_loop());
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> bytes{0};
    std::thread io([&] {
      uint32_t sink = 0;
      for (size_t at = 0; !stop.load(std::memory_order_relaxed); at = (at + chunk) % (file_bytes - chunk + 1)) {
        sink ^= crc32c(buf, chunk);
        STRATA_CHECK(::pwrite(f.fd, buf, chunk, off_t(at / 4096 * 4096)) == ssize_t(chunk), IoError,
                     "strata_calibrate: write of ", chunk, " bytes in '", f.path, "': ", std::strerror(errno));
        bytes += chunk;
      }
      if (sink == 0x12345678) std::fprintf(stderr, " ");
    });
    beside.push_back(gemm_loop());
    stop = true;
    io.join();
    moved.push_back(double(bytes.load()));
  }
  std::free(buf);
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double lost = std::max(0.0, median(beside) - median(alone));
  if (lost_out) *lost_out = lost;
  return lost / (median(moved) / crc_rate);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"strata_calibrate: measure this machine and write a hardware profile for the planner"};
  std::string out = "this-machine.textproto", dir = "/tmp", name;
  size_t file_mib = 512, memcpy_mib = 256;
  int reps = 5;
  app.add_option("-o,--out", out, "where to write the profile (protobuf text)");
  app.add_option("--spill-dir", dir, "directory on the drive to measure (O_DIRECT)");
  app.add_option("--file-mib", file_mib, "size of the O_DIRECT test file, MiB");
  app.add_option("--memcpy-mib", memcpy_mib, "size of the memcpy buffers, MiB");
  app.add_option("--reps", reps, "repetitions (best taken)");
  app.add_option("--name", name, "profile name (default: <device>-<hostname>)");
  std::string device_name = "cpu";
  app.add_option("--device", device_name, "the device measured: cpu (default), cuda, cuda:N, sim, sim:N");
  STRATA_TOOL_PARSE(app, argc, argv);
  try {
    g_device = Device::parse(device_name);
    STRATA_CHECK(!g_device.is_meta(), ValueError, "--device meta has no speed to measure");
    STRATA_CHECK(g_device.index < backend_for(g_device).device_count(), ValueError, "--device ", device_name,
                 ": ", g_device.str(), " does not exist");
    const std::string when = " on " + host() + ", " + today();
    HardwareProfile h;
    const std::string kind = g_device.is_cpu() ? "cpu" : g_device.is_sim() ? "sim" : "cuda";
    h.name = name.empty() ? kind + "-" + host() : name;
    h.description = "this machine (" + (g_device.is_cpu() ? std::string("CPU backend") : g_device.str()) +
                    "), measured by strata_calibrate" + when;
    h.gpu = !g_device.is_cpu();  // a device with memory of its own, the host pool beside it
    const double ram = double(::sysconf(_SC_PHYS_PAGES)) * double(::sysconf(_SC_PAGESIZE));
    h.host_memory_bytes = {ram, "sysconf(_SC_PHYS_PAGES * _SC_PAGESIZE)" + when};
    h.device_memory_bytes = h.host_memory_bytes;
    if (h.gpu)
      h.device_memory_bytes = {double(backend_for(g_device).memory_capacity(g_device.index)),
                               "Backend::memory_capacity of " + g_device.str() + when};
    std::fprintf(stderr, "calibrate: memcpy %zu MiB ...\n", memcpy_mib);
    double mc = memcpy_rate(memcpy_mib << 20, reps);
    h.host_memcpy_bytes_per_second = {mc, "strata_calibrate: memcpy of " + std::to_string(memcpy_mib) +
                                              " MiB split over the OpenMP threads, best of " + std::to_string(reps) + when};
    std::fprintf(stderr, "calibrate: CRC-32C on one thread ...\n");
    const double io = checksum_rate(memcpy_mib << 20, reps);
    h.io_cpu_bytes_per_second = {io, "strata_calibrate: one thread checksumming " + std::to_string(memcpy_mib) +
                                         " MiB in place (CRC-32C, 4 MiB chunks: aligned chunks skip the staging "
                                         "copy), best of " + std::to_string(reps) + when};
    std::fprintf(stderr, "calibrate: sgemm ...\n");
    // A GPU needs larger products than a CPU to reach its rate (a 4096x768x768 product is
    // microseconds there, mostly launch).
    const int64_t big = g_device.is_cuda() ? 4096 : 1024;
    double g1 = gemm_rate(big, big, big, false, reps), g2 = gemm_rate(4096, 768, 768, false, reps);
    h.matmul_flops_fp32 = {std::max(g1, g2),
                           "strata_calibrate: ops::matmul f32, best of " + std::to_string(big) + "^3 (" +
                               std::to_string(int(g1 / 1e9)) + " GFLOP/s) and 4096x768x768 (" +
                               std::to_string(int(g2 / 1e9)) + " GFLOP/s)" + when};
    try {
      const int64_t bm = 4096, bk = g_device.is_cuda() ? 4096 : 768;
      double b = gemm_rate(bm, bk, bk, true, reps);
      h.matmul_flops_bf16 = {b, "strata_calibrate: ops::linear under bf16 autocast, " + std::to_string(bm) +
                                    "x" + std::to_string(bk) + "x" + std::to_string(bk) + when};
    } catch (const Error& e) {
      std::fprintf(stderr, "calibrate: no bf16 matmul (%s)\n", e.what());
    }
    double st = stream_rate(int64_t(64) << 20, reps);
    h.device_memory_bytes_per_second = {st, "strata_calibrate: ops::add over 64M f32 (12 bytes moved per element)" + when};
    h.efficiencies.push_back({"*", 1, 1, "calibration: the rates above are measured, so efficiencies are 1"});
    if (h.gpu) {
      std::fprintf(stderr, "calibrate: %s copies ...\n", g_device.str().c_str());
      const size_t big = memcpy_mib << 20;
      const std::string copies = " of " + std::to_string(memcpy_mib) + " MiB from page-locked host memory (" +
                                 g_device.str() + "'s copy_bytes_async), best of " + std::to_string(reps) +
                                 when;
      h.host_to_device_bytes_per_second = {double(big) / copy_seconds(big, true, reps),
                                           "strata_calibrate: host-to-device copies" + copies};
      h.device_to_host_bytes_per_second = {double(big) / copy_seconds(big, false, reps),
                                           "strata_calibrate: device-to-host copies" + copies};
      h.link_latency_seconds = {
          copy_seconds(4096, true, 10 * reps),
          "strata_calibrate: one 4 KiB host-to-device copy, best of " + std::to_string(10 * reps) + when};
      h.kernel_launch_seconds = {launch_seconds(reps), "strata_calibrate: median one-element ops::add on " +
                                                           g_device.str() + ", waited for" + when};
      h.vector_flops_fp32 = {st / 12.0, "strata_calibrate: the streaming add's elements per second" + when};
    }

    std::fprintf(stderr, "calibrate: O_DIRECT in %s, %zu MiB ...\n", dir.c_str(), file_mib);
    DriveProfile d;
    d.name = dir;
    {
      const size_t total = file_mib << 20;
      DirectFile f(dir, total);
      void* buf = nullptr;
      STRATA_CHECK(::posix_memalign(&buf, 4096, size_t(16) << 20) == 0, Error, "strata_calibrate: out of memory");
      std::memset(buf, 0x5A, size_t(16) << 20);
      for (size_t req : {size_t(4) << 10, size_t(64) << 10, size_t(1) << 20, size_t(4) << 20, size_t(16) << 20}) {
        size_t span = req <= (64 << 10) ? std::min<size_t>(total, size_t(64) << 20) : total;
        d.writes.push_back(direct_io(f, true, req, span, buf));
        d.reads.push_back(direct_io(f, false, req, span, buf));
      }
      std::free(buf);
    }
    {
      std::fprintf(stderr, "calibrate: GEMMs beside an I/O thread ...\n");
      DirectFile f(dir, size_t(256) << 20);
      double lost = 0;
      const double steal = compute_steal(f, size_t(256) << 20, io, std::max(reps, 3), &lost);
      h.io_compute_steal = {std::max(steal, 1e-9),
                            "strata_calibrate: wall seconds 100 1024^3 GEMMs on " + std::to_string(omp_get_max_threads()) +
                                " OpenMP threads lost (median " + std::to_string(lost) +
                                " s) beside a thread checksumming and O_DIRECT-writing 4 MiB chunks, per second of "
                                "its checksum work, median of " + std::to_string(std::max(reps, 3)) + when};
    }
    const std::string io_src = "strata_calibrate: O_DIRECT pwrite/pread at queue depth 1 in " + dir + when;
    d.write_bytes_per_second = {d.writes.back().bytes_per_second, io_src + ", 16 MiB requests"};
    d.read_bytes_per_second = {d.reads.back().bytes_per_second, io_src + ", 16 MiB requests"};
    d.write_latency_seconds = {d.writes.front().latency_seconds, io_src + ", 4 KiB requests"};
    d.read_latency_seconds = {d.reads.front().latency_seconds, io_src + ", 4 KiB requests"};
    h.drives.push_back(d);
    save_hardware_profile(h, out);
    std::printf("I/O thread CRC-32C %.2f GB/s (compute loses %.2f s per second of it), ", io / 1e9, h.io_compute_steal.value);
    std::printf("memcpy %.1f GB/s, sgemm %.0f GFLOP/s, bf16 %.0f GFLOP/s, stream %.1f GB/s, O_DIRECT write %.2f / read %.2f GB/s\n",
                mc / 1e9, h.matmul_flops_fp32.value / 1e9, h.matmul_flops_bf16.value / 1e9, st / 1e9,
                d.write_bytes_per_second.value / 1e9, d.read_bytes_per_second.value / 1e9);
    if (h.gpu)
      std::printf(
          "%s: capacity %.2f GB, host-to-device %.1f GB/s, device-to-host %.1f GB/s, link latency %.1f us, "
          "launch %.1f us\n",
          g_device.str().c_str(), h.device_memory_bytes.value / 1e9,
          h.host_to_device_bytes_per_second.value / 1e9, h.device_to_host_bytes_per_second.value / 1e9,
          h.link_latency_seconds.value * 1e6, h.kernel_launch_seconds.value * 1e6);
    std::printf("wrote %s\n", out.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata_calibrate: %s\n", e.what());
    return 1;
  }
  return 0;
}
