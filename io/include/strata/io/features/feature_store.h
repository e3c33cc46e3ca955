// FeatureStore: node feature rows gathered by id from where they live: a tensor in memory, a
// feature file (mapped, or read row by row through a row cache when it is larger than the memory
// the process may use), or page-locked host memory that a GPU can read directly (PyTorch-Direct,
// Wu, arXiv 2412.04747, chapter 4).
//
//   io::MappedFeatureStore store("feat.npy", {.num_threads = 2, .resident_limit_bytes = 256 << 20});
//   std::future<Tensor> next = store.gather_async(blocks[0].nodes, device);  // on loader threads
//   Tensor x = next.get();                                                  // [M, F] on device
//
// A gather checks every id first, then copies rows on the store's loader threads (and the calling
// thread) straight into the output when the device's memory is host memory (CPU, sim), or into
// page-locked staging memory that is then copied to a GPU. The result is the same bits for any
// number of loader threads, and for every store holding the same rows.
#pragma once

#include <cstdint>
#include <future>
#include <memory>
#include <span>
#include <string>

#include "strata/core/device.h"
#include "strata/core/tensor.h"

namespace strata::io {

class LoaderThreads;

struct FeatureStoreOptions {
  // Threads that copy rows beside the calling thread; with 0 the calling thread copies alone and
  // gather_async gathers when its result is asked for.
  int num_threads = 2;
  int64_t rows_per_task = 256;  // rows a thread copies between two looks at the shared queue
  // MappedFeatureStore: how far ahead of the copies the rows' pages are requested from the file
  // (posix_fadvise WILLNEED), while gathers wait for reads from the drive; 0: never.
  uint64_t prefetch_window_bytes = uint64_t(4) << 20;
  // MappedFeatureStore: the most bytes of the file the process may hold. A file up to this size is
  // mapped and its rows copied from the mapping; a larger one is never mapped: its rows are read
  // with pread (through the page cache, which the kernel sizes) and kept in a row cache of this
  // size, which holds on to the rows asked for most. 0: no limit, always mapped.
  uint64_t resident_limit_bytes = 0;
};

class FeatureStore {
 public:
  virtual ~FeatureStore();
  FeatureStore(const FeatureStore&) = delete;
  FeatureStore& operator=(const FeatureStore&) = delete;

  int64_t num_rows() const { return num_rows_; }
  int64_t num_features() const { return num_features_; }
  DType dtype() const { return dtype_; }
  int64_t row_bytes() const { return num_features_ * int64_t(element_size(dtype_)); }
  // What the rows are read from, as messages name it: the file's path, or "memory".
  const std::string& source() const { return source_; }
  const FeatureStoreOptions& options() const { return options_; }

  // Rows node_ids[0], ..., node_ids[M - 1] as a new contiguous [M, F] tensor on `device`.
  // node_ids: an i32 or i64 tensor [M] (copied to the host first when it is on a GPU); ids may
  // repeat and come in any order. IndexError naming the store, the position and the id of the
  // first id outside [0, num_rows()); DeviceError for a device without a backend.
  Tensor gather(const Tensor& node_ids, Device device = kCPU) const;
  // The same gather run on a loader thread: returns at once, so the next batch's rows are gathered
  // while the current batch is used. The ids are checked here (IndexError); the result's get()
  // rethrows what the gather threw, and must come before the store is destroyed.
  std::future<Tensor> gather_async(const Tensor& node_ids, Device device = kCPU) const;
  // The rows of `ids` (checked as gather checks them) copied into `out`: host memory of
  // ids.size() * row_bytes() bytes, such as a buffer the caller reuses from batch to batch.
  void gather_into(std::span<const int64_t> ids, void* out) const;
  // Says these rows will be gathered soon (ids checked as gather checks them). MappedFeatureStore
  // starts reading their pages on a loader thread and returns at once (with no loader threads it
  // asks for them on the calling thread); the other stores have the rows at hand already.
  void prefetch(const Tensor& node_ids) const;

 protected:
  // `rows` (row 0's first byte; rows lie row_bytes() apart; null for a store whose copy_task
  // reads them otherwise) must stay valid until the derived class's destructor has called
  // join_loader_threads().
  FeatureStore(std::string source, const char* rows, int64_t num_rows, int64_t num_features, DType dtype,
               FeatureStoreOptions options);
  // Finishes queued gathers and joins the loader threads: the first thing a derived destructor
  // does, before the rows it owns go.
  void join_loader_threads();
  const char* rows() const { return rows_; }
  LoaderThreads* loader_threads() const { return threads_.get(); }

  // prefetch's work, with checked ids the store may keep. The default does nothing.
  virtual void start_prefetch(Tensor ids) const {}
  // Hooks of a gather into host memory, called with checked ids: begin_copy once before the
  // copies, copy_task for each task's rows [begin, end) of `ids` (on any thread; the default
  // copies them from rows()), end_copy once after the last.
  virtual void begin_copy(std::span<const int64_t> ids) const {}
  virtual void copy_task(std::span<const int64_t> ids, int64_t begin, int64_t end, char* out) const;
  virtual void end_copy(std::span<const int64_t> ids) const {}
  // A gather onto a device the host cannot address (a GPU): the rows are gathered into page-locked
  // staging memory and copied. A store whose rows the device reads itself overrides it.
  virtual Tensor gather_to_device(std::span<const int64_t> ids, Device device) const;
  // Copies the rows of `ids` into `out` (host memory, ids.size() rows) on the loader threads.
  void copy_rows(std::span<const int64_t> ids, char* out) const;

 private:
  Tensor gather_checked(const Tensor& ids, Device device) const;  // ids: checked, contiguous i64 on the CPU
  // `node_ids` checked (IndexError, ShapeError, TypeError) as a contiguous i64 CPU tensor, which
  // may share the caller's storage.
  Tensor checked_ids(const Tensor& node_ids) const;
  void check_ids(std::span<const int64_t> ids) const;

  std::string source_;
  const char* rows_ = nullptr;
  int64_t num_rows_ = 0, num_features_ = 0;
  DType dtype_ = DType::f32;
  FeatureStoreOptions options_;
  std::unique_ptr<LoaderThreads> threads_;
};

// (a) The rows of a tensor in host memory: the plain in-memory baseline.
class TensorFeatureStore final : public FeatureStore {
 public:
  // `features`: [N, F] of any dtype on the CPU or a sim device (made contiguous; no copy when it
  // already is). ShapeError / DeviceError otherwise.
  explicit TensorFeatureStore(Tensor features, FeatureStoreOptions options = {});
  ~TensorFeatureStore() override;
  const Tensor& features() const { return features_; }

 private:
  TensorFeatureStore(Tensor contiguous, FeatureStoreOptions options, int);
  Tensor features_;
};

// (b) The rows of a feature file (.npy, C order, [N, F]; feature_file.h writes one), read where
// they lie: the operating system pages in what the copies touch, so the file may be larger than
// memory. Mapped and copied from the mapping when the file fits resident_limit_bytes (or there is
// no limit); read row by row with pread when it does not, through a row cache of the limit's size
// (a fault would map 16 cached neighbouring pages or a whole large folio per row, and unmapping
// them again to stay under the limit costs far more than the reads). Reads are marked random (no
// read-around of neighbouring pages); while gathers wait for the drive, each task requests the
// rows prefetch_window_bytes ahead of it from the file.
class MappedFeatureStore final : public FeatureStore {
 public:
  // IoError naming the file (and the byte offset) when it cannot be opened or mapped, its header
  // is bad, its data is truncated or longer than the header says, it is not 2-D, or it holds
  // booleans. A file that shrinks later makes the gathers that read past its end throw IoError
  // naming the file and the offset when rows are read with pread; a mapped one must not shrink
  // (a read past the end of a mapping ends the process with SIGBUS).
  explicit MappedFeatureStore(const std::string& path, FeatureStoreOptions options = {});
  ~MappedFeatureStore() override;

  // Whether rows are copied from a mapping (the file fits the resident limit) or read with pread.
  bool maps_rows() const;
  // Rows a pread-reading store served from its row cache, and rows it read from the file.
  int64_t rows_from_cache() const;
  int64_t rows_read() const;
  // Bytes of the file mapped into this process now (the mapping's Rss in /proc/self/smaps; 0 when
  // the rows are read with pread): for tests and benchmarks.
  uint64_t resident_bytes() const;

 private:
  struct Mapping;
  MappedFeatureStore(std::unique_ptr<Mapping> mapping, FeatureStoreOptions options);
  void start_prefetch(Tensor ids) const override;
  void begin_copy(std::span<const int64_t> ids) const override;
  void copy_task(std::span<const int64_t> ids, int64_t begin, int64_t end, char* out) const override;
  void end_copy(std::span<const int64_t> ids) const override;
  std::unique_ptr<Mapping> map_;
};

// (c) The rows copied once into page-aligned host memory, page-locked for `device` when it is a
// GPU (Backend::register_host_memory). Gathers onto that GPU are done by the device itself
// (Backend::gather_host_rows: the zero-copy kernel of ops/cuda/cuda_feature_gather.cu,
// PyTorch-Direct's, reading each row over the bus in 128-byte aligned lines), with no staging
// copy. On the CPU and sim devices the memory is plain and gathers copy on the loader threads.
class PinnedFeatureStore final : public FeatureStore {
 public:
  // Copies every row of `source` (any store: a tensor's, a file's) in, 64 MiB of rows at a time
  // (source.gather_into, on the source's loader threads). DeviceError for a GPU that is absent.
  PinnedFeatureStore(const FeatureStore& source, Device device, FeatureStoreOptions options = {});
  // The rows of `features` ([N, F] in host memory, as TensorFeatureStore takes it).
  PinnedFeatureStore(const Tensor& features, Device device, FeatureStoreOptions options = {});
  ~PinnedFeatureStore() override;

  Device device() const { return device_; }
  // Whether the rows are page-locked for device(): a GPU that is present.
  bool page_locked() const { return locked_; }

 private:
  struct Rows;
  PinnedFeatureStore(std::unique_ptr<Rows> rows, const FeatureStore& source, Device device,
                     FeatureStoreOptions options);
  Tensor gather_to_device(std::span<const int64_t> ids, Device device) const override;
  std::unique_ptr<Rows> pinned_;
  Device device_;
  bool locked_ = false;
};

}  // namespace strata::io
