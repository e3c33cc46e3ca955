// The allocators' common out-of-memory message.
#include "strata/core/out_of_memory.h"

#include "strata/core/byte_size.h"

namespace strata {

std::string out_of_memory_message(const std::string& device, size_t bytes, MemoryCategory category,
                                  const MemorySnapshot& in_use, uint64_t capacity, const std::string& why) {
  std::string by_category;
  for (size_t c = 0; c < kNumMemoryCategories; ++c) {
    if (in_use.current[c] == 0) continue;
    if (!by_category.empty()) by_category += ", ";
    by_category +=
        std::string(memory_category_name(MemoryCategory(c))) + " " + format_bytes(double(in_use.current[c]));
  }
  return device + " out of memory: cannot allocate " + format_bytes(double(bytes)) + " for " +
         memory_category_name(category) + "; " +
         (capacity > 0 ? "capacity " + format_bytes(double(capacity)) + ", " : std::string()) +
         format_bytes(double(in_use.total_current)) + " in use (" +
         (by_category.empty() ? "nothing" : by_category) + ")" + why;
}

}  // namespace strata
