// Moved to strata/io/images/cifar10.h; this path forwards there for one release.
#pragma once

#include "strata/io/images/cifar10.h"
