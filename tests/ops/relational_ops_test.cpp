// segment_matmul and the graph's source/destination pairs beyond the conformance rows: the same
// bits for any thread count, errors that name the bad input, and the pair structures themselves.
#include "strata/ops/relational_ops.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "strata/autograd/engine.h"
#include "strata/ops.h"
#include "strata/ops/graph.h"
#include "strata/ops/graph_ops.h"
#include "support/omp_threads.h"
#include "support/tensor_compare.h"

namespace strata {
namespace {

using strata::testing::element_bits;

Tensor random_tensor(const Shape& s, uint64_t seed) {
  Generator g(seed);
  GeneratorGuard guard(g);
  return ops::randn(s);
}

Tensor random_index(int64_t n, int64_t hi, uint64_t seed) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (auto& x : v) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    x = int64_t((seed >> 33) % uint64_t(hi));
  }
  return ops::from_vector(v, {n});
}

TEST(SegmentMatmul, BitsIndependentOfThreadCount) {
  // 9000 rows in 3 skewed segments (several 128-row tiles and 32-tile waves), scattered to 50 rows.
  const std::vector<int64_t> offsets{0, 7000, 7010, 9000};
  const Tensor gather = random_index(9000, 300, 1), scatter = random_index(9000, 50, 2);
  std::vector<std::vector<uint64_t>> outs, gxs, gws, gss;
  for (int threads : {1, 2}) {
    testing::with_threads(threads, [&] {
      Tensor x = random_tensor({300, 24}, 3).set_requires_grad(true);
      Tensor w = random_tensor({3, 24, 40}, 4).set_requires_grad(true);
      Tensor s = random_tensor({9000}, 5).set_requires_grad(true);
      Tensor y = ops::segment_matmul(x, offsets, w,
                                     {.gather = gather, .scatter = scatter, .scale = s, .num_rows = 50});
      const std::vector<Tensor> g =
          autograd::grad({ops::sum(ops::mul(y, random_tensor({50, 40}, 6)))}, {x, w, s});
      outs.push_back(element_bits(y));
      gxs.push_back(element_bits(g[0]));
      gws.push_back(element_bits(g[1]));
      gss.push_back(element_bits(g[2]));
      return 0;
    });
  }
  EXPECT_EQ(outs[0], outs[1]);
  EXPECT_EQ(gxs[0], gxs[1]);
  EXPECT_EQ(gws[0], gws[1]);
  EXPECT_EQ(gss[0], gss[1]);
}

TEST(SegmentMatmul, BadInputsNameWhatIsWrong) {
  const Tensor x = random_tensor({4, 3}, 1), w = random_tensor({2, 3, 5}, 2);
  auto message = [](auto f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const Tensor bad = ops::from_vector(std::vector<int64_t>{0, 1, 4, 2}, {4});
  EXPECT_THROW(ops::segment_matmul(x, {0, 2, 4}, w, {.gather = bad}), IndexError);
  EXPECT_NE(message([&] {
              ops::segment_matmul(x, {0, 2, 4}, w, {.gather = bad});
            }).find("gather[2] = 4"),
            std::string::npos);
  EXPECT_THROW(ops::segment_matmul(x, {1, 2, 4}, w), ValueError);
  EXPECT_THROW(ops::segment_matmul(x, {0, 3, 2}, w), ValueError);
  EXPECT_THROW(ops::segment_matmul(x, {0, 4}, w), ShapeError);  // one offset pair, two matrices
  EXPECT_THROW(ops::segment_matmul(x, {0, 2, 4}, w,
                                   {.scatter = ops::from_vector(std::vector<int64_t>{0, 0, 1, 1}, {4})}),
               ValueError);                                        // no num_rows
  EXPECT_THROW(ops::segment_matmul(x, {0, 2, 5}, w), ShapeError);  // 5 rows wanted, x has 4
  EXPECT_THROW(ops::segment_matmul(x, {0, 2, 4}, random_tensor({2, 4, 5}, 3)), ShapeError);
}

// 2 node types, 3 relations; sources 0 and 2 each send two edges of one relation.
Graph typed_graph() {
  return Graph::from_typed_edges({"a", "b"}, {3, 2}, {{0, "ab", 1}, {1, "ba", 0}, {0, "aa", 0}},
                                 ops::from_vector(std::vector<int64_t>{0, 0, 2, 3, 4, 2, 2, 1}, {8}),
                                 ops::from_vector(std::vector<int64_t>{3, 4, 3, 0, 0, 0, 1, 1}, {8}),
                                 ops::from_vector(std::vector<int64_t>{0, 0, 0, 1, 1, 2, 2, 2}, {8}));
}

TEST(GraphPairs, SourceAndDestinationPairsPerRelation) {
  const Graph g = typed_graph();
  const NodeRelationPairs s = g.source_pairs();
  EXPECT_EQ(s.offsets, (std::vector<int64_t>{0, 2, 4, 6}));
  EXPECT_EQ(s.nodes.to_vector<int64_t>(), (std::vector<int64_t>{0, 2, 3, 4, 1, 2}));
  EXPECT_EQ(s.edge_offsets.to_vector<int64_t>(), (std::vector<int64_t>{0, 2, 3, 4, 5, 6, 8}));
  // Each CSC edge's pair has the edge's source.
  const std::vector<int64_t> src = g.src().to_vector<int64_t>(), ep = s.edge_pair.to_vector<int64_t>();
  const std::vector<int64_t> nodes = s.nodes.to_vector<int64_t>();
  for (size_t e = 0; e < src.size(); ++e) EXPECT_EQ(nodes[size_t(ep[e])], src[e]) << "edge " << e;
  const NodeRelationPairs d = g.destination_pairs();
  EXPECT_EQ(d.offsets, (std::vector<int64_t>{0, 2, 3, 5}));
  EXPECT_EQ(d.nodes.to_vector<int64_t>(), (std::vector<int64_t>{3, 4, 0, 0, 1}));
  // Moving the graph keeps the pairs; the meta device gets their shapes.
  const Graph m = g.to(kMeta);
  EXPECT_EQ(m.source_pairs().size(), 6);
  EXPECT_EQ(m.source_pairs().nodes.shape(), (Shape{6}));
  EXPECT_EQ(m.destination_pairs().edge_offsets.shape(), (Shape{6}));
}

TEST(GraphPairs, CompactRowsGiveTheEdgeWiseSum) {
  // gspmm_pairs over rows computed once per (source, relation) equals gspmm_edges over per-edge copies.
  const Graph g = typed_graph();
  const NodeRelationPairs s = g.source_pairs();
  const Tensor rows = random_tensor({s.size(), 3}, 7), w = random_tensor({8}, 8);
  const Tensor per_edge = ops::gather_rows(rows, s.edge_pair);
  EXPECT_EQ(element_bits(ops::gspmm_pairs(g, rows, w)), element_bits(ops::gspmm_edges(g, per_edge, w)));
}

}  // namespace
}  // namespace strata
