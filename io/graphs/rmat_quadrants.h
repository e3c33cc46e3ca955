// RmatQuadrants: one R-MAT level (Chakrabarti, Zhan, Faloutsos, SDM 2004) from a 32-bit random
// word, shared by the homogeneous and the typed R-MAT generators.
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>

#include "strata/core/error.h"

namespace strata::io {

// Quadrant probabilities a (top left), b (top right), c (bottom left), d (bottom right) as
// thresholds on a 32-bit word: w < ta picks a, < tab b, < tabc c, else d.
struct RmatQuadrants {
  uint64_t ta = 0, tab = 0, tabc = 0;

  // ValueError, naming `who`, unless each probability lies in [0, 1] and they sum to 1.
  RmatQuadrants(double a, double b, double c, double d, std::string_view who) {
    for (double p : {a, b, c, d})
      STRATA_CHECK(p >= 0 && p <= 1, ValueError, who, ": probabilities a=", a, " b=", b, " c=", c, " d=", d,
                   " must lie in [0, 1]");
    STRATA_CHECK(std::abs(a + b + c + d - 1) < 1e-6, ValueError, who, ": probabilities a=", a, " b=", b,
                 " c=", c, " d=", d, " sum to ", a + b + c + d, ", not 1");
    const double two32 = 4294967296.0;
    ta = uint64_t(a * two32), tab = uint64_t((a + b) * two32), tabc = uint64_t((a + b + c) * two32);
  }
  // The row bit (1: c or d, the lower half) and the column bit (1: b or d, the right half).
  uint64_t row_bit(uint32_t w) const { return uint64_t(w >= tab); }
  uint64_t col_bit(uint32_t w) const { return uint64_t((w >= ta && w < tab) || w >= tabc); }
};

}  // namespace strata::io
