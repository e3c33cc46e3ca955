// CacheFlags: the tensor cache's flags every trainer takes (--cache-policy, --memory-budget,
// --spill-dir, --spill-arena, --host-pool, --cache-min, --save-plan), as set by a --config file
// and then by the command line, and how they become memory::CacheSettings.
#pragma once

#include <optional>
#include <string>

#include "strata/memory/trainer_cache.h"

namespace CLI {
class App;
}  // namespace CLI

namespace strata::examples {

struct CacheFlags {
  std::optional<std::string> cache_policy, memory_budget, spill_dir, spill_arena, host_pool, cache_min, save_plan;

  // Declares the flags on `app`, in the order above. `unit` names what the budget's planning step
  // recomputes ("block", "layer"); `policy_note` ends --cache-policy's help (e.g. the model's scopes).
  void add_to(CLI::App& app, const std::string& unit = "block", const std::string& policy_note = "");
  // Takes the fields a trainer's config message sets (every trainer's proto names them alike).
  template <class Config>
  void take(const Config& c) {
#define STRATA_TAKE_CACHE_FIELD(field) \
  if (c.has_##field()) field = c.field();
    STRATA_TAKE_CACHE_FIELD(cache_policy) STRATA_TAKE_CACHE_FIELD(memory_budget) STRATA_TAKE_CACHE_FIELD(spill_dir)
    STRATA_TAKE_CACHE_FIELD(spill_arena) STRATA_TAKE_CACHE_FIELD(host_pool) STRATA_TAKE_CACHE_FIELD(cache_min)
    STRATA_TAKE_CACHE_FIELD(save_plan)
#undef STRATA_TAKE_CACHE_FIELD
  }
  // Each flag `over` sets replaces this one's (command line over config file).
  void merge(const CacheFlags& over);
  // Writes the flags into `s`; the sizes are parsed (ValueError naming the flag on bad input).
  void apply(memory::CacheSettings* s) const;
};

}  // namespace strata::examples
