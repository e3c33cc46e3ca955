#include "strata/io/keyed_rng.h"

#include "strata/core/error.h"
#include "strata/core/philox.h"

namespace strata::io {

uint32_t KeyedRng::next_u32() {
  if (used_ == 4) {
    // Counter = (index lo, index hi, epoch, block); key = seed.
    const philox::U32x4 r = philox::philox4x32_10(
        philox::U32x4{uint32_t(index_), uint32_t(index_ >> 32), uint32_t(epoch_), block_++}, uint32_t(seed_),
        uint32_t(seed_ >> 32) ^ uint32_t(epoch_ >> 32));
    words_[0] = r.x, words_[1] = r.y, words_[2] = r.z, words_[3] = r.w;
    used_ = 0;
  }
  return words_[used_++];
}

double KeyedRng::uniform() {
  const uint64_t hi = next_u32() >> 5, lo = next_u32() >> 6;  // 27 + 26 bits
  return double(hi * 67108864.0 + lo) * (1.0 / 9007199254740992.0);
}

int64_t KeyedRng::uniform_int(int64_t lo, int64_t hi) {
  STRATA_CHECK(hi >= lo, ValueError, "KeyedRng::uniform_int: empty range [", lo, ", ", hi, "]");
  const uint64_t span = uint64_t(hi - lo) + 1;
  // Rejection sampling keeps every value equally likely.
  const uint64_t limit = ~uint64_t(0) - (~uint64_t(0) % span);
  uint64_t v;
  do {
    v = (uint64_t(next_u32()) << 32) | next_u32();
  } while (v >= limit);
  return lo + int64_t(v % span);
}

}  // namespace strata::io
