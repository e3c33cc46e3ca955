// NvmeStateStore: optim::StateStore over an NvmeTier. Host memory holds a few chunk slots; a
// load worker reads chunks into them ahead of acquire(), a store worker writes them back after
// release(). A chunk never written reads as zeros without touching the file.
#include "strata/memory/nvme_state_store.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>

#include "memory/tiers/nvme_tier.h"
#include "memory/worker.h"
#include "strata/core/byte_size.h"
#include "strata/core/error.h"
#include "strata/core/storage.h"

namespace strata::memory {

namespace {

// Each I/O channel's requests: this many in flight, of at most this many bytes.
constexpr size_t kIoChunk = size_t(4) << 20, kIoDepth = 4;
// A slot's buffers start every this many elements (4 KiB of f32).
constexpr int64_t kSlotAlign = 1024;

class NvmeStateStore final : public optim::StateStore {
 public:
  explicit NvmeStateStore(const NvmeStateSettings& s)
      : tier_(s.dir, round_to_spill_block(s.capacity)),
        chunk_elements_(int64_t(std::max<uint64_t>(s.chunk_bytes / 4, kSpillBlock / 4))),
        slots_(std::max<size_t>(s.slots, 3)),
        what_(s.what) {
    auto counters = std::make_shared<FaultCounters>();
    std::string why;
    auto store = tier_.open_channel(s.engine, kIoChunk, kIoDepth, s.faults, counters, &why);
    auto load = tier_.open_channel(s.engine, kIoChunk, kIoDepth, s.faults, counters, &why);
    tier_.use_channels(std::move(store), std::move(load));
  }

  ~NvmeStateStore() override {
    // Jobs reference the slots: let them finish before the members go.
    loads_.wait_idle();
    stores_.wait_idle();
  }

  optim::StatePlacement placement() const override { return optim::StatePlacement::Nvme; }
  std::string describe() const override { return tier_.describe() + " (" + tier_.engine_name() + ")"; }
  int64_t chunk_elements() const override { return chunk_elements_; }

  void add(size_t param, size_t count, int64_t numel, DType dtype) override {
    std::lock_guard<std::mutex> lk(mu_);
    STRATA_CHECK(!params_.count(param), ValueError, "NVMe state store: parameter ", param,
                 " was added twice");
    Param p;
    p.count = count;
    p.numel = numel;
    p.dtype = dtype;
    const uint64_t bytes = uint64_t(numel) * element_size(dtype);
    for (size_t b = 0; b < count; ++b) {
      const std::optional<uint64_t> at = bytes == 0 ? std::optional<uint64_t>(0) : tier_.allocate(bytes);
      if (!at) {
        for (size_t k = 0; k < b; ++k) tier_.free(p.offsets[k], bytes);
        throw OutOfMemoryError("NVMe state store: " + tier_.describe() + " holds " +
                               format_bytes(double(tier_.extents().capacity())) + " and has no room for " +
                               format_bytes(double(bytes)) + " more (parameter " + std::to_string(param) +
                               "'s state); make the file as large as the state (nvme_state_capacity)");
      }
      p.offsets.push_back(*at);
    }
    bytes_ += bytes * count;
    params_.emplace(param, std::move(p));
  }

  bool contains(size_t param) const override {
    std::lock_guard<std::mutex> lk(mu_);
    return params_.count(param) != 0;
  }

  void remove(size_t param) override {
    std::unique_lock<std::mutex> lk(mu_);
    auto it = params_.find(param);
    if (it == params_.end()) return;
    // Its chunks may still be in slots, being read or written: wait for them.
    cv_.wait(lk, [&] {
      for (const Slot& s : slots_)
        if (s.param == param && (s.state == SlotState::Reading || s.state == SlotState::Writing))
          return false;
      return true;
    });
    for (Slot& s : slots_)
      if (s.param == param) s = Slot{std::move(s.memory)};
    const uint64_t bytes = uint64_t(it->second.numel) * element_size(it->second.dtype);
    if (bytes > 0)
      for (uint64_t off : it->second.offsets) tier_.free(off, bytes);
    bytes_ -= bytes * it->second.count;
    params_.erase(it);
  }

  void will_acquire(size_t param, int64_t begin, int64_t end) override {
    std::lock_guard<std::mutex> lk(mu_);
    if (!params_.count(param) || find_slot(param, begin) != nullptr) return;
    Slot* s = free_slot();
    if (s == nullptr) return;  // every slot busy: acquire() reads it then
    start_read(*s, param, begin, end);
  }

  std::vector<Tensor> acquire(size_t param, int64_t begin, int64_t end) override {
    return acquire_chunk(param, begin, end, /*read=*/true);
  }

  std::vector<Tensor> acquire_for_write(size_t param, int64_t begin, int64_t end) override {
    return acquire_chunk(param, begin, end, /*read=*/false);
  }

  void release(size_t param, int64_t begin, int64_t end, bool modified) override {
    std::lock_guard<std::mutex> lk(mu_);
    Slot* s = find_slot(param, begin);
    STRATA_CHECK(s != nullptr && s->state == SlotState::Acquired, ValueError, "NVMe state store: parameter ",
                 param, "'s chunk at ", begin, " was released without being acquired");
    s->stamp = ++clock_;
    if (!modified) {  // the file holds these bytes already
      s->state = SlotState::Ready;
      cv_.notify_all();
      return;
    }
    s->state = SlotState::Writing;
    const Param& p = params_.at(param);
    const size_t chunk = size_t(begin / chunk_elements_);
    stores_.push([this, s, stride = s->stride, offsets = p.offsets, dtype = p.dtype, param, chunk, begin,
                  end] {
      const size_t esize = element_size(dtype);
      const uint64_t bytes = uint64_t(end - begin) * esize;
      std::vector<std::vector<uint32_t>> crcs(offsets.size());
      std::string failed;
      for (size_t b = 0; b < offsets.size() && failed.empty(); ++b) {
        const auto* src = static_cast<const char*>(s->memory->data()) + b * size_t(stride) * esize;
        const IoStatus st =
            tier_.write(src, bytes, offsets[b] + uint64_t(begin) * esize, TensorMemory{}, crcs[b], nullptr);
        if (!st.ok)
          failed = "writing " + format_bytes(double(bytes)) + " at offset " + std::to_string(st.file_offset) +
                   ": " + st.what;
      }
      std::lock_guard<std::mutex> lk2(mu_);
      if (failed.empty()) {
        written_[{param, chunk}] = std::move(crcs);
        bytes_written_ += bytes * offsets.size();
      } else if (failure_.empty()) {
        failure_ = "NVMe state store: " + tier_.describe() + ": parameter " + std::to_string(param) + "'s " +
                   what_ + ", " + failed;
      }
      s->state = SlotState::Ready;
      cv_.notify_all();
    });
  }

  void flush() override {
    stores_.wait_idle();
    std::lock_guard<std::mutex> lk(mu_);
    throw_if_failed();
  }

  uint64_t bytes() const override {
    std::lock_guard<std::mutex> lk(mu_);
    return bytes_;
  }
  uint64_t bytes_read() const override {
    std::lock_guard<std::mutex> lk(mu_);
    return bytes_read_;
  }
  uint64_t bytes_written() const override {
    std::lock_guard<std::mutex> lk(mu_);
    return bytes_written_;
  }

 private:
  enum class SlotState : uint8_t { Empty, Reading, Ready, Acquired, Writing };
  struct Slot {
    std::shared_ptr<StorageImpl> memory;  // count buffers of `stride` elements of the widest dtype
    int64_t stride = 0;                   // elements from one buffer of the chunk to the next
    SlotState state = SlotState::Empty;
    size_t param = 0;
    int64_t begin = 0, end = 0;
    uint64_t stamp = 0;  // when it was last released: the oldest Ready slot is reused first
  };
  struct Param {
    size_t count = 0;
    int64_t numel = 0;
    DType dtype = DType::f32;
    std::vector<uint64_t> offsets;  // one extent per buffer
  };

  // acquire() and acquire_for_write(): a chunk not in a slot is read into one, or, when its bytes
  // are about to be overwritten whole (`read` false), only given one.
  std::vector<Tensor> acquire_chunk(size_t param, int64_t begin, int64_t end, bool read) {
    std::unique_lock<std::mutex> lk(mu_);
    throw_if_failed();
    auto it = checked(param, begin, end);
    Slot* s = find_slot(param, begin);
    if (s == nullptr) {
      cv_.wait(lk, [&] { return free_slot() != nullptr; });
      s = free_slot();
      if (read) {
        start_read(*s, param, begin, end);
      } else {
        claim(*s, it->second, param, begin, end);
        s->state = SlotState::Ready;
      }
    }
    cv_.wait(lk, [&] { return s->state == SlotState::Ready || !failure_.empty(); });
    throw_if_failed();
    STRATA_CHECK(s->end == end, ValueError, "NVMe state store: parameter ", param, "'s chunk at ", begin,
                 " was asked for up to ", end, " and read up to ", s->end);
    return take(*s, it->second);
  }
  // Under mu_: the parameter, with [begin, end) checked against it and not acquired already.
  std::unordered_map<size_t, Param>::iterator checked(size_t param, int64_t begin, int64_t end) {
    auto it = params_.find(param);
    STRATA_CHECK(it != params_.end(), ValueError, "NVMe state store: parameter ", param, " has no ", what_);
    STRATA_CHECK(begin >= 0 && begin <= end && end <= it->second.numel, ValueError,
                 "NVMe state store: elements [", begin, ", ", end, ") of parameter ", param, "'s ",
                 it->second.numel);
    const Slot* s = find_slot(param, begin);
    STRATA_CHECK(s == nullptr || s->state != SlotState::Acquired, ValueError, "NVMe state store: parameter ",
                 param, "'s chunk at ", begin, " is acquired already");
    return it;
  }

  // Under mu_: hands a Ready slot's buffers out.
  std::vector<Tensor> take(Slot& s, const Param& p) {
    s.state = SlotState::Acquired;
    std::vector<Tensor> out;
    for (size_t b = 0; b < p.count; ++b)
      out.push_back(Tensor::from_storage(s.memory, {s.end - s.begin}, {1}, int64_t(b) * s.stride, p.dtype));
    return out;
  }
  // Under mu_: gives `s` to (param, [begin, end)), with memory for its buffers.
  void claim(Slot& s, const Param& p, size_t param, int64_t begin, int64_t end) {
    // As large as this chunk (a small parameter's is small), each buffer 4 KiB-aligned in f32.
    s.stride = (end - begin + kSlotAlign - 1) / kSlotAlign * kSlotAlign;
    const size_t need = p.count * size_t(s.stride) * 8;
    if (!s.memory || s.memory->nbytes() < need)
      s.memory = std::make_shared<StorageImpl>(need, kCPU, &cpu_allocator(), MemoryCategory::OptimizerState);
    s.param = param;
    s.begin = begin;
    s.end = end;
    s.stamp = 0;
  }
  // Under mu_. The slot holding (param, begin) in any state but Empty.
  Slot* find_slot(size_t param, int64_t begin) {
    for (Slot& s : slots_)
      if (s.state != SlotState::Empty && s.param == param && s.begin == begin) return &s;
    return nullptr;
  }
  // Under mu_. An Empty slot, else the Ready one released longest ago; null when all are busy.
  Slot* free_slot() {
    Slot* best = nullptr;
    for (Slot& s : slots_) {
      if (s.state == SlotState::Empty) return &s;
      if (s.state == SlotState::Ready && s.stamp > 0 && (best == nullptr || s.stamp < best->stamp)) best = &s;
    }
    return best;
  }
  void throw_if_failed() const {
    if (!failure_.empty()) throw IoError(failure_);
  }

  // Under mu_. Fills `s` with (param, [begin, end)) on the load worker: zeros for a chunk never
  // written, else its bytes from the file with their CRCs checked.
  void start_read(Slot& s, size_t param, int64_t begin, int64_t end) {
    const Param& p = params_.at(param);
    claim(s, p, param, begin, end);
    s.state = SlotState::Reading;
    const size_t chunk = size_t(begin / chunk_elements_);
    auto w = written_.find({param, chunk});
    std::vector<std::vector<uint32_t>> crcs;
    if (w != written_.end()) crcs = w->second;
    loads_.push([this, &s, stride = s.stride, offsets = p.offsets, dtype = p.dtype, param, begin, end,
                 crcs = std::move(crcs)] {
      const size_t esize = element_size(dtype);
      const uint64_t bytes = uint64_t(end - begin) * esize;
      std::string failed;
      for (size_t b = 0; b < offsets.size() && failed.empty(); ++b) {
        char* dst = static_cast<char*>(s.memory->data()) + b * size_t(stride) * esize;
        if (crcs.empty()) {
          std::memset(dst, 0, bytes);
          continue;
        }
        const IoStatus st =
            tier_.read(dst, bytes, offsets[b] + uint64_t(begin) * esize, TensorMemory{}, crcs[b]);
        if (!st.ok)
          failed = "reading " + format_bytes(double(bytes)) + " at offset " + std::to_string(st.file_offset) +
                   ": " + st.what;
      }
      std::lock_guard<std::mutex> lk(mu_);
      if (!crcs.empty() && failed.empty()) bytes_read_ += bytes * offsets.size();
      if (!failed.empty() && failure_.empty())
        failure_ = "NVMe state store: " + tier_.describe() + ": parameter " + std::to_string(param) + "'s " +
                   what_ + ", " + failed;
      s.state = failed.empty() ? SlotState::Ready : SlotState::Empty;
      cv_.notify_all();
    });
  }

  NvmeTier tier_;
  const int64_t chunk_elements_;
  std::vector<Slot> slots_;
  const std::string what_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::unordered_map<size_t, Param> params_;
  std::map<std::pair<size_t, size_t>, std::vector<std::vector<uint32_t>>>
      written_;  // (param, chunk) -> CRCs per buffer
  std::string failure_;
  uint64_t bytes_ = 0, bytes_read_ = 0, bytes_written_ = 0, clock_ = 0;
  Worker loads_, stores_;  // last: their threads stop first
};

}  // namespace

uint64_t nvme_state_capacity(uint64_t state_bytes, uint64_t buffers) {
  return round_to_spill_block(state_bytes) + buffers * kSpillBlock;
}

uint64_t nvme_state_host_bytes(const NvmeStateSettings& s, int64_t largest_param_elements,
                               size_t buffers_per_param) {
  const int64_t chunk = std::min(int64_t(std::max<uint64_t>(s.chunk_bytes / 4, kSpillBlock / 4)),
                                 std::max<int64_t>(largest_param_elements, 1));
  const uint64_t slot =
      uint64_t(buffers_per_param) * uint64_t((chunk + kSlotAlign - 1) / kSlotAlign * kSlotAlign) * 8;
  return 2 * kIoDepth * (kIoChunk + kSpillBlock) + std::max<size_t>(s.slots, 3) * slot;
}

std::shared_ptr<optim::StateStore> make_nvme_state_store(const NvmeStateSettings& settings) {
  return std::make_shared<NvmeStateStore>(settings);
}

}  // namespace strata::memory
