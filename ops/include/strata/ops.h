// Umbrella header for the functional ops API.
#pragma once

#include "strata/autograd/grad_mode.h"
#include "strata/core/generator.h"
#include "strata/core/tensor.h"
#include "strata/ops/attention.h"
#include "strata/ops/autocast.h"
#include "strata/ops/conv.h"
#include "strata/ops/elementwise.h"
#include "strata/ops/factory.h"
#include "strata/ops/indexing.h"
#include "strata/ops/linalg.h"
#include "strata/ops/matmul_precision.h"
#include "strata/ops/nn.h"
#include "strata/ops/reduction.h"
#include "strata/ops/shape_ops.h"
#include "strata/ops/sim_device.h"
