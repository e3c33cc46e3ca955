#include "strata/io/graphs/graph_generators.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <utility>
#include <vector>

#include "strata/core/error.h"
#include "strata/core/factory.h"
#include "strata/io/graphs/graph_dataset.h"
#include "tests/support/omp_threads.h"

using namespace strata;
using namespace strata::io;
using strata::testing::with_threads;

namespace {

using Edges = std::vector<std::pair<int64_t, int64_t>>;

Edges pairs_of(const GeneratedEdges& e) {
  std::vector<int64_t> s = e.src.to_vector<int64_t>(), d = e.dst.to_vector<int64_t>();
  Edges out(s.size());
  for (size_t i = 0; i < s.size(); ++i) out[i] = {s[i], d[i]};
  return out;
}

// The input-order edges of a graph (CSC position p holds input edge edge_ids[p]).
Edges input_edges(const Graph& g) {
  std::vector<int64_t> src = g.src().to_vector<int64_t>(), dst = g.dst().to_vector<int64_t>(),
                       ids = g.edge_ids().to_vector<int64_t>();
  Edges out(src.size());
  for (size_t p = 0; p < src.size(); ++p) out[size_t(ids[p])] = {src[p], dst[p]};
  return out;
}

std::vector<int64_t> degrees(const Edges& edges, int64_t n) {
  std::vector<int64_t> deg(size_t(n), 0);
  for (const auto& [s, d] : edges) ++deg[size_t(s)];
  return deg;
}

}  // namespace

// ---- R-MAT ----

TEST(GraphGenerators, RmatIsReproducibleAndIndependentOfThreadCount) {
  RmatOptions o{.scale = 12, .edge_factor = 8, .seed = 7};
  Edges one = with_threads(1, [&] { return pairs_of(rmat_edges(o)); });
  Edges two = with_threads(2, [&] { return pairs_of(rmat_edges(o)); });
  EXPECT_EQ(one, two);
  EXPECT_EQ(one, pairs_of(rmat_edges(o)));
  o.seed = 8;
  EXPECT_NE(one, pairs_of(rmat_edges(o)));
}

TEST(GraphGenerators, RmatDrawsExactlyEdgeFactorTimesNodesInRange) {
  GeneratedEdges e = rmat_edges({.scale = 10, .edge_factor = 5, .seed = 1});
  EXPECT_EQ(e.num_nodes, 1024);
  EXPECT_EQ(e.src.dtype(), DType::i64);
  Edges edges = pairs_of(e);
  ASSERT_EQ(edges.size(), 5u * 1024u);
  for (const auto& [s, d] : edges) {
    ASSERT_TRUE(s >= 0 && s < 1024 && d >= 0 && d < 1024);
  }
  Edges both = pairs_of(rmat_edges({.scale = 10, .edge_factor = 5, .seed = 1, .undirected = true}));
  ASSERT_EQ(both.size(), 2 * edges.size());
  for (size_t i = 0; i < edges.size(); ++i) {
    ASSERT_EQ(both[i], edges[i]);
    ASSERT_EQ(both[i + edges.size()], std::make_pair(edges[i].second, edges[i].first));
  }
  GraphDataset g = generate_rmat({.scale = 10, .edge_factor = 5, .seed = 1});
  EXPECT_EQ(g.name, "rmat(scale=10, edge_factor=5)");
  EXPECT_EQ(g.graph.num_nodes(), 1024);
  EXPECT_EQ(input_edges(g.graph), edges);
}

TEST(GraphGenerators, RmatQuadrantProbabilitiesSkewTheDegrees) {
  const int64_t n = int64_t(1) << 14;
  Edges edges = pairs_of(rmat_edges({.scale = 14, .edge_factor = 16, .seed = 3, .permute_ids = false}));
  // The top level puts the source in the first half with probability a + b = 0.76.
  double first_half =
      double(std::count_if(edges.begin(), edges.end(), [&](auto& e) { return e.first < n / 2; }));
  EXPECT_NEAR(first_half / double(edges.size()), 0.76, 0.01);
  std::vector<int64_t> deg = degrees(edges, n);
  int64_t max_deg = *std::max_element(deg.begin(), deg.end());
  EXPECT_GT(max_deg, 20 * 16);  // mean out-degree 16
  EXPECT_EQ(deg[0], max_deg);   // without the permutation the hub is node 0

  Edges flat =
      pairs_of(rmat_edges({.scale = 14, .edge_factor = 16, .a = 0.25, .b = 0.25, .c = 0.25, .d = 0.25}));
  std::vector<int64_t> flat_deg = degrees(flat, n);
  EXPECT_LT(*std::max_element(flat_deg.begin(), flat_deg.end()), 3 * 16);

  Edges permuted = pairs_of(rmat_edges({.scale = 14, .edge_factor = 16, .seed = 3}));
  std::vector<int64_t> perm_deg = degrees(permuted, n);
  std::vector<int64_t> a = deg, b = perm_deg;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  EXPECT_EQ(a, b);  // the same graph, relabelled
  EXPECT_NE(deg, perm_deg);
}

TEST(GraphGenerators, RmatRemovesSelfLoopsAndDuplicatesKeepingFirstOccurrences) {
  RmatOptions o{.scale = 8, .edge_factor = 16, .seed = 5};
  Edges raw = pairs_of(rmat_edges(o));
  o.remove_self_loops = true;
  o.remove_duplicates = true;
  Edges clean = pairs_of(rmat_edges(o));
  Edges expected;
  std::set<std::pair<int64_t, int64_t>> seen;
  for (const auto& e : raw)
    if (e.first != e.second && seen.insert(e).second) expected.push_back(e);
  EXPECT_LT(clean.size(), raw.size());
  EXPECT_EQ(clean, expected);

  o.undirected = true;
  Edges sym = pairs_of(rmat_edges(o));
  std::set<std::pair<int64_t, int64_t>> unordered;
  const size_t half = sym.size() / 2;
  for (size_t i = 0; i < half; ++i) {
    auto [s, d] = sym[i];
    ASSERT_NE(s, d);
    ASSERT_TRUE(unordered.insert({std::min(s, d), std::max(s, d)}).second);
    ASSERT_EQ(sym[i + half], std::make_pair(d, s));
  }
}

TEST(GraphGenerators, RmatRejectsBadOptions) {
  EXPECT_THROW(rmat_edges({.scale = 0}), ValueError);
  EXPECT_THROW(rmat_edges({.scale = 31}), ValueError);
  EXPECT_THROW(rmat_edges({.scale = 4, .edge_factor = 0}), ValueError);
  EXPECT_THROW(rmat_edges({.scale = 4, .a = 0.6}), ValueError);  // sums to 1.03
  EXPECT_THROW(rmat_edges({.scale = 4, .a = 1.2, .b = -0.2, .c = 0, .d = 0}), ValueError);
}

// ---- DC-SBM ----

namespace {

double intra_fraction(const GraphDataset& d) {
  std::vector<int64_t> labels = d.labels.to_vector<int64_t>();
  Edges edges = input_edges(d.graph);
  double intra = 0;
  for (const auto& [s, t] : edges) intra += labels[size_t(s)] == labels[size_t(t)] ? 1 : 0;
  return intra / double(edges.size());
}

// Per-class mean feature vectors [k][F].
std::vector<std::vector<double>> class_means(const GraphDataset& d) {
  std::vector<int64_t> labels = d.labels.to_vector<int64_t>();
  std::vector<float> x = d.features.to_vector<float>();
  const int64_t f = d.features.size(1);
  std::vector<std::vector<double>> mean(size_t(d.num_classes), std::vector<double>(size_t(f), 0));
  std::vector<double> count(size_t(d.num_classes), 0);
  for (size_t i = 0; i < labels.size(); ++i) {
    count[size_t(labels[i])] += 1;
    for (int64_t j = 0; j < f; ++j) mean[size_t(labels[i])][size_t(j)] += x[i * size_t(f) + size_t(j)];
  }
  for (size_t c = 0; c < mean.size(); ++c)
    for (double& m : mean[c]) m /= count[c];
  return mean;
}

double distance(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t j = 0; j < a.size(); ++j) s += (a[j] - b[j]) * (a[j] - b[j]);
  return std::sqrt(s);
}

}  // namespace

TEST(GraphGenerators, DcsbmPlantsBalancedBlocksAndTheirMixing) {
  GraphDataset d =
      generate_dcsbm({.num_nodes = 4000, .num_blocks = 4, .avg_degree = 12, .mixing = 0.2, .seed = 2});
  EXPECT_EQ(d.name, "dcsbm(n=4000, k=4)");
  EXPECT_EQ(d.num_classes, 4);
  std::vector<int64_t> labels = d.labels.to_vector<int64_t>();
  for (int64_t c = 0; c < 4; ++c) EXPECT_EQ(std::count(labels.begin(), labels.end(), c), 1000);
  EXPECT_FALSE(d.train_mask.defined());
  // 1 - mixing of the edges stay inside a block; no structure would give 1/4.
  EXPECT_NEAR(intra_fraction(d), 0.8, 0.02);
  EXPECT_NEAR(double(d.graph.num_edges()) / 4000.0, 12.0, 0.6);

  GraphDataset flat = generate_dcsbm({.num_nodes = 4000, .num_blocks = 4, .mixing = 0.75, .seed = 2});
  EXPECT_NEAR(intra_fraction(flat), 0.25, 0.02);

  GraphDataset sized = generate_dcsbm({.num_nodes = 1000, .block_sizes = {100, 300, 600}, .seed = 2});
  labels = sized.labels.to_vector<int64_t>();
  EXPECT_EQ(sized.num_classes, 3);
  EXPECT_EQ(std::count(labels.begin(), labels.end(), 0), 100);
  EXPECT_EQ(std::count(labels.begin(), labels.end(), 2), 600);
  EXPECT_EQ(labels[99], 0);
  EXPECT_EQ(labels[100], 1);
}

TEST(GraphGenerators, DcsbmIsSimpleSymmetricAndDegreeCorrected) {
  GraphDataset d = generate_dcsbm({.num_nodes = 3000, .avg_degree = 8, .degree_exponent = 2.1, .seed = 4});
  Edges edges = input_edges(d.graph);
  const size_t half = edges.size() / 2;
  std::set<std::pair<int64_t, int64_t>> seen;
  for (size_t i = 0; i < half; ++i) {
    auto [s, t] = edges[i];
    ASSERT_LT(s, t);  // no self loops, stored as (min, max) first
    ASSERT_TRUE(seen.insert({s, t}).second);
    ASSERT_EQ(edges[i + half], std::make_pair(t, s));
  }
  std::vector<int64_t> deg = degrees(edges, 3000);
  EXPECT_GT(*std::max_element(deg.begin(), deg.end()), 8 * 8);

  GraphDataset plain = generate_dcsbm({.num_nodes = 3000, .avg_degree = 8, .degree_exponent = 0, .seed = 4});
  std::vector<int64_t> plain_deg = degrees(input_edges(plain.graph), 3000);
  EXPECT_LT(*std::max_element(plain_deg.begin(), plain_deg.end()), 3 * 8);
}

TEST(GraphGenerators, DcsbmFeaturesSeparateTheClassesByTheSignal) {
  GraphDataset d = generate_dcsbm({.num_nodes = 4000, .feature_dim = 32, .feature_signal = 3.0, .seed = 6});
  EXPECT_EQ(d.features.dtype(), DType::f32);
  EXPECT_EQ(d.features.shape(), (Shape{4000, 32}));
  std::vector<std::vector<double>> means = class_means(d);
  for (size_t a = 0; a < means.size(); ++a) {
    double norm = distance(means[a], std::vector<double>(32, 0.0));
    EXPECT_NEAR(norm, 3.0, 0.4);  // signal 3 plus the noise of a mean over 1000 nodes
    for (size_t b = a + 1; b < means.size(); ++b) EXPECT_GT(distance(means[a], means[b]), 2.0);
  }
  // The noise around each class mean has unit variance.
  std::vector<int64_t> labels = d.labels.to_vector<int64_t>();
  std::vector<float> x = d.features.to_vector<float>();
  double var = 0;
  for (size_t i = 0; i < labels.size(); ++i)
    for (size_t j = 0; j < 32; ++j) var += std::pow(x[i * 32 + j] - means[size_t(labels[i])][j], 2);
  EXPECT_NEAR(var / (4000.0 * 32.0), 1.0, 0.05);

  GraphDataset none =
      generate_dcsbm({.num_nodes = 4000, .feature_dim = 32, .feature_signal = 0.0, .seed = 6});
  std::vector<std::vector<double>> flat = class_means(none);
  EXPECT_LT(distance(flat[0], flat[1]), 0.5);
}

TEST(GraphGenerators, DcsbmIsReproducibleAndIndependentOfThreadCount) {
  DcsbmOptions o{.num_nodes = 2000, .num_blocks = 5, .avg_degree = 6, .feature_dim = 8, .seed = 11};
  auto run = [&] {
    GraphDataset d = generate_dcsbm(o);
    return std::make_pair(input_edges(d.graph), d.features.to_vector<float>());
  };
  auto one = with_threads(1, run);
  auto two = with_threads(2, run);
  EXPECT_EQ(one.first, two.first);
  EXPECT_EQ(one.second, two.second);
  o.seed = 12;
  EXPECT_NE(one.first, run().first);
}

TEST(GraphGenerators, DcsbmRejectsBadOptions) {
  EXPECT_THROW(generate_dcsbm({.num_nodes = 0}), ValueError);
  EXPECT_THROW(generate_dcsbm({.num_nodes = 10, .num_blocks = 11}), ValueError);
  EXPECT_THROW(generate_dcsbm({.num_nodes = 10, .block_sizes = {3, 3}}), ValueError);
  EXPECT_THROW(generate_dcsbm({.num_nodes = 10, .mixing = 1.5}), ValueError);
  EXPECT_THROW(generate_dcsbm({.num_nodes = 10, .min_degree = 0}), ValueError);
}

// ---- split_nodes ----

namespace {

GraphDataset labelled(const std::vector<int64_t>& labels) {
  GraphDataset d;
  d.labels = from_vector(labels, {int64_t(labels.size())});
  d.num_classes = *std::max_element(labels.begin(), labels.end()) + 1;
  d.name = "labelled";
  return d;
}

}  // namespace

TEST(SplitNodes, StratifiesEveryClassWithRoundedSizes) {
  std::vector<int64_t> labels;
  for (int64_t c : {0, 1, 2})
    for (int64_t i = 0; i < (c == 0 ? 100 : c == 1 ? 50 : 10); ++i) labels.push_back(c);
  for (int i = 0; i < 5; ++i) labels.push_back(-1);
  std::rotate(labels.begin(), labels.begin() + 37, labels.end());  // classes interleaved with ids
  GraphDataset d = labelled(labels);
  split_nodes(&d, 0.6, 0.2, 1);
  std::vector<int> train = d.train_mask.to_vector<int>(), val = d.val_mask.to_vector<int>(),
                   test = d.test_mask.to_vector<int>();
  ASSERT_EQ(train.size(), labels.size());
  EXPECT_EQ(d.train_mask.dtype(), DType::boolean);
  std::map<int64_t, std::array<int, 3>> per_class;
  for (size_t i = 0; i < labels.size(); ++i) {
    ASSERT_LE(train[i] + val[i] + test[i], 1);
    if (labels[i] < 0) {
      ASSERT_EQ(train[i] + val[i] + test[i], 0);
      continue;
    }
    ASSERT_EQ(train[i] + val[i] + test[i], 1);
    per_class[labels[i]][0] += train[i];
    per_class[labels[i]][1] += val[i];
    per_class[labels[i]][2] += test[i];
  }
  EXPECT_EQ(per_class[0], (std::array<int, 3>{60, 20, 20}));
  EXPECT_EQ(per_class[1], (std::array<int, 3>{30, 10, 10}));
  EXPECT_EQ(per_class[2], (std::array<int, 3>{6, 2, 2}));
}

TEST(SplitNodes, KeepsATrainingNodeInEveryClassAndIsReproducible) {
  GraphDataset d = labelled({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1});
  split_nodes(&d, 0.05, 0.5, 3);
  std::vector<int> train = d.train_mask.to_vector<int>();
  EXPECT_EQ(train[10], 1);  // class 1's only node
  EXPECT_EQ(std::accumulate(train.begin(), train.end(), 0), 2);

  GraphDataset big = generate_dcsbm({.num_nodes = 500, .feature_dim = 0, .seed = 1});
  GraphDataset again = big;
  split_nodes(&big, 0.5, 0.25, 9);
  split_nodes(&again, 0.5, 0.25, 9);
  EXPECT_EQ(big.train_mask.to_vector<int>(), again.train_mask.to_vector<int>());
  EXPECT_EQ(big.val_mask.to_vector<int>(), again.val_mask.to_vector<int>());
  split_nodes(&again, 0.5, 0.25, 10);
  EXPECT_NE(big.train_mask.to_vector<int>(), again.train_mask.to_vector<int>());
}

TEST(SplitNodes, RejectsMissingLabelsAndBadFractions) {
  GraphDataset none;
  EXPECT_THROW(split_nodes(&none, 0.5, 0.2, 0), ValueError);
  GraphDataset d = labelled({0, 1, 0, 1});
  EXPECT_THROW(split_nodes(&d, 1.2, 0.0, 0), ValueError);
  EXPECT_THROW(split_nodes(&d, 0.5, -0.1, 0), ValueError);
  EXPECT_THROW(split_nodes(&d, 0.7, 0.4, 0), ValueError);
  EXPECT_NO_THROW(split_nodes(&d, 1.0, 0.0, 0));
  EXPECT_EQ(d.train_mask.to_vector<int>(), (std::vector<int>{1, 1, 1, 1}));
}
