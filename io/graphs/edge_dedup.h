// first_occurrences: which of a list of edge keys are the first of their value, by a stable LSD
// radix sort (O(E) per 16 key bits), for the generators' duplicate removal.
#pragma once

#include <cstdint>
#include <vector>

namespace strata::io {

// keep[i] = 1 when no j < i has keys[j] == keys[i]. Keys are below 2^key_bits (key_bits <= 64).
std::vector<uint8_t> first_occurrences(const std::vector<uint64_t>& keys, int key_bits);

}  // namespace strata::io
