#include "examples/common/cache_flags.h"

#include <CLI/CLI.hpp>

namespace strata::examples {

void CacheFlags::add_to(CLI::App& app, const std::string& unit, const std::string& policy_note) {
  app.add_option("--cache-policy", cache_policy,
                 "saved activations: keep (default), recompute, nvme, host, adaptive[:host], "
                 "rules:<glob>[@op][>=size]=<action>;..., or plan:<file>" + policy_note);
  app.add_option("--memory-budget", memory_budget,
                 "keep the step's peak memory under this (e.g. 1.5G): step 1 profiles with every " + unit +
                     " recomputed, then a plan is made (NVMe when --spill-dir is given, else recompute)");
  app.add_option("--spill-dir", spill_dir, "directory for the NVMe tier's spill file (unlinked, O_DIRECT)");
  app.add_option("--spill-arena", spill_arena, "size of the spill file (default 8G)");
  app.add_option("--host-pool", host_pool, "size of the host tier's pool (default 0: none)");
  app.add_option("--cache-min", cache_min, "tensors smaller than this are always kept (default 1M)");
  app.add_option("--save-plan", save_plan, "write the --memory-budget plan to this file");
}

void CacheFlags::merge(const CacheFlags& over) {
  auto take = [](std::optional<std::string>& into, const std::optional<std::string>& from) {
    if (from) into = from;
  };
  take(cache_policy, over.cache_policy), take(memory_budget, over.memory_budget), take(spill_dir, over.spill_dir);
  take(spill_arena, over.spill_arena), take(host_pool, over.host_pool), take(cache_min, over.cache_min);
  take(save_plan, over.save_plan);
}

void CacheFlags::apply(memory::CacheSettings* s) const {
  s->policy = cache_policy.value_or(s->policy);
  if (memory_budget) s->memory_budget = memory::parse_byte_size(*memory_budget, "--memory-budget");
  s->spill_dir = spill_dir.value_or("");
  if (spill_arena) s->spill_arena_bytes = memory::parse_byte_size(*spill_arena, "--spill-arena");
  if (host_pool) s->host_pool_bytes = memory::parse_byte_size(*host_pool, "--host-pool");
  if (cache_min) s->min_bytes = memory::parse_byte_size(*cache_min, "--cache-min");
  s->save_plan = save_plan.value_or("");
}

}  // namespace strata::examples
