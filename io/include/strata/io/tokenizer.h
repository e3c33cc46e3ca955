// Moved to strata/io/text/tokenizer.h; this path forwards there for one release.
#pragma once

#include "strata/io/text/tokenizer.h"
