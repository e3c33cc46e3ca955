// Moved to strata/io/images/image_folder.h; this path forwards there for one release.
#pragma once

#include "strata/io/images/image_folder.h"
