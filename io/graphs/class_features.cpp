#include "io/graphs/class_features.h"

#include <cmath>

#include "io/graphs/graph_assembly.h"
#include "io/graphs/random_draws.h"

namespace strata::io {
namespace {

// Normal t of a stream is half of the pair from block t / 2; consecutive draws reuse the pair.
struct Normals {
  const PhiloxStream& rng;
  uint64_t block = ~uint64_t(0);
  std::pair<double, double> pair{};
  double operator()(uint64_t t) {
    if (t / 2 != block) {
      block = t / 2;
      pair = normal_pair(rng.block(block));
    }
    return t % 2 == 0 ? pair.first : pair.second;
  }
};

}  // namespace

Tensor class_features(const std::vector<int64_t>& labels, int64_t classes, int64_t dim, double signal,
                      uint64_t seed, uint64_t mean_stream, uint64_t noise_stream) {
  const int64_t f = dim, n = int64_t(labels.size());
  const PhiloxStream mean_rng(seed, mean_stream), noise_rng(seed, noise_stream);
  std::vector<double> means(size_t(classes * f));
  Normals mean_normal{mean_rng};
  for (int64_t c = 0; c < classes; ++c) {
    double norm = 0;
    for (int64_t j = 0; j < f; ++j) {
      double z = mean_normal(uint64_t(c * f + j));
      means[size_t(c * f + j)] = z;
      norm += z * z;
    }
    norm = std::sqrt(norm);
    for (int64_t j = 0; j < f; ++j) means[size_t(c * f + j)] *= norm > 0 ? signal / norm : 0.0;
  }
  std::vector<float> x(size_t(n * f), 0.0f);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const int64_t label = labels[size_t(i)];
    if (label < 0) continue;
    Normals noise{noise_rng};
    for (int64_t j = 0; j < f; ++j)
      x[size_t(i * f + j)] = float(means[size_t(label * f + j)] + noise(uint64_t(i * f + j)));
  }
  return host_tensor(x, {n, f});
}

}  // namespace strata::io
