// cache_settings(): the tensor cache's memory::CacheSettings from a trainer's TensorCacheConfig.
#pragma once

#include "strata/memory/trainer_cache.h"

namespace strata::examples {

class TensorCacheConfig;

// What `c` leaves unset keeps CacheSettings' default; the sizes are parsed (ValueError naming
// the flag, e.g. --memory-budget, on bad input).
memory::CacheSettings cache_settings(const TensorCacheConfig& c);

}  // namespace strata::examples
