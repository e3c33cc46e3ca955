// Moved to strata/io/text/token_shards.h; this path forwards there for one release.
#pragma once

#include "strata/io/text/token_shards.h"
