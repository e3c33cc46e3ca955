// Moved to strata/io/checkpoint/checkpoint.h; this path forwards there for one release.
#pragma once

#include "strata/io/checkpoint/checkpoint.h"
