// Gaussian class features for the generators' planted labels: node i's row is its class's mean
// (feature_signal times a random unit vector) plus N(0, 1) noise per dimension.
#pragma once

#include <cstdint>
#include <vector>

#include "strata/core/tensor.h"

namespace strata::io {

// f32 [labels.size(), dim]: class c's mean is drawn from Philox stream (seed, mean_stream), and
// element (i, j)'s noise is normal i * dim + j of stream (seed, noise_stream), so rows do not
// depend on the thread count. A row whose label is negative is all zeros.
Tensor class_features(const std::vector<int64_t>& labels, int64_t classes, int64_t dim, double signal,
                      uint64_t seed, uint64_t mean_stream, uint64_t noise_stream);

}  // namespace strata::io
