#include "strata/nn/meta_init.h"

namespace strata::nn {

namespace {
thread_local bool tl_meta_init = false;
}

MetaInitGuard::MetaInitGuard() : prev_(tl_meta_init) { tl_meta_init = true; }
MetaInitGuard::~MetaInitGuard() { tl_meta_init = prev_; }
bool MetaInitGuard::active() { return tl_meta_init; }

}  // namespace strata::nn
