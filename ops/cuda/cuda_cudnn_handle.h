// One cuDNN handle per device (cuda_cudnn.cpp), shared by the convolution and attention files.
#pragma once

#include "strata/config.h"

#if STRATA_HAVE_CUDNN
#include <cudnn.h>

namespace strata::gpu {

// The handle of `device`, created on first use on the compute stream; process-wide like the devices.
cudnnHandle_t cudnn_handle(int device);

}  // namespace strata::gpu
#endif
