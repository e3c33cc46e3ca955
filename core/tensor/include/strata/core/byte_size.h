// Byte sizes as users write them ("1.5G", "800M", "64K", "4096") and as messages print them.
#pragma once

#include <cstdint>
#include <string>

namespace strata {

// "1.5G", "800M", "64K", "4096" (bytes; K/M/G/T are powers of 1024, an optional trailing "B" or
// "iB" is allowed). Throws ValueError naming `what` and the text.
uint64_t parse_byte_size(const std::string& text, const std::string& what = "size");

// "512 B", "3.00 KiB", "1.50 GiB": two decimals from KiB up.
std::string format_bytes(double bytes);

}  // namespace strata
