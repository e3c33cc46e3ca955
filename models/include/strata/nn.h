// Umbrella header for modules and layers (strata::nn).
#pragma once

#include "strata/models/layers/activation.h"
#include "strata/models/layers/batch_norm.h"
#include "strata/models/layers/container.h"
#include "strata/models/layers/conv2d.h"
#include "strata/models/layers/dropout.h"
#include "strata/models/layers/embedding.h"
#include "strata/models/layers/gat_conv.h"
#include "strata/models/layers/gnn_conv.h"
#include "strata/models/layers/layer_norm.h"
#include "strata/models/layers/linear.h"
#include "strata/models/layers/materialization.h"
#include "strata/models/layers/pooling.h"
#include "strata/models/layers/rgat_conv.h"
#include "strata/models/layers/rgcn_conv.h"
#include "strata/nn/meta_init.h"
#include "strata/nn/module.h"
