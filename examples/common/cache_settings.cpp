#include "examples/common/cache_settings.h"

#include "examples/common/trainer_common.pb.h"
#include "strata/core/error.h"

namespace strata::examples {

memory::CacheSettings cache_settings(const TensorCacheConfig& c) {
  memory::CacheSettings s;
  if (c.has_cache_policy()) s.policy = c.cache_policy();
  if (c.has_memory_budget()) {
    s.memory_budget = memory::parse_byte_size(c.memory_budget(), "--memory-budget");
    STRATA_CHECK(s.memory_budget > 0, ValueError, "--memory-budget '", c.memory_budget(),
                 "' is zero: give a positive size, or leave the flag out for no budget");
  }
  s.spill_dir = c.spill_dir();
  if (c.has_spill_arena()) {
    s.spill_arena_bytes = memory::parse_byte_size(c.spill_arena(), "--spill-arena");
    s.spill_arena_fixed = true;
    STRATA_CHECK(s.spill_arena_bytes > 0, ValueError, "--spill-arena '", c.spill_arena(),
                 "' is zero: the NVMe tier needs a positive size");
  }
  if (c.has_host_pool()) s.host_pool_bytes = memory::parse_byte_size(c.host_pool(), "--host-pool");
  if (c.has_cache_min()) s.min_bytes = memory::parse_byte_size(c.cache_min(), "--cache-min");
  s.save_plan = c.save_plan();
  return s;
}

}  // namespace strata::examples
