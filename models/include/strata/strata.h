// Umbrella header for the whole library: tensors, autograd, ops, modules, layers, optimizers.
#pragma once

#include "strata/autograd/checkpoint.h"
#include "strata/autograd/engine.h"
#include "strata/autograd/grad_mode.h"
#include "strata/autograd/saved_tensor.h"
#include "strata/core/backend.h"
#include "strata/core/byte_size.h"
#include "strata/core/op_observer.h"
#include "strata/memory/nvme_state_store.h"
#include "strata/memory/plan.h"
#include "strata/memory/tensor_cache.h"
#include "strata/memory/trainer_cache.h"
#include "strata/models/bert.h"
#include "strata/models/gnn.h"
#include "strata/nn.h"
#include "strata/ops.h"
#include "strata/optim.h"
