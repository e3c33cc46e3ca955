// The zero-copy row gather kernel (ops/cuda/cuda_feature_gather.cu) against a plain CPU copy:
// aligned and naive lane mappings, every word size, rows misaligned to the 128-byte lines, host
// memory page-locked by either registration; bad ids and unregistered memory are errors. SKIPs
// without a CUDA device.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstring>
#include <string>
#include <vector>

#include "ops/dispatch.h"
#include "strata/config.h"
#include "strata/core/backend.h"
#include "strata/core/factory.h"
#include "support/device_present.h"

#if STRATA_HAVE_CUDA
#include "ops/cuda/cuda_feature_gather.h"

namespace strata {
namespace {

// Page-aligned host memory holding `bytes` of a fixed byte pattern, unmapped at the end.
class HostBuffer {
 public:
  explicit HostBuffer(size_t bytes) : bytes_(bytes) {
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    data_ = p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
    uint64_t x = bytes;
    for (size_t i = 0; data_ != nullptr && i < bytes; ++i) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      data_[i] = uint8_t(x >> 33);
    }
  }
  ~HostBuffer() {
    if (data_ != nullptr) ::munmap(data_, bytes_);
  }
  uint8_t* data() const { return data_; }
  size_t size() const { return bytes_; }

 private:
  size_t bytes_;
  uint8_t* data_ = nullptr;
};

std::vector<int64_t> ids_for(int64_t m, int64_t n) {
  std::vector<int64_t> ids(static_cast<size_t>(m));
  uint64_t x = 99;
  for (int64_t& v : ids) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    v = int64_t((x >> 20) % uint64_t(n));
  }
  ids[0] = n - 1;
  return ids;
}

// Gathers `m` rows of `row_bytes` from `rows` on cuda:0 with `alignment` and compares with memcpy.
void expect_gather(const uint8_t* rows, int64_t n, int64_t row_bytes, int64_t m,
                   gpu::RowAlignment alignment) {
  const std::vector<int64_t> ids = ids_for(m, n);
  const Tensor ids_gpu = from_vector(ids, {m}).to(cuda(0));
  const Tensor out = Tensor::empty({m, row_bytes}, DType::u8, cuda(0));
  gpu::gather_host_rows(out, rows, n, row_bytes, ids_gpu, alignment);
  const Tensor host = out.to(kCPU);
  std::vector<uint8_t> want(size_t(m * row_bytes));
  for (int64_t i = 0; i < m; ++i)
    std::memcpy(want.data() + i * row_bytes, rows + ids[size_t(i)] * row_bytes, size_t(row_bytes));
  EXPECT_EQ(std::memcmp(host.data_ptr(), want.data(), want.size()), 0)
      << row_bytes << "-byte rows, " << (alignment == gpu::RowAlignment::kAligned ? "aligned" : "naive");
}

TEST(CudaFeatureGather, AlignedAndNaiveKernelsCopyEveryRowExactly) {
  SKIP_WITHOUT_CUDA_DEVICE();
  HostBuffer host(size_t(16) << 20);
  ASSERT_NE(host.data(), nullptr);
  gpu::register_device_readable(host.data(), host.size());
  for (int64_t row_bytes :
       {int64_t(1), int64_t(6), int64_t(13), int64_t(64), int64_t(148), int64_t(400), int64_t(2048),
        int64_t(2052), int64_t(2056), int64_t(2060), int64_t(2076), int64_t(4100)}) {
    // Rows from the page's start, and from 4 and 8 bytes into it (smaller words).
    for (int64_t skew : {int64_t(0), int64_t(4), int64_t(8)}) {
      const int64_t n = int64_t(host.size() - 64) / row_bytes;
      for (auto a : {gpu::RowAlignment::kAligned, gpu::RowAlignment::kNaive})
        expect_gather(host.data() + skew, n, row_bytes, 3000, a);
    }
  }
  expect_gather(host.data(), 10, 400, 1, gpu::RowAlignment::kAligned);
  gpu::unregister_device_readable(host.data());
}

TEST(CudaFeatureGather, ReadsMemoryThePinnedFeatureStoreRegisters) {
  SKIP_WITHOUT_CUDA_DEVICE();
  // PinnedFeatureStore page-locks its rows with Backend::register_host_memory.
  HostBuffer host(size_t(4) << 20);
  Backend& gpu = BackendRegistry::instance().get(DeviceType::CUDA);
  gpu.register_host_memory(host.data(), host.size());
  expect_gather(host.data(), int64_t(host.size()) / 2052, 2052, 5000, gpu::RowAlignment::kAligned);
  gpu.unregister_host_memory(host.data());
}

TEST(CudaFeatureGather, BadIdsAndUnregisteredMemoryAreErrors) {
  SKIP_WITHOUT_CUDA_DEVICE();
  HostBuffer host(size_t(1) << 20);
  gpu::register_device_readable(host.data(), host.size());
  const Tensor out = Tensor::empty({3, 100}, DType::u8, cuda(0));
  const Tensor bad = from_vector(std::vector<int64_t>{1, 77777, 2}, {3}).to(cuda(0));
  try {
    gpu::gather_host_rows(out, host.data(), 1000, 100, bad);
    ADD_FAILURE() << "no error for id 77777";
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("77777"), std::string::npos) << e.what();
  }
  gpu::unregister_device_readable(host.data());
  std::vector<uint8_t> pageable(100000);
  const Tensor ids = from_vector(std::vector<int64_t>{1, 2, 3}, {3}).to(cuda(0));
  EXPECT_THROW(gpu::gather_host_rows(out, pageable.data(), 1000, 100, ids), DeviceError);
}

}  // namespace
}  // namespace strata

#endif  // STRATA_HAVE_CUDA
