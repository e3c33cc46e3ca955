// Feature stores: the in-memory, file (mapped or read) and page-locked stores gather the same bits
// for any ids, loader thread count and device; a file larger than the resident limit is gathered
// right without the process mapping any of it; bad ids and bad files are errors naming the id, or
// the file and the offset.
#include "strata/io/features/feature_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ops/dispatch.h"
#include "strata/core/backend.h"
#include "strata/core/error.h"
#include "strata/core/factory.h"
#include "strata/io/features/feature_file.h"
#include "support/device_present.h"
#include "support/error_of.h"
#include "support/loader_files.h"

using namespace strata;
using namespace strata::io;
namespace fs = std::filesystem;

namespace {

using strata::testing::TempDir;

// A fixed 64-bit linear congruential sequence.
struct Lcg {
  uint64_t x;
  uint64_t next() {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x >> 17;
  }
};

// [n, f] of `dtype` holding arbitrary bytes (NaN patterns included: the stores copy bits).
Tensor random_rows(int64_t n, int64_t f, DType dtype, uint64_t seed) {
  Tensor t = Tensor::empty({n, f}, dtype);
  Lcg g{seed};
  auto* p = static_cast<uint8_t*>(t.data_ptr());
  for (size_t i = 0; i < t.nbytes(); ++i) p[i] = uint8_t(g.next());
  return t;
}

// `m` ids in [0, n), skewed toward low ids, with repeats.
std::vector<int64_t> skewed_ids(int64_t m, int64_t n, uint64_t seed) {
  Lcg g{seed};
  std::vector<int64_t> ids(static_cast<size_t>(m));
  for (int64_t& v : ids) v = int64_t(std::min(g.next() % uint64_t(n), g.next() % uint64_t(n)));
  return ids;
}

Tensor id_tensor(const std::vector<int64_t>& ids) { return from_vector(ids, {int64_t(ids.size())}); }

// The rows of `ids`, copied by a plain loop.
std::vector<uint8_t> reference_rows(const Tensor& table, const std::vector<int64_t>& ids) {
  const size_t r = table.nbytes() / size_t(std::max<int64_t>(table.size(0), 1));
  std::vector<uint8_t> out(ids.size() * r);
  for (size_t i = 0; i < ids.size() && r > 0; ++i)
    std::memcpy(out.data() + i * r, static_cast<const uint8_t*>(table.data_ptr()) + size_t(ids[i]) * r, r);
  return out;
}

void expect_rows(const Tensor& got, const Tensor& table, const std::vector<int64_t>& ids, Device device) {
  ASSERT_EQ(got.device(), device);
  ASSERT_EQ(got.dtype(), table.dtype());
  ASSERT_EQ(got.shape(), (Shape{int64_t(ids.size()), table.size(1)}));
  ASSERT_TRUE(got.is_contiguous());
  const Tensor host = device.is_host_memory() ? got : got.to(kCPU);
  const std::vector<uint8_t> want = reference_rows(table, ids);
  ASSERT_EQ(host.nbytes(), want.size());
  if (!want.empty()) EXPECT_EQ(std::memcmp(host.data_ptr(), want.data(), want.size()), 0) << "rows differ";
}

}  // namespace

TEST(FeatureStores, MemoryFileAndPinnedStoresGatherTheSameBits) {
  TempDir dir;
  struct Case {
    DType dtype;
    int64_t f;
  };
  for (Case c : {Case{DType::f32, 37}, Case{DType::f64, 5}, Case{DType::u8, 3}, Case{DType::i64, 1},
                 Case{DType::f16, 64}, Case{DType::i32, 32}}) {
    SCOPED_TRACE(std::string(dtype_name(c.dtype)) + " F=" + std::to_string(c.f));
    const int64_t n = 1000;
    const Tensor table = random_rows(n, c.f, c.dtype, uint64_t(c.f) * 7 + 1);
    const std::string path = dir.file("feat_" + std::string(dtype_name(c.dtype)) + ".npy");
    write_feature_file(path, table);
    const FeatureStoreOptions opts{.num_threads = 2, .rows_per_task = 7};
    TensorFeatureStore memory(table, opts);
    MappedFeatureStore mapped(path, opts);
    PinnedFeatureStore pinned(mapped, kCPU, opts);
    for (const FeatureStore* store :
         {static_cast<const FeatureStore*>(&memory), static_cast<const FeatureStore*>(&mapped),
          static_cast<const FeatureStore*>(&pinned)}) {
      SCOPED_TRACE(store->source());
      EXPECT_EQ(store->num_rows(), n);
      EXPECT_EQ(store->num_features(), c.f);
      EXPECT_EQ(store->dtype(), c.dtype);
      const std::vector<int64_t> ids = skewed_ids(777, n, 3);
      expect_rows(store->gather(id_tensor(ids)), table, ids, kCPU);
      expect_rows(store->gather(id_tensor(ids).to(DType::i32)), table, ids, kCPU);  // i32 ids
      expect_rows(store->gather(id_tensor(ids), sim(0)), table, ids, sim(0));
      expect_rows(store->gather(id_tensor({}), kCPU), table, {}, kCPU);
      const std::vector<int64_t> last{n - 1, 0, n - 1};
      expect_rows(store->gather(id_tensor(last)), table, last, kCPU);
      std::vector<uint8_t> into(ids.size() * size_t(store->row_bytes()));
      store->gather_into(ids, into.data());
      EXPECT_EQ(into, reference_rows(table, ids));
    }
    EXPECT_FALSE(pinned.page_locked());
  }
}

TEST(FeatureStores, StridedTensorAndStridedIdsGatherLikeContiguousOnes) {
  const Tensor wide = random_rows(300, 20, DType::f32, 11);
  const Tensor table = wide.narrow(1, 3, 9);  // [300, 9], not contiguous
  TensorFeatureStore store(table, {.num_threads = 1, .rows_per_task = 16});
  const std::vector<int64_t> ids = skewed_ids(100, 300, 5);
  std::vector<int64_t> doubled;
  for (int64_t v : ids) doubled.push_back(v), doubled.push_back(-1);
  const Tensor every_other = id_tensor(doubled).slice(0, 0, int64_t(doubled.size()), 2);  // stride 2
  expect_rows(store.gather(every_other), table.contiguous(), ids, kCPU);
}

TEST(MappedFeatureStore, FileLargerThanTheResidentLimitGathersEveryBatchRight) {
  TempDir dir;
  const int64_t n = 16384, f = 128;  // 8 MiB of f32 rows
  const Tensor table = random_rows(n, f, DType::f32, 17);
  const std::string path = dir.file("big.npy");
  write_feature_file(path, table);
  const uint64_t limit = uint64_t(1) << 20;
  ASSERT_GT(fs::file_size(path), 4 * limit);
  MappedFeatureStore store(path, {.num_threads = 2,
                                  .rows_per_task = 64,
                                  .prefetch_window_bytes = 64 << 10,
                                  .resident_limit_bytes = limit});
  EXPECT_FALSE(store.maps_rows());
  int64_t asked = 0;
  for (int batch = 0; batch < 12; ++batch) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    const std::vector<int64_t> ids = skewed_ids(3000, n, 100 + uint64_t(batch));
    store.prefetch(id_tensor(ids));
    expect_rows(store.gather(id_tensor(ids)), table, ids, kCPU);
    EXPECT_EQ(store.resident_bytes(), 0u);
    asked += int64_t(ids.size());
  }
  // Every row came from the cache or the file; the skewed ids' low rows came back from the cache.
  EXPECT_EQ(store.rows_from_cache() + store.rows_read(), asked);
  EXPECT_GT(store.rows_from_cache(), asked / 10);

  // Within the limit, or without one, the file is mapped and the rows copied from the mapping.
  for (uint64_t fits : {uint64_t(0), uint64_t(fs::file_size(path))}) {
    MappedFeatureStore mapped(path, {.num_threads = 2, .resident_limit_bytes = fits});
    EXPECT_TRUE(mapped.maps_rows());
    const std::vector<int64_t> all = skewed_ids(20000, n, 9);
    expect_rows(mapped.gather(id_tensor(all)), table, all, kCPU);
    EXPECT_GT(mapped.resident_bytes(), 0u);
    EXPECT_LE(mapped.resident_bytes(), fs::file_size(path) + 4096);
  }
}

TEST(FeatureStores, GathersAheadOnLoaderThreadsGiveTheSameBitsForZeroOneTwoThreads) {
  TempDir dir;
  const int64_t n = 5000, f = 51;  // 204-byte rows: no row is aligned to anything much
  const Tensor table = random_rows(n, f, DType::f32, 23);
  const std::string path = dir.file("feat.npy");
  write_feature_file(path, table);
  std::vector<std::vector<uint8_t>> first;
  for (int threads : {0, 1, 2}) {
    SCOPED_TRACE(std::to_string(threads) + " loader threads");
    const FeatureStoreOptions opts{.num_threads = threads, .rows_per_task = 33};
    FeatureStoreOptions read_opts = opts;
    read_opts.resident_limit_bytes = 256 << 10;  // smaller than the file: rows read with pread
    MappedFeatureStore mapped(path, opts), read(path, read_opts);
    TensorFeatureStore memory(table, opts);
    ASSERT_FALSE(read.maps_rows());
    std::vector<std::vector<uint8_t>> got;
    for (const FeatureStore* store :
         {static_cast<const FeatureStore*>(&mapped), static_cast<const FeatureStore*>(&read),
          static_cast<const FeatureStore*>(&memory)}) {
      // Three batches in flight at a time, as a trainer keeps the next ones coming.
      std::vector<std::future<Tensor>> pending;
      std::vector<std::vector<int64_t>> batches;
      for (int b = 0; b < 8; ++b) {
        batches.push_back(skewed_ids(1500, n, 40 + uint64_t(b)));
        store->prefetch(id_tensor(batches.back()));
        pending.push_back(store->gather_async(id_tensor(batches.back()), b % 2 == 0 ? kCPU : sim(0)));
      }
      for (size_t b = 0; b < pending.size(); ++b) {
        const Tensor rows = pending[b].get();
        expect_rows(rows, table, batches[b], b % 2 == 0 ? kCPU : sim(0));
        const auto* p = static_cast<const uint8_t*>(rows.data_ptr());
        got.emplace_back(p, p + rows.nbytes());
      }
    }
    if (first.empty())
      first = got;
    else
      EXPECT_EQ(got, first);
  }
}

TEST(FeatureStores, OutOfRangeIdsThrowIndexErrorNamingTheIdAndItsPosition) {
  TempDir dir;
  const Tensor table = random_rows(100, 4, DType::f32, 1);
  const std::string path = dir.file("feat.npy");
  write_feature_file(path, table);
  TensorFeatureStore memory(table);
  MappedFeatureStore mapped(path);
  for (const FeatureStore* store :
       {static_cast<const FeatureStore*>(&memory), static_cast<const FeatureStore*>(&mapped)}) {
    for (int64_t bad : {int64_t(100), int64_t(-5), int64_t(1) << 40}) {
      const Tensor ids = id_tensor({3, 7, bad, 9});
      const std::string id = std::to_string(bad);
      try {
        store->gather(ids);
        ADD_FAILURE() << "no error for id " << bad;
      } catch (const IndexError& e) {
        EXPECT_NE(std::string(e.what()).find("node id " + id + " at position 2"), std::string::npos)
            << e.what();
        EXPECT_NE(std::string(e.what()).find(store->source()), std::string::npos) << e.what();
      }
      EXPECT_THROW(store->gather_async(ids), IndexError);
      EXPECT_THROW(store->prefetch(ids), IndexError);
      EXPECT_THROW(store->gather_into(std::vector<int64_t>{bad}, nullptr), IndexError);
    }
    EXPECT_THROW(store->gather(Tensor::empty({2, 2}, DType::i64)), ShapeError);
    EXPECT_THROW(store->gather(Tensor::empty({2}, DType::f32)), TypeError);
  }
}

TEST(MappedFeatureStore, TruncatedOrCorruptFilesThrowNamingTheFileAndTheOffset) {
  TempDir dir;
  const Tensor table = random_rows(50, 6, DType::f32, 2);
  const std::string good = dir.file("good.npy");
  write_feature_file(good, table);
  std::string bytes;
  {
    std::ifstream in(good, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_EQ(bytes.size(), 128u + 50 * 6 * 4);  // the data starts on a 64-byte boundary
  auto expect_io_error = [&](const std::string& name, const std::string& content, const std::string& offset) {
    SCOPED_TRACE(name);
    const std::string path = dir.file(name);
    {
      std::ofstream out(path, std::ios::binary);
      out << content;
    }
    try {
      MappedFeatureStore store(path);
      ADD_FAILURE() << "opened " << path;
    } catch (const IoError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(path), std::string::npos) << what;
      EXPECT_NE(what.find("byte offset " + offset), std::string::npos) << what;
    }
  };
  expect_io_error("truncated.npy", bytes.substr(0, bytes.size() - 5), "128");
  expect_io_error("longer.npy", bytes + "xyz", "128");
  std::string magic = bytes;
  magic[1] = 'X';
  expect_io_error("magic.npy", magic, "0");
  std::string shape = bytes;
  shape.replace(shape.find("(50, 6)"), 7, "(50, x)");
  expect_io_error("shape.npy", shape, "");
  expect_io_error("header.npy", bytes.substr(0, 30), "8");
  std::string flat = bytes;  // the same bytes as a 1-D array
  flat.replace(flat.find("(50, 6)"), 7, "(300,) ");
  expect_io_error("flat.npy", flat, "128");
  EXPECT_THROW(MappedFeatureStore(dir.file("missing.npy")), IoError);

  // A file read with pread that shrinks after it was opened: the gather names the file and where
  // it now ends.
  const std::string shrinking = dir.file("shrinking.npy");
  write_feature_file(shrinking, table);
  MappedFeatureStore store(shrinking, {.num_threads = 2, .rows_per_task = 4, .resident_limit_bytes = 256});
  ASSERT_FALSE(store.maps_rows());
  fs::resize_file(shrinking, 128 + 40 * 6 * 4 + 10);  // rows 0..39 whole, row 40 in part
  const std::vector<int64_t> fine{0, 39, 12};
  expect_rows(store.gather(id_tensor(fine)), table, fine, kCPU);
  const std::string what = strata::testing::error_of<IoError>([&] {
    store.gather(id_tensor({1, 2, 45, 3}));
  });
  EXPECT_NE(what.find(shrinking), std::string::npos) << what;
  EXPECT_NE(what.find("row 45"), std::string::npos) << what;
  EXPECT_NE(what.find("byte offset " + std::to_string(128 + 45 * 6 * 4)), std::string::npos) << what;
}

// A mapped file that shrinks after it was opened: a row past the new end, which used to end the
// process with SIGBUS, is the same IoError the pread path gives; rows still there are copied, and
// the store keeps working for them afterwards.
TEST(MappedFeatureStore, AFileTruncatedUnderTheMappingIsAnErrorNotASigbus) {
  TempDir dir;
  const Tensor table = random_rows(2000, 6, DType::f32, 3);  // 48,000 bytes of rows: 12 pages
  const std::string path = dir.file("mapped.npy");
  write_feature_file(path, table);
  MappedFeatureStore store(path, {.num_threads = 2, .rows_per_task = 4});
  ASSERT_TRUE(store.maps_rows());
  fs::resize_file(path, 128 + 100 * 6 * 4);  // the rows after row 99 are gone (their pages too)
  const std::vector<int64_t> fine{0, 99, 12};
  expect_rows(store.gather(id_tensor(fine)), table, fine, kCPU);
  for (int attempt = 0; attempt < 2; ++attempt) {
    const std::string what = strata::testing::error_of<IoError>([&] {
      store.gather(id_tensor({1, 2, 1500, 3}));
    });
    EXPECT_NE(what.find(path), std::string::npos) << what;
    EXPECT_NE(what.find("row 1500 at byte offset " + std::to_string(128 + 1500 * 6 * 4)), std::string::npos)
        << what;
    EXPECT_NE(what.find("now ends at byte offset " + std::to_string(128 + 100 * 6 * 4)), std::string::npos)
        << what;
  }
  expect_rows(store.gather(id_tensor(fine)), table, fine, kCPU);
}

TEST(FeatureFileWriter, RefusesAWrongRowCountAndLeavesNothingBehind) {
  TempDir dir;
  const std::string path = dir.file("partial.npy");
  {
    FeatureFileWriter w(path, 10, 4, DType::f32);
    w.append(random_rows(6, 4, DType::f32, 1));
    EXPECT_THROW(w.append(random_rows(5, 4, DType::f32, 2)), ValueError);
    EXPECT_THROW(w.append(random_rows(2, 3, DType::f32, 2)), ShapeError);
    EXPECT_THROW(w.append(random_rows(2, 4, DType::f64, 2)), TypeError);
    EXPECT_THROW(w.commit(), ValueError);
  }
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(fs::is_empty(fs::path(path).parent_path()));
  EXPECT_THROW(FeatureFileWriter(path, 1, 1, DType::bf16), TypeError);

  FeatureFileWriter w(path, 10, 4, DType::f32);
  const Tensor a = random_rows(6, 4, DType::f32, 1), b = random_rows(4, 4, DType::f32, 2);
  w.append(a);
  w.append(b);
  w.commit();
  MappedFeatureStore store(path);
  std::vector<int64_t> all(10);
  for (int64_t i = 0; i < 10; ++i) all[size_t(i)] = i;
  const Tensor got = store.gather(id_tensor(all));
  EXPECT_EQ(std::memcmp(got.data_ptr(), a.data_ptr(), a.nbytes()), 0);
  EXPECT_EQ(std::memcmp(static_cast<const char*>(got.data_ptr()) + a.nbytes(), b.data_ptr(), b.nbytes()), 0);
}

TEST(PinnedFeatureStore, GathersOntoAGpuLikeOntoTheCpu) {
  SKIP_WITHOUT_CUDA_DEVICE();
  TempDir dir;
  const Tensor table = random_rows(4000, 513, DType::f32, 31);  // 2052-byte rows
  PinnedFeatureStore pinned(table, cuda(0), {.num_threads = 2});
  EXPECT_TRUE(pinned.page_locked());
  const std::vector<int64_t> ids = skewed_ids(3000, 4000, 8);
  expect_rows(pinned.gather(id_tensor(ids), cuda(0)), table, ids, cuda(0));
  expect_rows(pinned.gather(id_tensor(ids).to(cuda(0)), cuda(0)), table, ids, cuda(0));  // ids on the GPU
  const std::string path = dir.file("feat.npy");
  write_feature_file(path, table);
  MappedFeatureStore mapped(path);
  expect_rows(mapped.gather(id_tensor(ids), cuda(0)), table, ids, cuda(0));
}

TEST(FeatureStores, BackendsGatherHostRowsIntoTheirMemory) {
  // Backend::gather_host_rows, the seam a GPU's zero-copy gather sits behind: the host-addressed
  // devices copy the rows; a bad id is an IndexError naming it.
  ops::detail::register_builtin_backends();
  const int64_t rows = 9, row_bytes = 12;
  std::vector<char> host(size_t(rows * row_bytes));
  for (size_t i = 0; i < host.size(); ++i) host[i] = char(i * 7 + 3);
  for (Device d : {kCPU, sim(0)}) {
    SCOPED_TRACE(d.str());
    const Tensor ids = from_vector(std::vector<int64_t>{8, 0, 8, 3}, {4}).to(d);
    Tensor out = Tensor::empty({4, row_bytes}, DType::u8, d);
    backend_for(d).gather_host_rows(out, host.data(), rows, row_bytes, ids);
    const Tensor got = out.to(kCPU);
    const auto* g = static_cast<const char*>(got.data_ptr());
    for (int64_t i = 0; i < 4; ++i)
      EXPECT_EQ(std::memcmp(g + i * row_bytes,
                            host.data() + std::vector<int64_t>{8, 0, 8, 3}[size_t(i)] * row_bytes,
                            size_t(row_bytes)),
                0);
    EXPECT_THROW(backend_for(d).gather_host_rows(out, host.data(), rows, row_bytes,
                                                 from_vector(std::vector<int64_t>{0, 9, 1, 2}, {4}).to(d)),
                 IndexError);
  }
}
