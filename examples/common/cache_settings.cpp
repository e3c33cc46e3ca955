#include "examples/common/cache_settings.h"

#include "examples/common/trainer_common.pb.h"

namespace strata::examples {

memory::CacheSettings cache_settings(const TensorCacheConfig& c) {
  memory::CacheSettings s;
  if (c.has_cache_policy()) s.policy = c.cache_policy();
  if (c.has_memory_budget()) s.memory_budget = memory::parse_byte_size(c.memory_budget(), "--memory-budget");
  s.spill_dir = c.spill_dir();
  if (c.has_spill_arena()) s.spill_arena_bytes = memory::parse_byte_size(c.spill_arena(), "--spill-arena");
  if (c.has_host_pool()) s.host_pool_bytes = memory::parse_byte_size(c.host_pool(), "--host-pool");
  if (c.has_cache_min()) s.min_bytes = memory::parse_byte_size(c.cache_min(), "--cache-min");
  s.save_plan = c.save_plan();
  return s;
}

}  // namespace strata::examples
