#include "strata/ops/matmul_precision.h"

namespace strata::ops {

namespace {
thread_local bool tl_tf32 = false;
}  // namespace

AllowTf32Guard::AllowTf32Guard(bool allow) : prev_(tl_tf32) { tl_tf32 = allow; }
AllowTf32Guard::~AllowTf32Guard() { tl_tf32 = prev_; }

bool tf32_allowed() { return tl_tf32; }

}  // namespace strata::ops
