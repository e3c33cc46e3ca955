// KeyedRng: the data loaders' random numbers, Philox4x32-10 keyed by (seed, epoch, index), so a
// sample's augmentation or an epoch's order does not depend on which loader thread drew it, or when.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace strata::io {

// Philox4x32-10 keyed by `seed`, its counter holding (index, epoch, block): the stream of one
// (epoch, index) is independent of every other one's and of the order they are drawn in.
class KeyedRng {
 public:
  KeyedRng(uint64_t seed, uint64_t epoch, uint64_t index) : seed_(seed), epoch_(epoch), index_(index) {}
  uint32_t next_u32();
  double uniform();                             // [0, 1), 53 bits
  int64_t uniform_int(int64_t lo, int64_t hi);  // [lo, hi], inclusive like random.randint

 private:
  uint64_t seed_, epoch_, index_;
  uint32_t block_ = 0;  // next Philox block of this stream
  uint32_t words_[4] = {};
  int used_ = 4;  // words of words_ consumed
};

// The index of the stream an epoch's order is drawn from: one no sample has.
inline constexpr uint64_t kEpochOrderIndex = ~uint64_t(0);

// Shuffles `v` (Fisher-Yates) with the stream (seed, epoch, index): every loader's epoch order.
template <class T>
void shuffle_keyed(std::vector<T>* v, uint64_t seed, uint64_t epoch, uint64_t index = kEpochOrderIndex) {
  KeyedRng rng(seed, epoch, index);
  for (int64_t i = int64_t(v->size()) - 1; i > 0; --i)
    std::swap((*v)[size_t(i)], (*v)[size_t(rng.uniform_int(0, i))]);
}

}  // namespace strata::io
