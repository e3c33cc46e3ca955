// Moved to strata/io/images/synthetic_images.h; this path forwards there for one release.
#pragma once

#include "strata/io/images/synthetic_images.h"
