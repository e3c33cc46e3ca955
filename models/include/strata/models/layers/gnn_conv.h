// Moved: GCNConv to strata/models/layers/graph/gcn_conv.h, SAGEConv to
// strata/models/layers/graph/sage_conv.h; this path forwards to both for one release.
#pragma once

#include "strata/models/layers/graph/gcn_conv.h"
#include "strata/models/layers/graph/sage_conv.h"
