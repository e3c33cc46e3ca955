// Moved to strata/io/weights/bert_weights.h; this path forwards there for one release.
#pragma once

#include "strata/io/weights/bert_weights.h"
