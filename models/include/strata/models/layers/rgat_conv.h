// Moved to strata/models/layers/graph/rgat_conv.h; this path forwards there for one release.
#pragma once

#include "strata/models/layers/graph/rgat_conv.h"
