// MappedFeatureStore: a .npy feature file whose rows are copied from a read-only mapping, or,
// when the file is larger than the resident limit, read one by one with pread through a row cache
// of the limit's size (row_cache.h).
//
// Both go through the page cache: a copy from the mapping faults the row's page in (a minor fault
// when the page cache has it, a major one, a read from the drive, when not), a pread copies it
// from the page cache or reads it first. The file is marked random (MADV_RANDOM,
// POSIX_FADV_RANDOM) so that a miss reads only its own page instead of a read-around window,
// which for scattered rows would mostly be wasted. While copies take major faults (or the file is
// read from the drive), each task asks the kernel to start reading the pages of the rows a window
// ahead of it (POSIX_FADV_WILLNEED, asynchronous), so that several reads are in flight per loader
// thread; once a gather waits for no read, that ends and a page cache holding the file costs no
// system calls for it.
//
// Why not map a file larger than the limit and unmap it (MADV_DONTNEED) whenever the process holds
// more than the limit: a fault maps every cached page around it (fault-around, 16 pages) or the
// whole large folio the page holds (up to 2 MiB), so a scattered row costs 16 or more page-table
// entries to map and later to unmap. Measured on a 1 GiB file of 1 KiB rows under a 256 MiB limit,
// that was 11 us a row against 1.5 us for a pread.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "io/features/loader_threads.h"
#include "io/features/row_cache.h"
#include "io/graphs/npy_file.h"
#include "io/mapped_copy.h"
#include "strata/core/error.h"
#include "strata/io/features/feature_store.h"

namespace strata::io {
namespace {

constexpr uint64_t kPage = 4096;

// Reads from the drive the calling thread has waited for: major faults on the mapping, and the
// blocks pread had to read.
int64_t drive_reads_of_this_thread() {
  struct rusage u {};
  ::getrusage(RUSAGE_THREAD, &u);
  return int64_t(u.ru_majflt) + int64_t(u.ru_inblock);
}

}  // namespace

struct MappedFeatureStore::Mapping {
  std::string path;
  int fd = -1;
  char* base = nullptr;  // the mapping, or null when rows are read with pread
  size_t length = 0;
  NpyLayout layout;
  std::unique_ptr<RowCache> cache;      // rows read with pread, within the resident limit
  std::atomic<int64_t> drive_reads{0};  // waited for by the copies of the gathers under way
  std::atomic<bool> read_ahead{true};   // whether the last gather waited for the drive

  // Opens `path`; maps it unless it is larger than `limit` (0: no limit).
  static std::unique_ptr<Mapping> open(const std::string& path, uint64_t limit);
  ~Mapping() {
    if (base != nullptr) ::munmap(base, length);
    if (fd >= 0) ::close(fd);
  }
  const char* rows() const { return base == nullptr ? nullptr : base + layout.data_offset; }
  int64_t row_bytes() const { return layout.shape[1] * int64_t(element_size(layout.dtype)); }

  // Starts reading the pages of rows ids[begin, end) into the page cache.
  void advise(std::span<const int64_t> ids, int64_t begin, int64_t end) const {
    const auto r = uint64_t(row_bytes());
    uint64_t last = ~uint64_t(0);
    for (int64_t i = begin; i < end; ++i) {
      const uint64_t at = layout.data_offset + uint64_t(ids[size_t(i)]) * r;
      const uint64_t first = at & ~(kPage - 1);
      if (first == last && at + r <= first + kPage) continue;  // the page just asked for
      ::posix_fadvise(fd, off_t(first), off_t(at + r - first), POSIX_FADV_WILLNEED);
      last = first;
    }
  }

  // The error for row `row` of a file that has shrunk since it was opened (read with pread, or
  // faulted on in the mapping): the file, the row's offset and where the file now ends.
  IoError truncated(int64_t row) const {
    struct stat st {};
    ::fstat(fd, &st);
    return IoError(detail::concat("'", path, "' is truncated: row ", row, " at byte offset ",
                                  layout.data_offset + uint64_t(row) * uint64_t(row_bytes()), " needs ",
                                  row_bytes(), " bytes but the file now ends at byte offset ", st.st_size));
  }

  // Reads rows ids[begin, end) into `out`; IoError naming the file and the offset when the file
  // has shrunk since it was opened or a read fails.
  void read_rows(std::span<const int64_t> ids, int64_t begin, int64_t end, char* out) const {
    const auto r = uint64_t(row_bytes());
    for (int64_t i = begin; i < end; ++i, out += r) {
      if (cache->find(ids[size_t(i)], out)) continue;
      const uint64_t at = layout.data_offset + uint64_t(ids[size_t(i)]) * r;
      for (uint64_t done = 0; done < r;) {
        const ssize_t n = ::pread(fd, out + done, size_t(r - done), off_t(at + done));
        if (n < 0 && errno == EINTR) continue;
        STRATA_CHECK(n >= 0, IoError, "reading row ", ids[size_t(i)], " of '", path,
                     "' failed at byte offset ", at + done, " (", std::strerror(errno), ")");
        if (n == 0) throw truncated(ids[size_t(i)]);
        done += uint64_t(n);
      }
      cache->offer(ids[size_t(i)], out);
    }
  }
};

std::unique_ptr<MappedFeatureStore::Mapping> MappedFeatureStore::Mapping::open(const std::string& path,
                                                                               uint64_t limit) {
  auto m = std::make_unique<Mapping>();
  m->path = path;
  m->layout = read_npy_layout(path);
  const NpyLayout& l = m->layout;
  STRATA_CHECK(l.shape.size() == 2, IoError, "'", path, "' at byte offset ", l.data_offset,
               ": a feature file holds a 2-D array [N, F], this one has shape ", shape_str(l.shape));
  STRATA_CHECK(l.dtype != DType::boolean, IoError, "'", path, "' at byte offset ", l.data_offset,
               ": boolean features are not supported (store them as |u1)");
  m->fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  STRATA_CHECK(m->fd >= 0, IoError, "cannot open '", path, "' (", std::strerror(errno), ")");
  struct stat st {};
  STRATA_CHECK(::fstat(m->fd, &st) == 0, IoError, "cannot stat '", path, "' (", std::strerror(errno), ")");
  const uint64_t end = l.data_offset + l.data_bytes;
  STRATA_CHECK(uint64_t(st.st_size) == end, IoError, "'", path, "' at byte offset ",
               std::min<uint64_t>(end, uint64_t(st.st_size)), ": the file changed while it was opened (",
               st.st_size, " bytes, the header needs ", end, ")");
  m->length = size_t(end);
  ::posix_fadvise(m->fd, 0, 0, POSIX_FADV_RANDOM);
  if (limit > 0 && end > limit) {  // read with pread, through a cache of the limit's size
    m->cache = std::make_unique<RowCache>(limit, m->row_bytes());
    return m;
  }
  void* p = ::mmap(nullptr, m->length, PROT_READ, MAP_SHARED, m->fd, 0);
  STRATA_CHECK(p != MAP_FAILED, IoError, "cannot map '", path, "' (", m->length,
               " bytes: ", std::strerror(errno), ")");
  m->base = static_cast<char*>(p);
  ::madvise(m->base, m->length, MADV_RANDOM);
  return m;
}

MappedFeatureStore::MappedFeatureStore(const std::string& path, FeatureStoreOptions options)
    : MappedFeatureStore(Mapping::open(path, options.resident_limit_bytes), options) {}

MappedFeatureStore::MappedFeatureStore(std::unique_ptr<Mapping> m, FeatureStoreOptions options)
    : FeatureStore(m->path, m->rows(), m->layout.shape[0], m->layout.shape[1], m->layout.dtype, options),
      map_(std::move(m)) {}

MappedFeatureStore::~MappedFeatureStore() { join_loader_threads(); }

bool MappedFeatureStore::maps_rows() const { return map_->base != nullptr; }

int64_t MappedFeatureStore::rows_from_cache() const { return map_->cache ? map_->cache->hits() : 0; }

int64_t MappedFeatureStore::rows_read() const { return map_->cache ? map_->cache->misses() : 0; }

void MappedFeatureStore::start_prefetch(Tensor ids) const {
  if (!map_->read_ahead.load()) return;
  loader_threads()->post([m = map_.get(), ids = std::move(ids)] {
    m->advise({ids.data<int64_t>(), size_t(ids.numel())}, 0, ids.numel());
  });
}

void MappedFeatureStore::begin_copy(std::span<const int64_t> ids) const {
  const uint64_t window = options().prefetch_window_bytes;
  if (window == 0 || !map_->read_ahead.load()) return;
  const int64_t ahead = int64_t(window / uint64_t(row_bytes())) + 1;
  map_->advise(ids, 0, std::min<int64_t>(int64_t(ids.size()), ahead));
}

void MappedFeatureStore::copy_task(std::span<const int64_t> ids, int64_t begin, int64_t end,
                                   char* out) const {
  Mapping& m = *map_;
  const uint64_t window = options().prefetch_window_bytes;
  if (window > 0 && m.read_ahead.load()) {
    const auto rows = int64_t(ids.size()), ahead = int64_t(window / uint64_t(row_bytes())) + 1;
    m.advise(ids, std::min(rows, begin + ahead), std::min(rows, end + ahead));
  }
  const int64_t reads_before = drive_reads_of_this_thread();
  if (m.base != nullptr) {
    const int64_t fault = copy_mapped_rows(m.base, m.length, m.rows(), ids, begin, end, row_bytes(), out);
    // The file shrank under the mapping: the error pread gives, not a SIGBUS.
    if (fault >= 0) throw m.truncated((fault - int64_t(m.layout.data_offset)) / row_bytes());
  } else {
    m.read_rows(ids, begin, end, out);
  }
  m.drive_reads.fetch_add(drive_reads_of_this_thread() - reads_before);
}

void MappedFeatureStore::end_copy(std::span<const int64_t>) const {
  map_->read_ahead.store(map_->drive_reads.exchange(0) > 0);
}

uint64_t MappedFeatureStore::resident_bytes() const {
  if (map_->base == nullptr) return 0;
  std::FILE* f = std::fopen("/proc/self/smaps", "r");
  if (f == nullptr) return 0;
  const auto start = uintptr_t(map_->base);
  bool inside = false;
  uint64_t rss = 0;
  char line[512];
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line, "%" SCNxPTR "-%" SCNxPTR " ", &lo, &hi) == 2) {
      inside = lo <= start && start < hi;
      continue;
    }
    unsigned long long kb = 0;
    if (inside && std::sscanf(line, "Rss: %llu kB", &kb) == 1) {
      rss = uint64_t(kb) * 1024;
      break;
    }
  }
  std::fclose(f);
  return rss;
}

}  // namespace strata::io
