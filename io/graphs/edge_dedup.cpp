#include "io/graphs/edge_dedup.h"

#include <algorithm>

namespace strata::io {

std::vector<uint8_t> first_occurrences(const std::vector<uint64_t>& keys, int key_bits) {
  struct Item {
    uint64_t key, index;
  };
  const size_t n = keys.size();
  std::vector<Item> items(n), scratch(n);
  for (size_t i = 0; i < n; ++i) items[i] = {keys[i], i};
  // LSD radix sort on 16-bit digits: stable, so equal keys stay in index order.
  std::vector<size_t> start((1 << 16) + 1);
  for (int shift = 0; shift < key_bits; shift += 16) {
    std::fill(start.begin(), start.end(), 0);
    for (const Item& it : items) ++start[((it.key >> shift) & 0xffff) + 1];
    for (size_t d = 1; d < start.size(); ++d) start[d] += start[d - 1];
    for (const Item& it : items) scratch[start[(it.key >> shift) & 0xffff]++] = it;
    items.swap(scratch);
  }
  std::vector<uint8_t> keep(n, 0);
  for (size_t i = 0; i < n; ++i)
    if (i == 0 || items[i].key != items[i - 1].key) keep[items[i].index] = 1;
  return keep;
}

}  // namespace strata::io
