// Generator: a (seed, offset) pair that hands out disjoint Philox ranges to random ops.
#pragma once

#include <cstdint>

namespace strata {

// The state an op needs to replay its random numbers bit for bit (dropout recompute).
struct RngState {
  uint64_t seed = 0;
  uint64_t offset = 0;
};

class Generator {
 public:
  explicit Generator(uint64_t seed = 0) : seed_(seed) {}
  void manual_seed(uint64_t seed) {
    seed_ = seed;
    offset_ = 0;
  }
  uint64_t seed() const { return seed_; }
  uint64_t offset() const { return offset_; }
  RngState state() const { return {seed_, offset_}; }
  void set_state(RngState s) {
    seed_ = s.seed;
    offset_ = s.offset;
  }
  // Reserves `n` numbers; returns the state to generate them from. Offsets stay multiples
  // of 4 so every op starts on a fresh Philox block.
  RngState reserve(uint64_t n) {
    RngState s{seed_, offset_};
    offset_ += (n + 3) & ~uint64_t(3);
    return s;
  }

 private:
  uint64_t seed_;
  uint64_t offset_ = 0;
};

// The calling thread's generator: the innermost GeneratorGuard's, else a thread-local default
// seeded with 0 (reseed it with manual_seed).
Generator& current_generator();
void manual_seed(uint64_t seed);

// Installs `g` as the current generator for this thread, RAII.
class GeneratorGuard {
 public:
  explicit GeneratorGuard(Generator& g);
  ~GeneratorGuard();
  GeneratorGuard(const GeneratorGuard&) = delete;
  GeneratorGuard& operator=(const GeneratorGuard&) = delete;

 private:
  Generator* prev_;
};

}  // namespace strata
