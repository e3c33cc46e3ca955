#include "memory/tiers/nvme_tier.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "strata/core/crc32c.h"
#include "strata/core/allocator.h"
#include "strata/core/error.h"

namespace strata::memory {

namespace {
std::string errno_text(int e) { return std::string(std::strerror(e)); }

std::string result_text(int64_t r, uint64_t want) {
  if (r < 0) {
    const char* name = r == -ENOSPC ? "ENOSPC" : r == -EIO ? "EIO" : "error";
    return std::string(name) + " (" + errno_text(int(-r)) + ")";
  }
  return "short transfer: " + std::to_string(r) + " of " + std::to_string(want) + " bytes";
}
}  // namespace

NvmeTier::NvmeTier(const std::string& dir, uint64_t capacity) : dir_(dir), extents_(capacity, kSpillBlock) {
  struct stat st {};
  const bool found = ::stat(dir.c_str(), &st) == 0;
  const int stat_errno = errno;
  STRATA_CHECK(found && S_ISDIR(st.st_mode), IoError, "tensor cache: spill directory '", dir, "' ",
               !found ? (stat_errno == ENOENT ? "does not exist" : "cannot be read") : "is not a directory");
  // O_TMPFILE: the file has no name, so nothing is left behind even on kill -9.
  int flags = O_RDWR | O_CLOEXEC;
  fd_ = ::open(dir.c_str(), flags | O_TMPFILE | O_DIRECT, 0600);
  direct_ = fd_ >= 0;
  if (fd_ < 0) fd_ = ::open(dir.c_str(), flags | O_TMPFILE, 0600);
  if (fd_ < 0) {  // file systems without O_TMPFILE: create and unlink at once
    std::string path = dir + "/strata-spill-XXXXXX";
    std::vector<char> buf(path.begin(), path.end());
    buf.push_back('\0');
    fd_ = ::mkostemp(buf.data(), O_CLOEXEC);
    STRATA_CHECK(fd_ >= 0, IoError, "tensor cache: cannot create a spill file in '", dir,
                 "': ", errno_text(errno));
    ::unlink(buf.data());
    ::fchmod(fd_, 0600);
    int fl = ::fcntl(fd_, F_GETFL);
    direct_ = ::fcntl(fd_, F_SETFL, fl | O_DIRECT) == 0;
  }
  desc_ = dir + "/<unlinked spill file" + (direct_ ? ", O_DIRECT>" : ">");
  if (extents_.capacity() > 0) {
    int rc = ::posix_fallocate(fd_, 0, off_t(extents_.capacity()));
    if (rc != 0) {
      ::close(fd_);
      fd_ = -1;
      STRATA_CHECK(false, IoError, "tensor cache: cannot reserve ", extents_.capacity(),
                   " bytes for the spill file in '", dir, "': ", errno_text(rc));
    }
  }
}

void NvmeTier::grow(uint64_t capacity) {
  if (capacity <= extents_.capacity()) return;
  const int rc = ::posix_fallocate(fd_, 0, off_t(capacity));
  STRATA_CHECK(rc == 0, IoError, "tensor cache: cannot grow the spill file in '", dir_, "' to ", capacity,
               " bytes: ", errno_text(rc));
  extents_.grow(capacity);
}

NvmeTier::~NvmeTier() {
  device_store_.reset();  // the channels use the file: closed first
  device_load_.reset();
  store_.reset();
  load_.reset();
  if (fd_ >= 0) ::close(fd_);
}

void NvmeTier::use_channels(std::unique_ptr<IoChannel> store, std::unique_ptr<IoChannel> load) {
  store_ = std::move(store);
  load_ = std::move(load);
}

void NvmeTier::use_device_channels(std::unique_ptr<IoChannel> store, std::unique_ptr<IoChannel> load) {
  device_store_ = std::move(store);
  device_load_ = std::move(load);
}

IoStatus NvmeTier::write(const void* src, uint64_t bytes, uint64_t offset, TensorMemory mem,
                         std::vector<uint32_t>& crcs, const std::atomic<bool>* cancel) {
  if (mem.device.type == DeviceType::CPU) return store_->write(src, bytes, offset, crcs, cancel);
  // A GPU's chunks: into device staging buffers (direct), or through the host ones (staged).
  ChunkCopy copy = [mem](void* dst, const void* from, size_t n) { copy_to_host(dst, from, n, mem); };
  return (device_store_ ? *device_store_ : *store_).write(src, bytes, offset, crcs, cancel, &copy);
}

IoStatus NvmeTier::read(void* dst, uint64_t bytes, uint64_t offset, TensorMemory mem,
                        const std::vector<uint32_t>& crcs) {
  if (mem.device.type == DeviceType::CPU) return load_->read(dst, bytes, offset, crcs);
  ChunkCopy copy = [mem](void* to, const void* from, size_t n) { copy_from_host(to, from, n, mem); };
  return (device_load_ ? *device_load_ : *load_).read(dst, bytes, offset, crcs, &copy);
}

std::unique_ptr<IoChannel> NvmeTier::open_channel(IoEngineKind kind, size_t chunk, size_t depth,
                                                   const IoFaults& faults,
                                                   std::shared_ptr<FaultCounters> counters,
                                                   std::string* fallback_reason) {
  STRATA_CHECK(kind != IoEngineKind::CuFile, ValueError, "tensor cache: cuFile runs only a GPU's direct path");
  chunk = round_to_spill_block(std::max<size_t>(chunk, kSpillBlock));
  depth = std::max<size_t>(depth, 1);
  // Staging buffers are allocated (and, for io_uring, registered) here, once.
  std::vector<void*> staging;
  std::vector<iovec> iov;
  for (size_t i = 0; i < depth; ++i) {
    void* p = ::mmap(nullptr, chunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    STRATA_CHECK(p != MAP_FAILED, IoError, "tensor cache: cannot map ", chunk,
                 " bytes of staging memory: ", errno_text(errno));
    staging.push_back(p);
    iov.push_back({p, chunk});
    cpu_allocator().stats().on_alloc(MemoryCategory::CacheStaging, int64_t(chunk));
  }
  std::unique_ptr<IoEngine> engine;
  if (kind != IoEngineKind::Threads) {
    try {
      if (faults.refuse_uring) throw IoEngineUnavailable("refused by fault injection");
      engine = make_uring_engine(fd_, iov, depth);
    } catch (const IoEngineUnavailable& e) {
      if (fallback_reason) *fallback_reason = std::string("io_uring unavailable (") + e.what() + "): using threads";
      STRATA_CHECK(kind != IoEngineKind::Uring, IoError, "tensor cache: io_uring was asked for but ", e.what());
    }
  }
  if (!engine) engine = make_thread_engine(fd_, std::min<size_t>(depth, 2), depth);
  if (!faults.faults.empty()) engine = make_faulty_engine(std::move(engine), faults, std::move(counters));
  auto ch = std::make_unique<IoChannel>(*this, std::move(engine), chunk, 0);
  ch->adopt_staging(std::move(staging));
  return ch;
}

std::unique_ptr<IoChannel> NvmeTier::open_device_channel(Backend& backend, int device_index, IoEngineKind engine,
                                                          size_t chunk, size_t depth, const IoFaults& faults,
                                                          std::shared_ptr<FaultCounters> counters) {
  chunk = round_to_spill_block(std::max<size_t>(chunk, kSpillBlock));
  depth = std::max<size_t>(depth, 1);
  if (engine == IoEngineKind::CuFile) {
    std::string why;
    if (!cufile_available(&why)) throw IoEngineUnavailable("GPUDirect Storage unavailable: " + why);
  } else if (engine != IoEngineKind::Threads) {
    throw IoEngineUnavailable(std::string("the direct path runs on cufile or threads, not ") + io_engine_name(engine));
  }
  auto ch = std::make_unique<IoChannel>(*this, nullptr, chunk, 0);
  ch->device_backend_ = &backend;
  ch->device_index_ = device_index;
  Allocator& alloc = backend.allocator(device_index);
  std::vector<iovec> iov;
  for (size_t i = 0; i < depth; ++i) {
    void* block = alloc.allocate(chunk + kSpillBlock, MemoryCategory::CacheStaging);  // freed by the channel
    ch->device_blocks_.push_back(block);
    auto at = (reinterpret_cast<uintptr_t>(block) + kSpillBlock - 1) / kSpillBlock * kSpillBlock;
    ch->staging_.push_back(reinterpret_cast<void*>(at));
    iov.push_back({ch->staging_.back(), chunk});
  }
  std::unique_ptr<IoEngine> eng = engine == IoEngineKind::CuFile ? make_cufile_engine(fd_, iov, depth)
                                                     : make_thread_engine(fd_, std::min<size_t>(depth, 2), depth);
  if (!faults.faults.empty()) eng = make_faulty_engine(std::move(eng), faults, std::move(counters));
  ch->engine_ = std::move(eng);
  return ch;
}

IoChannel::IoChannel(NvmeTier& tier, std::unique_ptr<IoEngine> engine, size_t chunk, size_t)
    : tier_(tier), engine_(std::move(engine)), chunk_(chunk) {}

void IoChannel::adopt_staging(std::vector<void*> staging) { staging_ = std::move(staging); }

void IoChannel::pin_staging(Backend& backend) {
  if (pinned_for_) return;
  for (size_t i = 0; i < staging_.size(); ++i) {
    try {
      backend.register_host_memory(staging_[i], chunk_);
    } catch (...) {
      for (size_t j = 0; j < i; ++j) backend.unregister_host_memory(staging_[j]);
      throw;
    }
  }
  pinned_for_ = &backend;
}

bool IoChannel::zero_copy_ok(const void* p, uint64_t n) const {
  // Whole blocks at a block-aligned address in host memory: O_DIRECT takes them as they are.
  return !device_backend_ && tier_.direct() && n % kSpillBlock == 0 &&
         reinterpret_cast<uintptr_t>(p) % kSpillBlock == 0;
}

uint32_t IoChannel::checksum(const void* buf, size_t n) const {
  return device_backend_ ? device_backend_->crc32c_of(buf, n, device_index_) : crc32c(buf, n);
}

IoChannel::~IoChannel() {
  engine_.reset();  // joins threads / closes the ring before the buffers go
  if (device_backend_) {
    Allocator& alloc = device_backend_->allocator(device_index_);
    for (void* b : device_blocks_) alloc.deallocate(b, chunk_ + kSpillBlock, MemoryCategory::CacheStaging);
    return;
  }
  for (void* p : staging_) {
    if (pinned_for_) pinned_for_->unregister_host_memory(p);
    ::munmap(p, chunk_);
    cpu_allocator().stats().on_free(MemoryCategory::CacheStaging, int64_t(chunk_));
  }
}

std::vector<int> IoChannel::all_buffers() const {
  std::vector<int> v;
  for (int i = int(staging_.size()) - 1; i >= 0; --i) v.push_back(i);
  return v;
}

IoCompletion IoChannel::reap(std::vector<int>& free_bufs, size_t& in_flight) {
  IoCompletion c = engine_->wait();
  --in_flight;
  free_bufs.push_back(int(c.tag));  // a request's tag is its staging buffer
  return c;
}

IoStatus IoChannel::write(const void* src, uint64_t bytes, uint64_t offset,
                          std::vector<uint32_t>& crcs, const std::atomic<bool>* cancel,
                          const ChunkCopy* copy) {
  const uint64_t nchunks = (bytes + chunk_ - 1) / chunk_;
  crcs.assign(nchunks, 0);
  std::vector<int> free_bufs = all_buffers();
  std::vector<uint64_t> want(staging_.size(), 0), where(staging_.size(), 0);
  IoStatus st;
  uint64_t next = 0;
  size_t in_flight = 0;
  const auto* s = static_cast<const unsigned char*>(src);
  while (true) {
    bool stop = !st.ok || (cancel && cancel->load(std::memory_order_relaxed));
    if (stop && cancel && cancel->load() && st.ok) st.cancelled = true;
    if (!stop && next < nchunks && !free_bufs.empty()) {
      int b = free_bufs.back();
      free_bufs.pop_back();
      uint64_t n = std::min<uint64_t>(chunk_, bytes - next * chunk_);
      uint64_t padded = round_to_spill_block(n);
      auto* buf = static_cast<unsigned char*>(staging_[size_t(b)]);
      if (!copy && zero_copy_ok(s + next * chunk_, n)) {  // straight from tensor memory
        auto* from = const_cast<unsigned char*>(s + next * chunk_);
        crcs[next] = crc32c(from, n);
        want[size_t(b)] = n;
        where[size_t(b)] = offset + next * chunk_;
        engine_->submit({IoKind::Write, where[size_t(b)], size_t(n), from, -1, uint64_t(b)});
        ++zero_copy_chunks_;
        ++next;
        ++in_flight;
        continue;
      }
      if (copy) {
        try {  // a device copy that fails ends the transfer like a failed write
          (*copy)(buf, s + next * chunk_, n);
        } catch (const std::exception& e) {
          free_bufs.push_back(b);
          st.ok = false;
          st.what = std::string("copy to the staging buffer: ") + e.what();
          st.file_offset = offset + next * chunk_;
          continue;
        }
      } else {
        std::memcpy(buf, s + next * chunk_, n);
      }
      // The padding past n is never read back; on the host it is zeroed so stale memory stays
      // out of the file (a device buffer's padding holds earlier chunks of the same stream).
      if (padded > n && !device_backend_) std::memset(buf + n, 0, padded - n);
      try {
        crcs[next] = checksum(buf, n);
      } catch (const std::exception& e) {
        free_bufs.push_back(b);
        st.ok = false;
        st.what = std::string("checksum of the staging buffer: ") + e.what();
        st.file_offset = offset + next * chunk_;
        continue;
      }
      want[size_t(b)] = padded;
      where[size_t(b)] = offset + next * chunk_;
      engine_->submit({IoKind::Write, where[size_t(b)], size_t(padded), buf, b, uint64_t(b)});
      ++next;
      ++in_flight;
      continue;
    }
    if (in_flight == 0) break;
    IoCompletion c = reap(free_bufs, in_flight);
    size_t b = size_t(c.tag);
    if (c.result != int64_t(want[b]) && st.ok) {
      st.ok = false;
      st.what = "write " + result_text(c.result, want[b]);
      st.file_offset = where[b];
    }
  }
  if (st.ok && next < nchunks) st.cancelled = true;
  return st;
}

IoStatus IoChannel::read(void* dst, uint64_t bytes, uint64_t offset,
                         const std::vector<uint32_t>& crcs, const ChunkCopy* copy) {
  const uint64_t nchunks = (bytes + chunk_ - 1) / chunk_;
  IoStatus st;
  if (crcs.size() != nchunks) {
    st.ok = false;
    st.what = "no checksums recorded for the extent";
    st.file_offset = offset;
    return st;
  }
  std::vector<int> free_bufs = all_buffers();
  std::vector<uint64_t> want(staging_.size(), 0), chunk_of(staging_.size(), 0);
  std::vector<char> direct(staging_.size(), 0);  // the chunk went straight into `dst`
  uint64_t next = 0;
  size_t in_flight = 0;
  auto* d = static_cast<unsigned char*>(dst);
  while (true) {
    if (st.ok && next < nchunks && !free_bufs.empty()) {
      int b = free_bufs.back();
      free_bufs.pop_back();
      uint64_t n = std::min<uint64_t>(chunk_, bytes - next * chunk_);
      want[size_t(b)] = round_to_spill_block(n);
      chunk_of[size_t(b)] = next;
      direct[size_t(b)] = !copy && zero_copy_ok(d + next * chunk_, n);
      if (direct[size_t(b)]) {  // straight into tensor memory
        engine_->submit({IoKind::Read, offset + next * chunk_, size_t(n), d + next * chunk_, -1, uint64_t(b)});
        ++zero_copy_chunks_;
      } else {
        engine_->submit({IoKind::Read, offset + next * chunk_, size_t(want[size_t(b)]), staging_[size_t(b)], b,
                         uint64_t(b)});
      }
      ++next;
      ++in_flight;
      continue;
    }
    if (in_flight == 0) break;
    IoCompletion c = reap(free_bufs, in_flight);
    size_t b = size_t(c.tag);
    uint64_t k = chunk_of[b];
    uint64_t at = offset + k * chunk_;
    if (!st.ok) continue;
    if (c.result != int64_t(want[b])) {
      st.ok = false;
      st.what = "read " + result_text(c.result, want[b]);
      st.file_offset = at;
      continue;
    }
    uint64_t n = std::min<uint64_t>(chunk_, bytes - k * chunk_);
    const auto* buf = direct[b] ? d + k * chunk_ : static_cast<const unsigned char*>(staging_[b]);
    uint32_t crc = 0;
    try {
      crc = checksum(buf, n);
    } catch (const std::exception& e) {
      st.ok = false;
      st.what = std::string("checksum of the staging buffer: ") + e.what();
      st.file_offset = at;
      continue;
    }
    if (crc != crcs[k]) {
      st.ok = false;
      st.what = "checksum mismatch (CRC-32C " + std::to_string(crc) + ", stored " +
                std::to_string(crcs[k]) + ")";
      st.file_offset = at;
      continue;
    }
    if (direct[b]) {
      // already in place
    } else if (copy) {
      try {
        (*copy)(d + k * chunk_, buf, n);
      } catch (const std::exception& e) {
        st.ok = false;
        st.what = std::string("copy from the staging buffer: ") + e.what();
        st.file_offset = at;
      }
    } else {
      std::memcpy(d + k * chunk_, buf, n);
    }
  }
  return st;
}

}  // namespace strata::memory
