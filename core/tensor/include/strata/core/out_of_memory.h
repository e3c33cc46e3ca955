// The message every allocator's OutOfMemoryError carries: device, request, category, capacity, use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "strata/core/memory_stats.h"

namespace strata {

// "<device> out of memory: cannot allocate <bytes> for <category>; capacity <c>, <u> in use
// (<category> <bytes>, ...)<why>". capacity 0: the device has none of its own (the host), and the
// capacity clause is left out. `why` is appended as it is (e.g. " (the system refused it)").
std::string out_of_memory_message(const std::string& device, size_t bytes, MemoryCategory category,
                                  const MemorySnapshot& in_use, uint64_t capacity,
                                  const std::string& why = "");

}  // namespace strata
