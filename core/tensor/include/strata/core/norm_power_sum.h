// norm_power_sum_on: a tensor's sum(|t|^p) (p infinite: max |t|) as a 1-element f64 tensor in its
// own device's memory, composed from the Backend's elementwise kernels and deterministic row
// reductions, without waiting for the device. Backend::norm_power_sum reads it back;
// optim::clip_grad_norm_tensor_ keeps it on the device.
#pragma once

#include "strata/core/backend.h"
#include "strata/core/tensor.h"

namespace strata::detail {

Tensor norm_power_sum_on(Backend& be, const Tensor& t, double norm_type);

}  // namespace strata::detail
