#include <cstring>
#include <unordered_map>

#include "strata/core/backend.h"
#include "strata/core/error.h"
#include "strata/core/memory_stats.h"
#include "strata/core/storage.h"
#include "strata/optim/state_store.h"

namespace strata::optim {

const char* state_placement_name(StatePlacement p) {
  switch (p) {
    case StatePlacement::Device: return "device";
    case StatePlacement::Host: return "host";
    case StatePlacement::Nvme: return "nvme";
  }
  return "?";
}

StatePlacement parse_state_placement(const std::string& text, const std::string& what) {
  for (StatePlacement p : {StatePlacement::Device, StatePlacement::Host, StatePlacement::Nvme})
    if (text == state_placement_name(p)) return p;
  throw ValueError(what + ": '" + text + "' is not a placement; use device, host or nvme");
}

namespace {

// Buffers in host memory; acquire hands out views of them, release has nothing to do.
class HostStateStore final : public StateStore {
 public:
  explicit HostStateStore(Device device) : allocator_(&backend_for(device).host_allocator()) {}

  StatePlacement placement() const override { return StatePlacement::Host; }
  std::string describe() const override { return "host memory"; }

  void add(size_t param, size_t count, int64_t numel, DType dtype) override {
    STRATA_CHECK(!buffers_.count(param), ValueError, "host state store: parameter ", param,
                 " was added twice");
    std::vector<Tensor>& bufs = buffers_[param];
    for (size_t b = 0; b < count; ++b) {
      const size_t nbytes = size_t(numel) * element_size(dtype);
      auto storage = std::make_shared<StorageImpl>(nbytes, kCPU, allocator_, MemoryCategory::OptimizerState);
      if (nbytes > 0) std::memset(storage->data(), 0, nbytes);
      bufs.push_back(Tensor::from_storage(storage, {numel}, {1}, 0, dtype));
      bytes_ += nbytes;
    }
  }
  bool contains(size_t param) const override { return buffers_.count(param) != 0; }
  void remove(size_t param) override {
    auto it = buffers_.find(param);
    if (it == buffers_.end()) return;
    for (const Tensor& t : it->second) bytes_ -= t.nbytes();
    buffers_.erase(it);
  }
  std::vector<Tensor> acquire(size_t param, int64_t begin, int64_t end) override {
    auto it = buffers_.find(param);
    STRATA_CHECK(it != buffers_.end(), ValueError, "host state store: parameter ", param, " has no state");
    std::vector<Tensor> out;
    for (const Tensor& t : it->second) {
      STRATA_CHECK(begin >= 0 && begin <= end && end <= t.numel(), ValueError, "host state store: elements [",
                   begin, ", ", end, ") of parameter ", param, "'s ", t.numel());
      out.push_back(Tensor::from_storage(t.storage(), {end - begin}, {1}, begin, t.dtype()));
    }
    return out;
  }
  void release(size_t, int64_t, int64_t, bool) override {}
  uint64_t bytes() const override { return bytes_; }

 private:
  Allocator* allocator_;
  std::unordered_map<size_t, std::vector<Tensor>> buffers_;
  uint64_t bytes_ = 0;
};

}  // namespace

std::shared_ptr<StateStore> make_host_state_store(Device device) {
  return std::make_shared<HostStateStore>(device);
}

}  // namespace strata::optim
