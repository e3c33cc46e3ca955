// Moved to strata/io/weights/safetensors.h; this path forwards there for one release.
#pragma once

#include "strata/io/weights/safetensors.h"
