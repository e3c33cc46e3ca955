// Moved to strata/io/features/feature_store.h; this path forwards there for one release.
#pragma once

#include "strata/io/features/feature_store.h"
