#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "strata/core/error.h"
#include "strata/io/graphs/graph_generators.h"
#include "tests/support/omp_threads.h"

using namespace strata;
using namespace strata::io;
using strata::testing::with_threads;

namespace {

// One input-order edge of a typed graph.
struct Edge {
  int64_t src, dst, rel;
  friend bool operator==(const Edge&, const Edge&) = default;
};

// The edges in input order (CSC position p holds input edge edge_ids[p]), with their relations.
std::vector<Edge> input_edges(const Graph& g) {
  std::vector<int64_t> src = g.src().to_vector<int64_t>(), dst = g.dst().to_vector<int64_t>(),
                       ids = g.edge_ids().to_vector<int64_t>();
  std::vector<Edge> out(src.size());
  int64_t r = 0;
  for (size_t p = 0; p < src.size(); ++p) {
    while (int64_t(p) >= g.relation_offset(r + 1)) ++r;
    out[size_t(ids[p])] = {src[p], dst[p], r};
  }
  return out;
}

int64_t relation_edges(const Graph& g, int64_t r) { return g.relation_offset(r + 1) - g.relation_offset(r); }

// The mean feature row over each node's neighbours through `pairs` (u's row added to v), [N, F].
std::vector<double> neighbour_means(const std::vector<std::array<int64_t, 2>>& pairs,
                                    const std::vector<double>& x, int64_t n, int64_t f) {
  std::vector<double> sum(size_t(n * f), 0.0), count(size_t(n), 0.0);
  for (const auto& [u, v] : pairs) {
    for (int64_t j = 0; j < f; ++j) sum[size_t(v * f + j)] += x[size_t(u * f + j)];
    count[size_t(v)] += 1;
  }
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < f; ++j) sum[size_t(i * f + j)] /= std::max(count[size_t(i)], 1.0);
  return sum;
}

// Accuracy on the odd nodes of `nodes` of a Gaussian classifier fitted on the even ones: each view
// ([N, f] rows) has per-class means and one variance (pooled over classes and dimensions), and a
// node goes to the class nearest over all views, each view's squared distance over its variance.
double view_accuracy(const std::vector<int64_t>& nodes, const std::vector<int64_t>& labels, int64_t k,
                     const std::vector<const std::vector<double>*>& views, int64_t f) {
  const size_t nv = views.size();
  std::vector<double> mean(nv * size_t(k * f), 0.0), var(nv, 0.0), count(size_t(k), 0.0);
  for (size_t i = 0; i < nodes.size(); i += 2) {
    const int64_t v = nodes[i], c = labels[size_t(v)];
    count[size_t(c)] += 1;
    for (size_t w = 0; w < nv; ++w)
      for (int64_t j = 0; j < f; ++j)
        mean[w * size_t(k * f) + size_t(c * f + j)] += (*views[w])[size_t(v * f + j)];
  }
  for (size_t w = 0; w < nv; ++w)
    for (int64_t c = 0; c < k; ++c)
      for (int64_t j = 0; j < f; ++j)
        mean[w * size_t(k * f) + size_t(c * f + j)] /= std::max(count[size_t(c)], 1.0);
  // Squared distance of node v's view w to class c's mean.
  auto distance = [&](size_t w, int64_t v, int64_t c) {
    double d = 0;
    for (int64_t j = 0; j < f; ++j)
      d += std::pow((*views[w])[size_t(v * f + j)] - mean[w * size_t(k * f) + size_t(c * f + j)], 2);
    return d;
  };
  for (size_t i = 0; i < nodes.size(); i += 2)
    for (size_t w = 0; w < nv; ++w) var[w] += distance(w, nodes[i], labels[size_t(nodes[i])]);
  int64_t right = 0, tried = 0;
  for (size_t i = 1; i < nodes.size(); i += 2, ++tried) {
    const int64_t v = nodes[i];
    int64_t best = -1;
    double best_d = std::numeric_limits<double>::infinity();
    for (int64_t c = 0; c < k; ++c) {
      double d = 0;
      for (size_t w = 0; w < nv; ++w) d += distance(w, v, c) / std::max(var[w], 1e-30);
      if (d < best_d) best_d = d, best = c;
    }
    right += best == labels[size_t(v)] ? 1 : 0;
  }
  return double(right) / double(tried);
}

}  // namespace

TEST(TypedRmat, IsReproducibleAndIndependentOfThreadCount) {
  const TypedRmatOptions o{.total_edges = 30000, .feature_dim = 8, .seed = 3};
  GraphDataset one = with_threads(1, [&] { return generate_typed_rmat(o); });
  GraphDataset two = with_threads(2, [&] { return generate_typed_rmat(o); });
  EXPECT_EQ(input_edges(one.graph), input_edges(two.graph));
  EXPECT_EQ(one.labels.to_vector<int64_t>(), two.labels.to_vector<int64_t>());
  EXPECT_EQ(one.features.to_vector<float>(), two.features.to_vector<float>());
  EXPECT_EQ(one.node_properties.at("class").to_vector<int64_t>(),
            two.node_properties.at("class").to_vector<int64_t>());
  TypedRmatOptions other = o;
  other.seed = 4;
  EXPECT_NE(input_edges(one.graph), input_edges(generate_typed_rmat(other).graph));
}

TEST(TypedRmat, ScalesMagsCountsToTotalEdgesWithIdsInTheirTypes) {
  const TypedRmatOptions o{.total_edges = 50000};
  GraphDataset data = generate_typed_rmat(o);
  const Graph& g = data.graph;
  EXPECT_EQ(data.name, "typed_rmat(edges=50000)");
  EXPECT_EQ(g.node_types(), (std::vector<std::string>{"paper", "author", "institution", "field_of_study"}));
  // mag's 21,111,007 edges scaled to 50,000: each count by the same factor, edges summing exactly.
  const double scale = 50000.0 / 21111007.0;
  for (int64_t t = 0; t < g.num_node_types(); ++t)
    EXPECT_EQ(g.nodes_of_type(t), std::llround(double(o.node_types[size_t(t)].second) * scale));
  ASSERT_EQ(g.num_relations(), 4);
  EXPECT_EQ(g.num_edges(), 50000);
  for (int64_t r = 0; r < 4; ++r) {
    const TypedRmatRelation& spec = o.relations[size_t(r)];
    EXPECT_EQ(g.relations()[size_t(r)].name, spec.name);
    EXPECT_NEAR(double(relation_edges(g, r)), double(spec.num_edges) * scale, 1.0);
  }
  const std::vector<Edge> edges = input_edges(g);
  int64_t first = 0;
  for (int64_t r = 0; r < 4; ++r) {
    const Relation& rel = g.relations()[size_t(r)];
    for (int64_t e = first; e < first + relation_edges(g, r); ++e) {
      const Edge& edge = edges[size_t(e)];
      ASSERT_EQ(edge.rel, r) << "relation r's edges follow relation r - 1's in input order";
      ASSERT_GE(edge.src, g.type_offset(rel.src_type));
      ASSERT_LT(edge.src, g.type_offset(rel.src_type + 1));
      ASSERT_GE(edge.dst, g.type_offset(rel.dst_type));
      ASSERT_LT(edge.dst, g.type_offset(rel.dst_type + 1));
    }
    first += relation_edges(g, r);
  }

  // total_edges 0: the counts as given.
  GraphDataset exact =
      generate_typed_rmat({.node_types = {{"user", 50}, {"item", 7}},
                           .relations = {{"user", "rates", "item", 300},
                                         {"user", "follows", "user", 120, 0.25, 0.25, 0.25, 0.25}},
                           .total_edges = 0,
                           .label_type = "user",
                           .num_classes = 3});
  EXPECT_EQ(exact.graph.nodes_of_type(0), 50);
  EXPECT_EQ(exact.graph.nodes_of_type(1), 7);
  EXPECT_EQ(relation_edges(exact.graph, 0), 300);
  EXPECT_EQ(relation_edges(exact.graph, 1), 120);
}

TEST(TypedRmat, ReverseRelationsAreWhatWithReverseRelationsBuilds) {
  TypedRmatOptions o{.total_edges = 20000, .feature_dim = 0, .seed = 5};
  GraphDataset plain = generate_typed_rmat(o);
  o.reverse_relations = true;
  GraphDataset both = generate_typed_rmat(o);
  const Graph expected = plain.graph.with_reverse_relations();
  EXPECT_EQ(both.graph.num_edges(), 40000);
  EXPECT_EQ(both.graph.relations(), expected.relations());
  EXPECT_EQ(both.graph.relations()[7], (Relation{3, "rev_has_topic", 0}));
  EXPECT_EQ(input_edges(both.graph), input_edges(expected));
  EXPECT_EQ(both.name, plain.name);
}

TEST(TypedRmat, LabelsAndFeaturesAreOnTheLabelTypeAndClassesBalanced) {
  const TypedRmatOptions o{.total_edges = 100000, .num_classes = 7, .feature_dim = 4};
  GraphDataset data = generate_typed_rmat(o);
  const Graph& g = data.graph;
  EXPECT_EQ(data.num_classes, 7);
  const std::vector<int64_t> labels = data.labels.to_vector<int64_t>(),
                             classes = data.node_properties.at("class").to_vector<int64_t>();
  const std::vector<float> x = data.features.to_vector<float>();
  ASSERT_EQ(data.features.shape(), (Shape{g.num_nodes(), 4}));
  for (int64_t t = 0; t < g.num_node_types(); ++t) {
    std::vector<int64_t> count(7, 0);
    for (int64_t v = g.type_offset(t); v < g.type_offset(t + 1); ++v) {
      ASSERT_TRUE(classes[size_t(v)] >= 0 && classes[size_t(v)] < 7);
      ++count[size_t(classes[size_t(v)])];
      const bool labelled = t == 0;  // paper
      ASSERT_EQ(labels[size_t(v)], labelled ? classes[size_t(v)] : -1);
      const bool zero_row =
          std::all_of(x.begin() + v * 4, x.begin() + v * 4 + 4, [](float z) { return z == 0; });
      ASSERT_EQ(zero_row, !labelled);
    }
    // Every full block of 7 positions holds each class once.
    EXPECT_LE(*std::max_element(count.begin(), count.end()) - *std::min_element(count.begin(), count.end()),
              1)
        << g.node_types()[size_t(t)];
  }
}

TEST(TypedRmat, EdgesJoinSameClassNodesAsOftenAsHomophilySaysAndKeepTheirSkew) {
  for (double h : {0.0, 0.5}) {
    SCOPED_TRACE(h);
    GraphDataset data =
        generate_typed_rmat({.total_edges = 200000, .homophily = h, .feature_dim = 0, .seed = 2});
    const Graph& g = data.graph;
    const std::vector<int64_t> classes = data.node_properties.at("class").to_vector<int64_t>();
    const std::vector<Edge> edges = input_edges(g);
    std::vector<int64_t> same(4, 0), in_degree(size_t(g.num_nodes()), 0);
    for (const Edge& e : edges) {
      same[size_t(e.rel)] += classes[size_t(e.src)] == classes[size_t(e.dst)] ? 1 : 0;
      if (e.rel == 3) ++in_degree[size_t(e.dst)];  // has_topic: fields of study
    }
    for (int64_t r = 0; r < 4; ++r)
      EXPECT_NEAR(double(same[size_t(r)]) / double(relation_edges(g, r)), h + (1 - h) / 16, 0.02)
          << g.relations()[size_t(r)].name;
    const int64_t fields = g.nodes_of_type(3);
    const int64_t most = *std::max_element(in_degree.begin() + g.type_offset(3), in_degree.end());
    EXPECT_GT(double(most), 5.0 * double(relation_edges(g, 3)) / double(fields));
  }
}

// What a 2-layer relational GNN sees of a paper, without training: its features, its citations'
// mean features, and the mean over its authors (and over its fields) of their papers' mean
// features. A Gaussian classifier on those views beats the features alone, and chance, by far
// (with the default homophily 0.3 and 16 classes: about 0.78 against 0.20 and 0.06).
TEST(TypedRmat, PaperLabelsAreLearnableFromFeaturesAndRelations) {
  GraphDataset data = generate_typed_rmat({.total_edges = 200000, .seed = 11});
  const Graph& g = data.graph;
  const int64_t n = g.num_nodes(), f = data.features.size(1), k = data.num_classes;
  const std::vector<float> xf = data.features.to_vector<float>();
  const std::vector<double> x(xf.begin(), xf.end());
  const std::vector<int64_t> labels = data.labels.to_vector<int64_t>();
  std::vector<std::array<int64_t, 2>> cites, writes, writes_back, topic, topic_back;
  for (const Edge& e : input_edges(g)) {
    const std::string& name = g.relations()[size_t(e.rel)].name;
    if (name == "cites") cites.push_back({e.src, e.dst}), cites.push_back({e.dst, e.src});
    if (name == "writes") writes.push_back({e.dst, e.src}), writes_back.push_back({e.src, e.dst});
    if (name == "has_topic") topic.push_back({e.src, e.dst}), topic_back.push_back({e.dst, e.src});
  }
  const std::vector<double> cited = neighbour_means(cites, x, n, f);
  const std::vector<double> by_author = neighbour_means(writes_back, neighbour_means(writes, x, n, f), n, f);
  const std::vector<double> by_field = neighbour_means(topic_back, neighbour_means(topic, x, n, f), n, f);
  std::vector<int64_t> papers(size_t(g.nodes_of_type(0)));
  for (size_t i = 0; i < papers.size(); ++i) papers[i] = g.type_offset(0) + int64_t(i);

  const double alone = view_accuracy(papers, labels, k, {&x}, f);
  const double relational = view_accuracy(papers, labels, k, {&x, &cited, &by_author, &by_field}, f);
  EXPECT_GT(alone, 2.0 / double(k));
  EXPECT_GT(relational, alone + 0.3);
  EXPECT_GT(relational, 0.6);
}

TEST(TypedRmat, RejectsBadOptions) {
  EXPECT_THROW(generate_typed_rmat({.node_types = {}}), ValueError);
  EXPECT_THROW(generate_typed_rmat({.node_types = {{"a", 5}, {"a", 5}}, .label_type = "a"}), ValueError);
  EXPECT_THROW(generate_typed_rmat({.node_types = {{"a", 0}}, .label_type = "a"}), ValueError);
  EXPECT_THROW(generate_typed_rmat({.relations = {{"paper", "cites", "venue", 10}}}), ValueError);
  EXPECT_THROW(generate_typed_rmat({.relations = {{"paper", "cites", "paper", 10, 0.6, 0.2, 0.2, 0.2}}}),
               ValueError);
  EXPECT_THROW(generate_typed_rmat({.relations = {{"paper", "cites", "paper", -1}}}), ValueError);
  EXPECT_THROW(generate_typed_rmat({.relations = {{"paper", "cites", "paper", 0}}}),
               ValueError);  // 0 to scale
  EXPECT_THROW(generate_typed_rmat({.total_edges = -1}), ValueError);
  EXPECT_THROW(generate_typed_rmat({.total_edges = int64_t(1) << 35}), ValueError);
  EXPECT_THROW(generate_typed_rmat({.label_type = "venue"}), ValueError);
  EXPECT_THROW(generate_typed_rmat({.num_classes = 0}), ValueError);
  EXPECT_THROW(generate_typed_rmat({.homophily = 1.5}), ValueError);
  EXPECT_THROW(generate_typed_rmat({.feature_dim = -1}), ValueError);
}
