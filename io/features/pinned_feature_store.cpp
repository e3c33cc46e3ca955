// PinnedFeatureStore: the rows copied once into page-aligned host memory, page-locked for a GPU.
#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <numeric>
#include <vector>

#include "strata/core/backend.h"
#include "strata/core/error.h"
#include "strata/core/factory.h"
#include "strata/io/features/feature_store.h"

namespace strata::io {

struct PinnedFeatureStore::Rows {
  char* data = nullptr;
  size_t length = 0;
  Backend* locked_by = nullptr;  // the backend that page-locked `data`, if one did

  explicit Rows(size_t bytes) : length(bytes) {
    if (bytes == 0) return;
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    STRATA_CHECK(p != MAP_FAILED, IoError, "PinnedFeatureStore: cannot map ", bytes,
                 " bytes of host memory (", std::strerror(errno), ")");
    data = static_cast<char*>(p);
  }
  ~Rows() {
    if (locked_by != nullptr) locked_by->unregister_host_memory(data);
    if (data != nullptr) ::munmap(data, length);
  }
  Rows(const Rows&) = delete;
  Rows& operator=(const Rows&) = delete;
};

PinnedFeatureStore::PinnedFeatureStore(const FeatureStore& source, Device device, FeatureStoreOptions options)
    : PinnedFeatureStore(std::make_unique<Rows>(size_t(source.num_rows()) * size_t(source.row_bytes())),
                         source, device, options) {}

PinnedFeatureStore::PinnedFeatureStore(const Tensor& features, Device device, FeatureStoreOptions options)
    : PinnedFeatureStore(TensorFeatureStore(features, options), device, options) {}

PinnedFeatureStore::PinnedFeatureStore(std::unique_ptr<Rows> rows, const FeatureStore& source, Device device,
                                       FeatureStoreOptions options)
    : FeatureStore("page-locked copy of " + source.source(), rows->data, source.num_rows(),
                   source.num_features(), source.dtype(), options),
      pinned_(std::move(rows)),
      device_(device) {
  // In slices of rows, so that a file source is paged through instead of mapped in whole.
  const int64_t n = num_rows(),
                slice = std::max<int64_t>(1, (int64_t(64) << 20) / std::max<int64_t>(row_bytes(), 1));
  std::vector<int64_t> ids;
  for (int64_t begin = 0; begin < n && row_bytes() > 0; begin += slice) {
    ids.resize(size_t(std::min(slice, n - begin)));
    std::iota(ids.begin(), ids.end(), begin);
    source.gather_into(ids, pinned_->data + begin * row_bytes());
  }
  if (device.is_cuda() && pinned_->length > 0) {
    Backend& gpu = backend_for(device);
    STRATA_CHECK(device.index < gpu.device_count(), DeviceError, "PinnedFeatureStore: no device ",
                 device.str(), " (", gpu.device_count(), " present)");
    gpu.register_host_memory(pinned_->data, pinned_->length);
    pinned_->locked_by = &gpu;
    locked_ = true;
  }
}

PinnedFeatureStore::~PinnedFeatureStore() { join_loader_threads(); }

Tensor PinnedFeatureStore::gather_to_device(std::span<const int64_t> ids, Device device) const {
  // Page-locked for this GPU: the device reads the rows it needs over the bus (zero copy, reads
  // aligned to 128-byte lines); otherwise the staging path every store takes.
  if (!locked_ || device != device_) return FeatureStore::gather_to_device(ids, device);
  const int64_t m = int64_t(ids.size());
  Tensor out = Tensor::empty({m, num_features()}, dtype(), device);
  if (m == 0 || row_bytes() == 0) return out;
  for (size_t i = 0; i < ids.size(); ++i)
    STRATA_CHECK(ids[i] >= 0 && ids[i] < num_rows(), IndexError, "PinnedFeatureStore: node id ", ids[i],
                 " at position ", i, " is outside [0, ", num_rows(), ")");
  const Tensor dev_ids = from_vector(std::vector<int64_t>(ids.begin(), ids.end()), {m}).to(device);
  backend_for(device).gather_host_rows(out, pinned_->data, num_rows(), row_bytes(), dev_ids);
  return out;
}

}  // namespace strata::io
