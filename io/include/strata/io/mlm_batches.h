// Moved to strata/io/text/mlm_batches.h; this path forwards there for one release.
#pragma once

#include "strata/io/text/mlm_batches.h"
