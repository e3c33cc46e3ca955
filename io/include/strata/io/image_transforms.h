// Moved to strata/io/images/image_transforms.h; this path forwards there for one release.
#pragma once

#include "strata/io/images/image_transforms.h"
