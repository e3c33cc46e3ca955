// FeatureStore: the checks and the placement every store shares. Rows are copied by tasks of
// rows_per_task rows on the loader threads and the calling thread; each task writes its own rows
// of the output, so the bits do not depend on which thread ran it.
#include "strata/io/features/feature_store.h"

#include <cstring>
#include <memory>

#include "io/features/loader_threads.h"
#include "strata/core/backend.h"
#include "strata/core/error.h"
#include "strata/core/memory_stats.h"
#include "strata/core/storage.h"

namespace strata::io {

FeatureStore::FeatureStore(std::string source, const char* rows, int64_t num_rows, int64_t num_features,
                           DType dtype, FeatureStoreOptions options)
    : source_(std::move(source)),
      rows_(rows),
      num_rows_(num_rows),
      num_features_(num_features),
      dtype_(dtype),
      options_(options) {
  STRATA_CHECK(options_.num_threads >= 0 && options_.rows_per_task > 0, ValueError, "feature store '",
               source_, "': num_threads must be >= 0 and rows_per_task > 0, got ", options_.num_threads,
               " and ", options_.rows_per_task);
  threads_ = std::make_unique<LoaderThreads>(options_.num_threads);
}

FeatureStore::~FeatureStore() { join_loader_threads(); }

void FeatureStore::join_loader_threads() { threads_.reset(); }

Tensor FeatureStore::checked_ids(const Tensor& node_ids) const {
  STRATA_CHECK(node_ids.defined(), ValueError, "feature store '", source_, "': node ids are undefined");
  STRATA_CHECK(node_ids.dim() == 1, ShapeError, "feature store '", source_, "': node ids must be 1-D, got ",
               node_ids.str());
  STRATA_CHECK(node_ids.dtype() == DType::i64 || node_ids.dtype() == DType::i32, TypeError, "feature store '",
               source_, "': node ids must be i32 or i64, got ", node_ids.str());
  Tensor ids = node_ids.device().is_cpu() ? node_ids : node_ids.to(kCPU);
  ids = ids.dtype() == DType::i64 ? ids.contiguous() : ids.to(DType::i64);
  check_ids({ids.data<int64_t>(), size_t(ids.numel())});
  return ids;
}

void FeatureStore::check_ids(std::span<const int64_t> ids) const {
  for (size_t i = 0; i < ids.size(); ++i)
    STRATA_CHECK(ids[i] >= 0 && ids[i] < num_rows_, IndexError, "feature store '", source_, "': node id ",
                 ids[i], " at position ", i, " is out of range [0, ", num_rows_, ")");
}

void FeatureStore::gather_into(std::span<const int64_t> ids, void* out) const {
  check_ids(ids);
  copy_rows(ids, static_cast<char*>(out));
}

Tensor FeatureStore::gather(const Tensor& node_ids, Device device) const {
  return gather_checked(checked_ids(node_ids), device);
}

std::future<Tensor> FeatureStore::gather_async(const Tensor& node_ids, Device device) const {
  Tensor ids = checked_ids(node_ids);
  if (ids.storage() == node_ids.storage()) ids = ids.clone();  // the caller may reuse its tensor
  if (threads_->size() == 0)
    return std::async(std::launch::deferred, [this, ids, device] { return gather_checked(ids, device); });
  auto task = std::make_shared<std::packaged_task<Tensor()>>(
      [this, ids, device] { return gather_checked(ids, device); });
  std::future<Tensor> result = task->get_future();
  threads_->post([task] { (*task)(); });
  return result;
}

void FeatureStore::prefetch(const Tensor& node_ids) const {
  Tensor ids = checked_ids(node_ids);
  if (ids.numel() == 0) return;
  if (ids.storage() == node_ids.storage()) ids = ids.clone();  // the caller may reuse its tensor
  start_prefetch(std::move(ids));
}

Tensor FeatureStore::gather_checked(const Tensor& ids, Device device) const {
  const int64_t m = ids.numel();
  const std::span<const int64_t> span(ids.data<int64_t>(), size_t(m));
  if (device.is_meta()) return Tensor::empty({m, num_features_}, dtype_, device);
  if (!device.is_host_memory()) return gather_to_device(span, device);
  Tensor out = Tensor::empty({m, num_features_}, dtype_, device);
  copy_rows(span, static_cast<char*>(out.data_ptr()));
  return out;
}

void FeatureStore::copy_rows(std::span<const int64_t> ids, char* out) const {
  if (ids.empty() || row_bytes() == 0) return;
  const auto m = int64_t(ids.size());
  const int64_t per = options_.rows_per_task;
  begin_copy(ids);
  threads_->parallel_for((m + per - 1) / per, [&](int64_t t) {
    const int64_t begin = t * per, end = std::min(m, begin + per);
    copy_task(ids, begin, end, out + begin * row_bytes());
  });
  end_copy(ids);
}

void FeatureStore::copy_task(std::span<const int64_t> ids, int64_t begin, int64_t end, char* out) const {
  const int64_t r = row_bytes();
  for (int64_t i = begin; i < end; ++i, out += r) std::memcpy(out, rows_ + ids[size_t(i)] * r, size_t(r));
}

Tensor FeatureStore::gather_to_device(std::span<const int64_t> ids, Device device) const {
  const auto m = int64_t(ids.size());
  const size_t bytes = size_t(m) * size_t(row_bytes());
  if (bytes == 0) return Tensor::empty({m, num_features_}, dtype_, device);
  Allocator& pinned = backend_for(device).host_allocator();
  auto storage = std::make_shared<StorageImpl>(bytes, kCPU, &pinned, MemoryCategoryGuard::current());
  Tensor staging = Tensor::from_storage(storage, {m, num_features_}, {num_features_, 1}, 0, dtype_);
  copy_rows(ids, static_cast<char*>(staging.data_ptr()));
  Tensor out = Tensor::empty({m, num_features_}, dtype_, device);
  out.copy_(staging);
  return out;
}

}  // namespace strata::io
