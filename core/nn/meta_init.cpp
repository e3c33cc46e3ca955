#include "strata/nn/meta_init.h"

#include "strata/core/meta_allocation.h"

namespace strata::nn {

MetaInitGuard::MetaInitGuard() : prev_(detail::cpu_tensors_on_meta()) {
  detail::set_cpu_tensors_on_meta(true);
}
MetaInitGuard::~MetaInitGuard() { detail::set_cpu_tensors_on_meta(prev_); }
bool MetaInitGuard::active() { return detail::cpu_tensors_on_meta(); }

}  // namespace strata::nn
