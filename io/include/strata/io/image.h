// Moved to strata/io/images/image.h; this path forwards there for one release.
#pragma once

#include "strata/io/images/image.h"
