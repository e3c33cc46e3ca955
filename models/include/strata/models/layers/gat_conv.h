// Moved to strata/models/layers/graph/gat_conv.h; this path forwards there for one release.
#pragma once

#include "strata/models/layers/graph/gat_conv.h"
