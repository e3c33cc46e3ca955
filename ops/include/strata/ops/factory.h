// The tensor factories under their ops:: names (they are defined in core: strata/core/factory.h).
#pragma once

#include "strata/core/factory.h"

namespace strata::ops {

using strata::arange;
using strata::empty;
using strata::empty_like;
using strata::from_vector;
using strata::full;
using strata::full_like;
using strata::normal_;
using strata::ones;
using strata::ones_like;
using strata::rand;
using strata::randn;
using strata::scalar_tensor;
using strata::uniform_;
using strata::zeros;
using strata::zeros_like;

}  // namespace strata::ops
