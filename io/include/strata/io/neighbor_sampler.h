// Moved to strata/io/graphs/neighbor_sampler.h; this path forwards there for one release.
#pragma once

#include "strata/io/graphs/neighbor_sampler.h"
