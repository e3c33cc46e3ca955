// The cache's GPU path without a GPU: a stand-in "CUDA" backend whose memory is host memory and
// whose copies run asynchronously on a stream thread with real events. Asserts that the host pool
// and staging buffers are page-locked once, that stores wait for the compute mark taken when the
// tensor was saved, that loads land in device memory from the device's allocator, and that the
// bytes survive the round trip through the host and NVMe tiers, staged through host buffers or
// on the direct (GPUDirect Storage-shaped) path with device staging buffers and device checksums.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "memory/tiers/io_engine.h"
#include "support/spill_room.h"
#include "strata/strata.h"

using namespace strata;
using namespace strata::memory;

namespace {

class StandInAllocator final : public Allocator {
 public:
  void* allocate(size_t bytes, MemoryCategory category) override {
    ++allocations;
    stats_.on_alloc(category, int64_t(bytes));
    return std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  }
  void deallocate(void* ptr, size_t bytes, MemoryCategory category) override {
    stats_.on_free(category, int64_t(bytes));
    std::free(ptr);
  }
  Device device() const override { return cuda(0); }
  std::atomic<int> allocations{0};
};

// A marker that completes once its flag is set (by the "compute stream" or the copy thread).
class FlagEvent final : public Event {
 public:
  explicit FlagEvent(std::shared_ptr<std::atomic<bool>> done) : done_(std::move(done)) {}
  void record(Stream&) override {}
  bool query() const override { return done_->load(); }
  void synchronize() override {
    while (!done_->load()) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }

 private:
  std::shared_ptr<std::atomic<bool>> done_;
};

#define STAND_IN_UNUSED(...) \
  { throw NotImplementedError("stand-in GPU backend: no kernels"); }

class StandInGpu final : public Backend {
 public:
  StandInGpu() : copies_(backend_for(kCPU).create_stream(0)) {}
  ~StandInGpu() override { copies_->synchronize(); }
  DeviceType type() const override { return DeviceType::CUDA; }
  Allocator& allocator(int) override { return alloc; }
  Allocator& host_allocator() override { return cpu_allocator(); }
  std::unique_ptr<Stream> create_stream(int) override STAND_IN_UNUSED()
  std::unique_ptr<Event> create_event() override STAND_IN_UNUSED()
  void synchronize(int) override {}

  void register_host_memory(void* host, size_t bytes) override {
    ++registered;
    registered_bytes += bytes;
  }
  void unregister_host_memory(void*) override { ++unregistered; }
  std::unique_ptr<Event> record_compute(int) override {
    ++compute_marks;
    // The compute stream "finishes" the work issued so far a little later.
    auto done = std::make_shared<std::atomic<bool>>(false);
    std::thread([done] {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      done->store(true);
    }).detach();
    return std::make_unique<FlagEvent>(done);
  }
  std::unique_ptr<Event> copy_bytes_async(void* dst, const void* src, size_t bytes, int,
                                          Event* after) override {
    auto done = std::make_shared<std::atomic<bool>>(false);
    if (after) {
      ++copies_after_mark;
      EXPECT_NE(dynamic_cast<FlagEvent*>(after), nullptr);
    }
    copy_bytes += bytes;
    ++copies;
    copies_->enqueue([=, this] {
      if (after) after->synchronize();  // the mark outlives the copy: the caller waits for us
      if (after) {
        EXPECT_TRUE(after->query());
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      std::memcpy(dst, src, bytes);
      done->store(true);
    });
    return std::make_unique<FlagEvent>(done);
  }

  uint32_t crc32c_of(const void* ptr, size_t bytes, int device_index) override {
    ++checksums;
    return Backend::crc32c_of(ptr, bytes, device_index);  // the stand-in's memory is the host's
  }

#define STRATA_DENSE_KERNEL(ret, name, params, args) ret name params override STAND_IN_UNUSED()
#include "strata/core/backend_kernels.def"

  StandInAllocator alloc;
  std::atomic<int> registered{0}, unregistered{0}, compute_marks{0}, copies{0}, copies_after_mark{0}, checksums{0};
  std::atomic<size_t> registered_bytes{0}, copy_bytes{0};

 private:
  std::unique_ptr<Stream> copies_;
};

// Puts the stand-in in the CUDA slot for one test and the real one (if any) back after.
class StandInGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    (void)backend_for(kCPU);  // the built-in backends are registered
    auto gpu = std::make_unique<StandInGpu>();
    gpu_ = gpu.get();
    previous_ = BackendRegistry::instance().replace(DeviceType::CUDA, std::move(gpu));
  }
  void TearDown() override {
    BackendRegistry::instance().replace(DeviceType::CUDA, std::move(previous_));
  }
  // An f32 [n] tensor "on cuda:0" holding 0, 1, 2, ...
  Tensor device_tensor(int64_t n) {
    auto s = std::make_shared<StorageImpl>(size_t(n) * 4, cuda(0), &gpu_->alloc, MemoryCategory::Temporary);
    auto* p = static_cast<float*>(s->data());
    for (int64_t i = 0; i < n; ++i) p[i] = float(i) * 0.5f + 1.0f;
    return Tensor::from_storage(s, {n}, {1}, 0, DType::f32);
  }
  static void expect_same_values(const Tensor& t, int64_t n) {
    ASSERT_EQ(t.device(), cuda(0));
    const auto* p = static_cast<const float*>(t.storage()->data());
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(p[i], float(i) * 0.5f + 1.0f) << "element " << i;
  }
  // The NVMe tier over the stand-in: a 4 MiB arena in `dir`, 64 KiB chunks, three in flight.
  static TensorCacheOptions nvme_options(const std::filesystem::path& dir, DeviceIo device_io) {
    TensorCacheOptions o;
    o.device = cuda(0);
    o.min_bytes = 0;
    o.spill_dir = dir.string();
    o.spill_arena_bytes = 4 << 20;
    o.io_chunk_bytes = 64 << 10;
    o.io_queue_depth = 3;
    o.device_io = device_io;
    return o;
  }
  // One step that sends `n` floats to NVMe and brings them back: the values return, every byte is
  // counted written and read, nothing falls back. Returns the step's counters.
  CacheStats nvme_round_trip(TensorCache& cache, int64_t n) {
    cache.begin_step();
    autograd::Packed p = cache.pack(device_tensor(n), info("b0"));
    EXPECT_FALSE(p.tensor.defined());
    cache.wait_for_stores();
    Tensor back = cache.unpack(p, info("b0"));
    expect_same_values(back, n);
    back = Tensor();
    p = {};
    CacheStats s = cache.end_step();
    EXPECT_EQ(s.nvme.bytes_written, size_t(n) * 4);
    EXPECT_EQ(s.nvme.bytes_read, size_t(n) * 4);
    EXPECT_EQ(s.fallbacks, 0u);
    return s;
  }
  autograd::SaveInfo info(const std::string& block) {
    autograd::SaveInfo si;
    si.op = "test";
    si.scope = block;
    si.block = block;
    si.key = autograd::save_key(block, 0, si.op);
    return si;
  }
  StandInGpu* gpu_ = nullptr;
  std::unique_ptr<Backend> previous_;
};

}  // namespace

TEST_F(StandInGpuTest, HostTierPinsThePoolOnceAndRoundTripsDeviceBytesOnTheCopyStream) {
  TensorCacheOptions o;
  o.device = cuda(0);
  o.min_bytes = 0;
  o.host_pool_bytes = 1 << 20;
  auto cache = TensorCache::create(o, parse_cache_policy("rules:b*=host", 0));
  EXPECT_EQ(gpu_->registered.load(), 1);
  EXPECT_EQ(gpu_->registered_bytes.load(), size_t(1) << 20);

  cache->begin_step();
  const int64_t n = 20000;
  autograd::Packed packed[2];
  {
    Tensor a = device_tensor(n), b = device_tensor(n / 2);
    packed[0] = cache->pack(a, info("b0"));
    packed[1] = cache->pack(b, info("b1"));
    ASSERT_FALSE(packed[0].tensor.defined()) << "a device tensor must be offloaded, not kept";
    EXPECT_EQ(gpu_->compute_marks.load(), 2) << "each store waits for the compute work issued before the save";
  }
  cache->wait_for_stores();
  const int allocations_before_loads = gpu_->alloc.allocations.load();
  Tensor back0 = cache->unpack(packed[0], info("b0"));
  Tensor back1 = cache->unpack(packed[1], info("b1"));
  expect_same_values(back0, n);
  expect_same_values(back1, n / 2);
  EXPECT_EQ(gpu_->alloc.allocations.load(), allocations_before_loads + 2) << "loads allocate device memory";
  EXPECT_EQ(gpu_->copies.load(), 4);
  EXPECT_EQ(gpu_->copies_after_mark.load(), 4) << "stores after the save mark, loads after the allocation mark";
  back0 = Tensor();
  back1 = Tensor();
  packed[0] = {};
  packed[1] = {};
  CacheStats s = cache->end_step();
  EXPECT_EQ(s.host.bytes_written, size_t(n) * 4 + size_t(n / 2) * 4);
  EXPECT_EQ(s.host.bytes_read + s.host.bytes_reused, s.host.bytes_written);
  EXPECT_EQ(s.fallbacks, 0u);
  EXPECT_EQ(s.forwarded, 0u);
  EXPECT_EQ(s.host_pool_used, 0u);
  cache.reset();
  EXPECT_EQ(gpu_->unregistered.load(), 1);
}

TEST_F(StandInGpuTest, NvmeTierStagesDeviceChunksThroughPinnedBuffers) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  auto dir = std::filesystem::temp_directory_path() / ("strata_gpu_nvme_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const TensorCacheOptions o = nvme_options(dir, DeviceIo::Staged);
  {
    auto cache = TensorCache::create(o, parse_cache_policy("rules:b*=nvme", 0));
    EXPECT_EQ(gpu_->registered.load(), 6) << "both channels' staging buffers are page-locked at creation";
    EXPECT_EQ(cache->end_step().device_io.rfind("staged (", 0), 0u);
    nvme_round_trip(*cache, 100000);  // 400000 bytes: 7 chunks of 64 KiB
    EXPECT_EQ(gpu_->copies.load(), 14) << "one device copy per chunk each way";
    EXPECT_EQ(gpu_->checksums.load(), 0) << "staged chunks are checksummed on the host";
  }
  EXPECT_EQ(gpu_->unregistered.load(), 6);
  std::filesystem::remove_all(dir);
}

// The direct path: device staging buffers (from the device's allocator, freed with the cache)
// written to and read from the file without host staging; each chunk copied within the device
// and checksummed where it lives. The stand-in's memory is host memory, so pread/pwrite play
// cuFile's part.
TEST_F(StandInGpuTest, DirectPathMovesDeviceChunksThroughDeviceStagingBuffers) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  auto dir = std::filesystem::temp_directory_path() / ("strata_gpu_direct_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  TensorCacheOptions o = nvme_options(dir, DeviceIo::Direct);
  o.direct_engine = IoEngineKind::Threads;
  const int64_t staging_before = gpu_->alloc.stats().snapshot().current_of(MemoryCategory::CacheStaging);
  {
    auto cache = TensorCache::create(o, parse_cache_policy("rules:b*=nvme", 0));
    EXPECT_EQ(gpu_->registered.load(), 0) << "no host staging buffer carries device chunks";
    EXPECT_EQ(gpu_->alloc.stats().snapshot().current_of(MemoryCategory::CacheStaging) - staging_before,
              int64_t(6) * ((64 << 10) + 4096))
        << "three device staging buffers per direction, allocated once at creation";
    const CacheStats s = nvme_round_trip(*cache, 100000);  // 400000 bytes: 7 chunks of 64 KiB
    EXPECT_EQ(gpu_->copies.load(), 14) << "one device-to-device copy per chunk each way";
    EXPECT_EQ(gpu_->checksums.load(), 14) << "every chunk checksummed on the device, written and read";
    EXPECT_EQ(s.device_io, "direct (threads)");
  }
  EXPECT_EQ(gpu_->alloc.stats().snapshot().current_of(MemoryCategory::CacheStaging), staging_before)
      << "the device staging buffers go with the cache";
  std::filesystem::remove_all(dir);
}

// GPUDirect Storage cannot run here (no nvidia-fs, no GPU): Auto stages through the host and
// says so; Direct refuses to create the cache, naming the cause.
TEST_F(StandInGpuTest, DirectPathWhereGdsCannotRunIsStagedUnderAutoAndAnErrorUnderDirect) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  std::string why;
  if (cufile_available(&why))
    GTEST_SKIP() << "GPUDirect Storage works here: this check is for machines without it";
  auto dir = std::filesystem::temp_directory_path() / ("strata_gpu_gds_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  TensorCacheOptions o;
  o.device = cuda(0);
  o.spill_dir = dir.string();
  o.spill_arena_bytes = 1 << 20;
  {
    auto cache = TensorCache::create(o, parse_cache_policy("nvme", 0));
    EXPECT_EQ(cache->end_step().device_io.rfind("staged (", 0), 0u);
  }
  o.device_io = DeviceIo::Direct;
  try {
    TensorCache::create(o, parse_cache_policy("nvme", 0));
    ADD_FAILURE() << "DeviceIo::Direct without GPUDirect Storage must fail";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("GPUDirect Storage unavailable"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

TEST_F(StandInGpuTest, TensorsOnAnotherDeviceThanTheCachesAreKept) {
  TensorCacheOptions o;  // device: the CPU only
  o.min_bytes = 0;
  o.host_pool_bytes = 1 << 20;
  auto cache = TensorCache::create(o, parse_cache_policy("rules:b*=host", 0));
  EXPECT_EQ(gpu_->registered.load(), 0);
  cache->begin_step();
  Tensor a = device_tensor(1000);
  autograd::Packed p = cache->pack(a, info("b0"));
  EXPECT_TRUE(p.tensor.defined());
  EXPECT_EQ(gpu_->copies.load(), 0);
  p = {};
  EXPECT_EQ(cache->end_step().kept, 1u);
}
