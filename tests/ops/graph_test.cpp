// Graph storage: CSC and CSR orders and offsets on a small graph with duplicate edges, a self
// loop and an isolated node; typed graphs and their checks; self loops, reverse relations,
// degrees, PyG's symmetric normalisation, index dtypes and moving to a device.
#include "strata/ops/graph.h"

#include <gtest/gtest.h>

#include <cmath>

#include "strata/strata.h"
#include "support/error_of.h"

using namespace strata;

namespace {

Tensor ids(std::vector<int64_t> v) { return ops::from_vector(v, {int64_t(v.size())}); }
std::vector<int64_t> vec(const Tensor& t) { return t.to(kCPU).to_vector<int64_t>(); }

// 5 nodes; node 4 isolated; edge 5 duplicates edge 1; edge 3 is a self loop.
Graph small() { return Graph::from_edges(5, ids({0, 2, 3, 1, 1, 2}), ids({1, 1, 0, 1, 3, 1})); }

// The message of the strata::Error f() throws (a test failure when it throws none).
std::string error_of(const std::function<void()>& f) { return strata::testing::error_of<Error>(f); }

}  // namespace

TEST(Graph, CscIsSortedByDestinationThenSourceAndKeepsEdgeIds) {
  Graph g = small();
  EXPECT_EQ(g.num_nodes(), 5);
  EXPECT_EQ(g.num_edges(), 6);
  EXPECT_EQ(g.index_dtype(), DType::i32);
  EXPECT_EQ(vec(g.dst()), (std::vector<int64_t>{0, 1, 1, 1, 1, 3}));
  EXPECT_EQ(vec(g.src()), (std::vector<int64_t>{3, 0, 1, 2, 2, 1}));
  EXPECT_EQ(vec(g.edge_ids()), (std::vector<int64_t>{2, 0, 3, 1, 5, 4}));
  EXPECT_EQ(vec(g.in_offsets()), (std::vector<int64_t>{0, 1, 5, 5, 6, 6}));
  EXPECT_EQ(g.in_start(0), 0);
}

TEST(Graph, CsrIsTheTransposeAndPointsIntoTheCsc) {
  Graph g = small();
  const std::vector<int64_t> cs = vec(g.csr_src()), cd = vec(g.csr_dst()), ce = vec(g.csr_edges());
  EXPECT_EQ(cs, (std::vector<int64_t>{0, 1, 1, 2, 2, 3}));
  EXPECT_EQ(cd, (std::vector<int64_t>{1, 1, 3, 1, 1, 0}));
  EXPECT_EQ(vec(g.out_offsets()), (std::vector<int64_t>{0, 1, 3, 5, 6, 6}));
  const std::vector<int64_t> s = vec(g.src()), d = vec(g.dst()), eid = vec(g.edge_ids());
  for (size_t i = 0; i < cs.size(); ++i) {  // the CSR edge is the CSC edge it points at
    EXPECT_EQ(s[size_t(ce[i])], cs[i]);
    EXPECT_EQ(d[size_t(ce[i])], cd[i]);
  }
  std::vector<int64_t> seen(6, 0);  // a permutation: each CSC edge once
  for (int64_t e : ce) ++seen[size_t(e)];
  EXPECT_EQ(seen, std::vector<int64_t>(6, 1));
  (void)eid;
}

TEST(Graph, DegreesSelfLoopsAndSymmetricNorm) {
  Graph g = small();
  EXPECT_EQ(vec(g.in_degrees()), (std::vector<int64_t>{1, 4, 0, 1, 0}));
  EXPECT_EQ(vec(g.out_degrees()), (std::vector<int64_t>{1, 2, 2, 1, 0}));
  Graph l = g.add_self_loops();
  EXPECT_EQ(l.num_edges(), 11);
  EXPECT_EQ(vec(l.in_degrees()), (std::vector<int64_t>{2, 5, 1, 2, 1}));
  // The loops' ids continue after the input's; node 1 now has two loops (its own and the added one).
  const std::vector<int64_t> ls = vec(l.src()), ld = vec(l.dst()), lid = vec(l.edge_ids());
  int64_t loops_of_1 = 0;
  for (size_t i = 0; i < ls.size(); ++i) loops_of_1 += ls[i] == 1 && ld[i] == 1;
  EXPECT_EQ(loops_of_1, 2);
  EXPECT_EQ(*std::max_element(lid.begin(), lid.end()), 10);
  // gcn_norm: edge (u, v) gets deg(u)^-1/2 deg(v)^-1/2 over in-degrees, 0 for a degree of 0.
  const std::vector<double> w = l.symmetric_norm().to_double_vector();
  const std::vector<double> deg{2, 5, 1, 2, 1};
  for (size_t i = 0; i < w.size(); ++i)
    EXPECT_NEAR(w[i], 1.0 / std::sqrt(deg[size_t(ls[i])] * deg[size_t(ld[i])]), 1e-7) << "edge " << i;
  const std::vector<double> w0 = g.symmetric_norm().to_double_vector();  // node 2 has no in-edge
  const std::vector<int64_t> gs = vec(g.src());
  for (size_t i = 0; i < w0.size(); ++i)
    if (gs[i] == 2) EXPECT_EQ(w0[i], 0.0);
}

TEST(Graph, TypedGraphsKeepRelationsApartAndCheckTheirEnds) {
  // authors 0-2, papers 3-6; writes: author -> paper, cites: paper -> paper.
  std::vector<Relation> rels{{0, "writes", 1}, {1, "cites", 1}};
  Graph g = Graph::from_typed_edges({"author", "paper"}, {3, 4}, rels, ids({0, 3, 1, 4, 2, 0}),
                                    ids({3, 4, 5, 5, 3, 6}), ids({0, 1, 0, 1, 0, 0}));
  EXPECT_EQ(g.num_relations(), 2);
  EXPECT_EQ(g.relation_offset(1), 4);
  EXPECT_EQ(vec(g.dst()), (std::vector<int64_t>{3, 3, 5, 6, 4, 5}));
  // writes' in-offsets run over the 4 papers, then cites' over the 4 papers.
  EXPECT_EQ(g.in_start(1), 5);
  EXPECT_EQ(vec(g.in_offsets()), (std::vector<int64_t>{0, 2, 2, 3, 4, 4, 4, 5, 6, 6}));
  EXPECT_EQ(g.out_start(1), 4);  // writes' out-offsets run over the 3 authors
  Graph rev = g.with_reverse_relations();
  EXPECT_EQ(rev.num_relations(), 4);
  EXPECT_EQ(rev.relations()[2], (Relation{1, "rev_writes", 0}));
  EXPECT_EQ(rev.num_edges(), 12);
  EXPECT_EQ(vec(rev.dst()).back(), 4);  // the last rev_cites edge: 5 -> 4 reversed
  const std::string msg = error_of([&] {
    Graph::from_typed_edges({"author", "paper"}, {3, 4}, rels, ids({0, 5}), ids({3, 4}), ids({0, 0}));
  });
  EXPECT_NE(msg.find("edge 1 of relation 'writes' starts at node 5, not a 'author' node [0, 3)"),
            std::string::npos)
      << msg;
  EXPECT_EQ(g.add_self_loops().num_edges(), 6 + 4) << "loops only where a relation joins a type to itself";
}

TEST(Graph, BadEdgesAreErrorsNamingTheEdge) {
  const std::string msg = error_of([] { Graph::from_edges(3, ids({0, 1}), ids({2, 3})); });
  EXPECT_NE(msg.find("edge 1 (1 -> 3) names a node outside [0, 3)"), std::string::npos) << msg;
  EXPECT_THROW(Graph::from_edges(3, ids({0, 1}), ids({2})), ShapeError);
  EXPECT_THROW(Graph::from_edges(3, ops::zeros({2}), ids({0, 1})), TypeError);
}

TEST(Graph, IndexDtypeWidensPastInt32AndGraphsMoveToADevice) {
  EXPECT_EQ(Graph::index_dtype_for(int64_t(1) << 31, 10), DType::i64);
  EXPECT_EQ(Graph::index_dtype_for(10, int64_t(1) << 31), DType::i64);
  EXPECT_EQ(Graph::index_dtype_for((int64_t(1) << 31) - 1, 10), DType::i32);
  Graph g = small().to(sim(0));
  EXPECT_EQ(g.device(), sim(0));
  EXPECT_EQ(g.csr_edges().device(), sim(0));
  EXPECT_EQ(vec(g.edge_ids()), vec(small().edge_ids()));
  EXPECT_EQ(g.add_self_loops().device(), sim(0));
  EXPECT_EQ(g.symmetric_norm().device(), sim(0));
}

TEST(Graph, RemovingSelfLoopsKeepsTheOtherEdgesIds) {
  Graph g = small().remove_self_loops();
  EXPECT_EQ(g.num_edges(), 5);
  const std::vector<int64_t> s = vec(g.src()), d = vec(g.dst()), id = vec(g.edge_ids());
  for (size_t i = 0; i < s.size(); ++i) EXPECT_NE(s[i], d[i]);
  EXPECT_EQ(id, (std::vector<int64_t>{2, 0, 1, 5, 4}));
  Graph l = g.add_self_loops();  // PyG's add_remaining_self_loops: exactly one loop per node
  EXPECT_EQ(l.num_edges(), 10);
  const std::vector<int64_t> lid = vec(l.edge_ids());
  EXPECT_EQ(*std::max_element(lid.begin(), lid.end()), 10) << "the loops' ids continue after the largest (5)";
  EXPECT_EQ(vec(l.in_degrees()), (std::vector<int64_t>{2, 4, 1, 2, 1}));
}
