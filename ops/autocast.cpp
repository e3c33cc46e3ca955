#include "strata/ops/autocast.h"

#include "strata/config.h"
#include "strata/core/error.h"

namespace strata::ops {

namespace {
thread_local bool tl_enabled = false;
thread_local DType tl_dtype = DType::bf16;
}  // namespace

AutocastGuard::AutocastGuard(DType dtype, bool enabled) : prev_enabled_(tl_enabled), prev_dtype_(tl_dtype) {
  STRATA_CHECK(dtype == DType::bf16, NotImplementedError, "AutocastGuard: only bf16 is supported, got ",
               dtype_name(dtype));
  tl_enabled = enabled;
  tl_dtype = dtype;
}

AutocastGuard::~AutocastGuard() {
  tl_enabled = prev_enabled_;
  tl_dtype = prev_dtype_;
}

bool autocast_enabled() { return tl_enabled; }
DType autocast_dtype() { return tl_dtype; }

bool autocast_applies(Device dev, DType dt) {
  return tl_enabled && dt == DType::f32 && (dev.is_cuda() || (STRATA_HAVE_DNNL && dev.is_host_memory()));
}

}  // namespace strata::ops
