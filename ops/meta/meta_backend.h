// make_meta_backend: the Backend for Meta tensors (shape rules and cost only).
#pragma once

#include <memory>

#include "strata/core/backend.h"

namespace strata::meta {
std::unique_ptr<Backend> make_meta_backend();
}
