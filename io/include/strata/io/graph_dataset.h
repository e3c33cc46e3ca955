// Moved to strata/io/graphs/graph_dataset.h; this path forwards there for one release.
#pragma once

#include "strata/io/graphs/graph_dataset.h"
