// TensorFeatureStore: rows copied out of a contiguous host-memory tensor, the in-memory baseline.
#include "strata/io/features/feature_store.h"

namespace strata::io {
namespace {

Tensor checked_features(Tensor features) {
  STRATA_CHECK(features.defined() && features.dim() == 2, ShapeError,
               "TensorFeatureStore: features must be [N, F], got ",
               features.defined() ? features.str() : "undefined");
  STRATA_CHECK(features.device().is_host_memory(), DeviceError,
               "TensorFeatureStore: features must be in host memory (cpu or sim), got ", features.str());
  return features.contiguous();
}

}  // namespace

TensorFeatureStore::TensorFeatureStore(Tensor features, FeatureStoreOptions options)
    : TensorFeatureStore(checked_features(std::move(features)), options, 0) {}

TensorFeatureStore::TensorFeatureStore(Tensor contiguous, FeatureStoreOptions options, int)
    : FeatureStore("memory",
                   static_cast<const char*>(contiguous.numel() > 0 ? contiguous.data_ptr() : nullptr),
                   contiguous.size(0), contiguous.size(1), contiguous.dtype(), options),
      features_(std::move(contiguous)) {}

TensorFeatureStore::~TensorFeatureStore() { join_loader_threads(); }

}  // namespace strata::io
