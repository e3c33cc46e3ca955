#include "strata/core/generator.h"

namespace strata {

namespace {
thread_local Generator tl_default_generator{0};
thread_local Generator* tl_current = nullptr;
}  // namespace

Generator& current_generator() { return tl_current ? *tl_current : tl_default_generator; }
void manual_seed(uint64_t seed) { current_generator().manual_seed(seed); }

GeneratorGuard::GeneratorGuard(Generator& g) : prev_(tl_current) { tl_current = &g; }
GeneratorGuard::~GeneratorGuard() { tl_current = prev_; }

}  // namespace strata
