// Counter-based random draws for the graph generators and splits: Philox4x32-10
// (strata/core/philox.h) keyed by (seed, stream), so any draw is computed from its index alone and
// parallel loops give the same numbers for any thread count.
#pragma once

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "strata/core/philox.h"

namespace strata::io {

// One stream of Philox blocks: block b is philox::block(key, b), the key mixing the seed with the
// stream id (splitmix64's finalizer, so neighbouring ids give unrelated keys).
class PhiloxStream {
 public:
  PhiloxStream(uint64_t seed, uint64_t stream) {
    uint64_t z = stream + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    key_ = seed ^ (z ^ (z >> 31));
  }
  philox::U32x4 block(uint64_t b) const { return philox::block(key_, b); }

 private:
  uint64_t key_ = 0;
};

// 64 random bits from two words.
inline uint64_t bits64(uint32_t hi, uint32_t lo) { return uint64_t(hi) << 32 | lo; }
// Uniform in [0, 1) with 53 bits.
inline double uniform01(uint64_t bits) { return double(bits >> 11) * 0x1.0p-53; }
// Uniform integer in [0, bound) (multiply-high; bias below 2^-32 for bound < 2^32).
inline uint64_t uniform_below(uint64_t bound, uint64_t bits) {
  return uint64_t((unsigned __int128)bits * bound >> 64);
}
// Two independent standard normals from one block (Box-Muller).
inline std::pair<double, double> normal_pair(philox::U32x4 r) {
  double u1 = 1.0 - uniform01(bits64(r.x, r.y));  // (0, 1]: log stays finite
  double u2 = uniform01(bits64(r.z, r.w));
  double radius = std::sqrt(-2.0 * std::log(u1));
  return {radius * std::cos(6.283185307179586 * u2), radius * std::sin(6.283185307179586 * u2)};
}

// Fisher-Yates with swap i drawn from block i of (seed, stream).
template <class T>
void shuffle(std::vector<T>* v, uint64_t seed, uint64_t stream) {
  PhiloxStream rng(seed, stream);
  for (size_t i = v->size(); i > 1; --i) {
    philox::U32x4 r = rng.block(i);
    std::swap((*v)[i - 1], (*v)[uniform_below(i, bits64(r.x, r.y))]);
  }
}

}  // namespace strata::io
