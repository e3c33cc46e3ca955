#include "strata/core/byte_size.h"

#include <cctype>
#include <cmath>
#include <cstdio>

#include "strata/core/error.h"

namespace strata {

uint64_t parse_byte_size(const std::string& text, const std::string& what) {
  size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(text, &pos);
  } catch (...) {
    STRATA_CHECK(false, ValueError, what, ": '", text, "' is not a size (e.g. 1.5G, 800M, 4096)");
  }
  std::string unit = text.substr(pos);
  for (auto& c : unit) c = char(std::toupper(static_cast<unsigned char>(c)));
  if (unit.size() >= 2 && unit.substr(unit.size() - 2) == "IB")
    unit.resize(unit.size() - 2);
  else if (!unit.empty() && unit.back() == 'B')
    unit.pop_back();
  double scale = 1;
  if (unit == "K")
    scale = 1024.0;
  else if (unit == "M")
    scale = 1024.0 * 1024;
  else if (unit == "G")
    scale = 1024.0 * 1024 * 1024;
  else if (unit == "T")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else
    STRATA_CHECK(unit.empty(), ValueError, what, ": '", text, "' has an unknown unit (use K, M, G or T)");
  STRATA_CHECK(v >= 0 && std::isfinite(v), ValueError, what, ": '", text, "' must be a non-negative size");
  // Below 2^63 bytes (8 EiB): a larger figure is a typo, and would not convert exactly.
  STRATA_CHECK(v * scale < 9.2e18, ValueError, what, ": '", text, "' is too large (at most 8 EiB)");
  return uint64_t(v * scale);
}

std::string format_bytes(double bytes) {
  static const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  if (std::fabs(bytes) < 1024) return std::to_string(int64_t(bytes)) + " B";
  int u = -1;
  while (std::fabs(bytes) >= 1024 && u < 3) {
    bytes /= 1024;
    ++u;
  }
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.2f %s", bytes, units[u]);
  return buf;
}

}  // namespace strata
