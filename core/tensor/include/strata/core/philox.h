// Philox4x32-10 counter-based RNG: (seed, offset) gives the same numbers on CPU and CUDA.
#pragma once

#include <cstdint>

#include "strata/core/host_device.h"

namespace strata::philox {

struct U32x4 {
  uint32_t x, y, z, w;
};

STRATA_HD uint32_t mulhilo(uint32_t a, uint32_t b, uint32_t* hi) {
  uint64_t p = uint64_t(a) * uint64_t(b);
  *hi = uint32_t(p >> 32);
  return uint32_t(p);
}

// Salmon et al., "Parallel random numbers: as easy as 1, 2, 3" (SC'11), Philox4x32-10.
STRATA_HD U32x4 philox4x32_10(U32x4 ctr, uint32_t k0, uint32_t k1) {
  for (int r = 0; r < 10; ++r) {
    uint32_t hi0, hi1;
    uint32_t lo0 = mulhilo(0xD2511F53u, ctr.x, &hi0);
    uint32_t lo1 = mulhilo(0xCD9E8D57u, ctr.z, &hi1);
    ctr = U32x4{hi1 ^ ctr.y ^ k0, lo1, hi0 ^ ctr.w ^ k1, lo0};
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return ctr;
}

// The 4 random words for block `block` (= element index / 4 + offset / 4) under `seed`.
STRATA_HD U32x4 block(uint64_t seed, uint64_t block) {
  return philox4x32_10(U32x4{uint32_t(block), uint32_t(block >> 32), 0u, 0u}, uint32_t(seed),
                       uint32_t(seed >> 32));
}

// Uniform float in [0, 1) from 24 random bits.
STRATA_HD float to_uniform(uint32_t bits) { return float(bits >> 8) * (1.0f / 16777216.0f); }

// Element i of the stream starting at `offset` (offset is a multiple of 4).
STRATA_HD uint32_t word(uint64_t seed, uint64_t offset, uint64_t i) {
  U32x4 r = block(seed, (offset + i) >> 2);
  switch ((offset + i) & 3) {
    case 0: return r.x;
    case 1: return r.y;
    case 2: return r.z;
    default: return r.w;
  }
}

}  // namespace strata::philox
