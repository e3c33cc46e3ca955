// Moved to strata/models/layers/graph/materialization.h; this path forwards there for one release.
#pragma once

#include "strata/models/layers/graph/materialization.h"
