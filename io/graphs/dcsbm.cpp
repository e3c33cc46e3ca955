// The degree-corrected stochastic block model (Karrer and Newman, "Stochastic blockmodels and
// community structure in networks", PRE 83, 016107, 2011) with planted classes and Gaussian
// class features. Edges are sampled per edge, never per node pair: O(N + E).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "io/graphs/class_features.h"
#include "io/graphs/edge_dedup.h"
#include "io/graphs/graph_assembly.h"
#include "io/graphs/random_draws.h"
#include "strata/core/error.h"
#include "strata/io/graphs/graph_generators.h"

namespace strata::io {
namespace {

// Stream ids of the draws under the seed.
constexpr uint64_t kPropensityStream = 1, kIntraStream = 2, kInterStream = 3, kMeanStream = 4,
                   kNoiseStream = 5;
// Draws per edge before giving up on it (a self loop, or an inter-block pair landing in one block:
// at most 1/2 likely each, so an edge is lost with probability below 2^-16).
constexpr uint64_t kAttempts = 16;

// Walker's alias table (Vose's construction) over weights w[0..count), the drawn index offset by
// `base`: O(count) to build, O(1) per draw.
struct AliasTable {
  std::vector<double> prob;
  std::vector<int64_t> alias;
  int64_t base = 0;

  AliasTable(const double* w, int64_t count, int64_t base_id)
      : prob(size_t(count)), alias(size_t(count)), base(base_id) {
    double total = 0;
    for (int64_t i = 0; i < count; ++i) total += w[i];
    std::vector<int64_t> small, large;
    for (int64_t i = 0; i < count; ++i) {
      prob[size_t(i)] = total > 0 ? w[i] * double(count) / total : 1.0;
      (prob[size_t(i)] < 1.0 ? small : large).push_back(i);
      alias[size_t(i)] = i;
    }
    while (!small.empty() && !large.empty()) {
      int64_t s = small.back(), l = large.back();
      small.pop_back();
      alias[size_t(s)] = l;
      prob[size_t(l)] -= 1.0 - prob[size_t(s)];
      if (prob[size_t(l)] < 1.0) {
        large.pop_back();
        small.push_back(l);
      }
    }
    for (int64_t i : small) prob[size_t(i)] = 1.0;  // rounding leftovers
    for (int64_t i : large) prob[size_t(i)] = 1.0;
  }
  // One draw from a block of random words.
  int64_t draw(philox::U32x4 r) const {
    int64_t col = int64_t(uniform_below(prob.size(), bits64(r.x, r.y)));
    return base + (uniform01(bits64(r.z, r.w)) < prob[size_t(col)] ? col : alias[size_t(col)]);
  }
};

void check(const DcsbmOptions& o) {
  STRATA_CHECK(o.num_nodes >= 1 && o.num_nodes <= kMaxGraphNodes, ValueError, "dcsbm: num_nodes ",
               o.num_nodes, " is not in [1, 2^30]");
  if (o.block_sizes.empty()) {
    STRATA_CHECK(o.num_blocks >= 1 && o.num_blocks <= o.num_nodes, ValueError, "dcsbm: num_blocks ",
                 o.num_blocks, " is not in [1, num_nodes=", o.num_nodes, "]");
  } else {
    int64_t sum = 0;
    for (int64_t s : o.block_sizes) {
      STRATA_CHECK(s >= 1, ValueError, "dcsbm: block size ", s, " is below 1");
      sum += s;
    }
    STRATA_CHECK(sum == o.num_nodes, ValueError, "dcsbm: block sizes sum to ", sum,
                 ", not num_nodes=", o.num_nodes);
  }
  STRATA_CHECK(o.mixing >= 0 && o.mixing <= 1, ValueError, "dcsbm: mixing ", o.mixing, " is not in [0, 1]");
  STRATA_CHECK(o.min_degree > 0, ValueError, "dcsbm: min_degree ", o.min_degree, " must be positive");
  STRATA_CHECK(o.avg_degree <= 0 || o.avg_degree * double(o.num_nodes) <= double(int64_t(1) << 34),
               ValueError, "dcsbm: avg_degree ", o.avg_degree, " asks for more than 2^34 edge ends");
  STRATA_CHECK(o.feature_dim >= 0 && o.feature_dim <= (int64_t(1) << 16), ValueError, "dcsbm: feature_dim ",
               o.feature_dim, " is not in [0, 65536]");
}

// Degree propensities: a power law on [min, max] by inverse transform sampling.
std::vector<double> propensities(const DcsbmOptions& o) {
  std::vector<double> theta(size_t(o.num_nodes), o.min_degree);
  if (o.degree_exponent <= 1) return theta;
  const double lo = o.min_degree, hi = std::max(lo, double(o.num_nodes - 1));
  const double g = 1 - o.degree_exponent;  // < 0
  const double lo_g = std::pow(lo, g), hi_g = std::pow(hi, g);
  const PhiloxStream rng(o.seed, kPropensityStream);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < o.num_nodes; ++i) {
    philox::U32x4 r = rng.block(uint64_t(i));
    double u = uniform01(bits64(r.x, r.y));
    theta[size_t(i)] = std::pow(lo_g - u * (lo_g - hi_g), 1 / g);
  }
  return theta;
}

}  // namespace

GraphDataset generate_dcsbm(const DcsbmOptions& o) {
  check(o);
  const int64_t n = o.num_nodes;
  std::vector<int64_t> sizes = o.block_sizes;
  if (sizes.empty())
    for (int64_t r = 0; r < o.num_blocks; ++r)
      sizes.push_back(n / o.num_blocks + (r < n % o.num_blocks ? 1 : 0));
  const int64_t k = int64_t(sizes.size());
  std::vector<int64_t> offsets(size_t(k + 1), 0);
  std::vector<int64_t> labels(static_cast<size_t>(n));
  for (int64_t r = 0; r < k; ++r) {
    offsets[size_t(r + 1)] = offsets[size_t(r)] + sizes[size_t(r)];
    std::fill(labels.begin() + offsets[size_t(r)], labels.begin() + offsets[size_t(r + 1)], r);
  }

  // Expected degrees: the propensities scaled to the mean degree.
  std::vector<double> degree = propensities(o);
  const double mean_theta = std::accumulate(degree.begin(), degree.end(), 0.0) / double(n);
  const double avg = o.avg_degree > 0 ? o.avg_degree : mean_theta;
  for (double& d : degree) d *= avg / mean_theta;

  // Block r keeps (1 - mixing) of its volume's edge ends inside: (1 - mixing) V_r / 2 edges. The
  // inter-block edges, mixing V / 2 of them, draw both ends from all nodes by degree and redraw
  // when the ends share a block, which leaves each node mixing of its degree outside its block
  // when the blocks have equal volumes.
  std::vector<int64_t> intra_start(size_t(k + 1), 0);
  std::vector<AliasTable> block_tables;
  for (int64_t r = 0; r < k; ++r) {
    const double* w = degree.data() + offsets[size_t(r)];
    double volume = std::accumulate(w, w + sizes[size_t(r)], 0.0);
    int64_t edges = sizes[size_t(r)] > 1 ? std::llround((1 - o.mixing) * volume / 2) : 0;
    intra_start[size_t(r + 1)] = intra_start[size_t(r)] + edges;
    block_tables.emplace_back(w, sizes[size_t(r)], offsets[size_t(r)]);
  }
  const int64_t intra = intra_start[size_t(k)];
  const int64_t inter = k > 1 ? std::llround(o.mixing * avg * double(n) / 2) : 0;
  const AliasTable all(degree.data(), n, 0);

  std::vector<int64_t> src(size_t(intra + inter), -1), dst(size_t(intra + inter), -1);
  const PhiloxStream intra_rng(o.seed, kIntraStream), inter_rng(o.seed, kInterStream);
#pragma omp parallel for schedule(static, 4096)
  for (int64_t j = 0; j < intra + inter; ++j) {
    const bool inside = j < intra;
    const AliasTable* table = &all;
    if (inside) {
      int64_t r =
          int64_t(std::upper_bound(intra_start.begin(), intra_start.end(), j) - intra_start.begin()) - 1;
      table = &block_tables[size_t(r)];
    }
    const PhiloxStream& rng = inside ? intra_rng : inter_rng;
    const uint64_t e = uint64_t(inside ? j : j - intra);
    for (uint64_t t = 0; t < kAttempts; ++t) {
      int64_t u = table->draw(rng.block(2 * (e * kAttempts + t)));
      int64_t v = table->draw(rng.block(2 * (e * kAttempts + t) + 1));
      if (u == v || (!inside && labels[size_t(u)] == labels[size_t(v)])) continue;
      src[size_t(j)] = std::min(u, v);
      dst[size_t(j)] = std::max(u, v);
      break;
    }
  }

  std::vector<uint64_t> keys(src.size());
  for (size_t j = 0; j < src.size(); ++j)
    keys[j] =
        src[j] < 0 ? uint64_t(0) : uint64_t(src[j]) * uint64_t(n) + uint64_t(dst[j]) + 1;  // 0: lost draws
  int bits = 1;
  while (bits < 64 && (uint64_t(1) << bits) <= uint64_t(n) * uint64_t(n)) ++bits;
  std::vector<uint8_t> keep = first_occurrences(keys, bits);
  size_t kept = 0;
  for (size_t j = 0; j < src.size(); ++j) {
    if (!keep[j] || src[j] < 0) continue;
    src[kept] = src[j];
    dst[kept] = dst[j];
    ++kept;
  }
  src.resize(kept);
  dst.resize(kept);
  append_reverse_edges(&src, &dst);

  GraphDataset data;
  data.graph = Graph::from_edges(n, host_tensor(src), host_tensor(dst));
  data.labels = host_tensor(labels);
  data.num_classes = k;
  if (o.feature_dim > 0)
    data.features =
        class_features(labels, k, o.feature_dim, o.feature_signal, o.seed, kMeanStream, kNoiseStream);
  data.name = detail::concat("dcsbm(n=", n, ", k=", k, ")");
  return data;
}

}  // namespace strata::io
