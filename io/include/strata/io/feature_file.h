// Moved to strata/io/features/feature_file.h; this path forwards there for one release.
#pragma once

#include "strata/io/features/feature_file.h"
