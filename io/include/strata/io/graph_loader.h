// Moved to strata/io/graphs/graph_loader.h; this path forwards there for one release.
#pragma once

#include "strata/io/graphs/graph_loader.h"
