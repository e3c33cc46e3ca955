// Moved to strata/io/graphs/knowledge_graph.h; this path forwards there for one release.
#pragma once

#include "strata/io/graphs/knowledge_graph.h"
