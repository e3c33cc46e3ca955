// g-SpMM and g-SDDMM: against plain loops in double, finite-difference gradients in f64 (x, edge
// weights, both sides of the dot, and the mean), typed graphs aggregating over every relation, the
// same bits for one and two threads, and sim equal to the CPU.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>

#include "strata/strata.h"
#include "support/device_present.h"
#include "support/tensor_compare.h"

using namespace strata;

namespace {

Tensor ids(std::vector<int64_t> v) { return ops::from_vector(v, {int64_t(v.size())}); }

// 6 nodes: duplicates (0->1 twice), a self loop (3->3), node 5 isolated, node 4 only a source.
// E random edges over N nodes whose destinations fall in the first `busy` nodes (hub rows), from
// a 64-bit LCG seeded with `seed`; the destination takes the state's bits from `dst_shift` up.
Graph skewed_graph(int64_t N, int64_t E, int64_t busy, uint64_t seed, int dst_shift) {
  std::vector<int64_t> s(static_cast<size_t>(E)), d(static_cast<size_t>(E));
  uint64_t st = seed;
  for (size_t e = 0; e < size_t(E); ++e) {
    st = st * 6364136223846793005ull + 1442695040888963407ull;
    s[e] = int64_t((st >> 33) % uint64_t(N));
    d[e] = int64_t((st >> dst_shift) % uint64_t(busy));
  }
  return Graph::from_edges(N, ids(s), ids(d));
}

Graph graph() { return Graph::from_edges(6, ids({0, 0, 2, 3, 4, 1, 4, 2}), ids({1, 1, 1, 3, 0, 2, 2, 0})); }

Tensor values(Shape s, uint64_t seed, DType dt = DType::f64) {
  manual_seed(seed);
  return ops::randn(s, TensorOptions(dt));
}

// Reference: out[v] = sum over CSC edges with dst v of w[e] x[src e].
std::vector<double> spmm_ref(const Graph& g, const std::vector<double>& x, int64_t F,
                             const std::vector<double>& w) {
  const std::vector<int64_t> s = g.src().to_vector<int64_t>(), d = g.dst().to_vector<int64_t>();
  std::vector<double> out(size_t(g.num_nodes() * F), 0.0);
  for (size_t e = 0; e < s.size(); ++e)
    for (int64_t f = 0; f < F; ++f)
      out[size_t(d[e] * F + f)] += (w.empty() ? 1.0 : w[e]) * x[size_t(s[e] * F + f)];
  return out;
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

// Central differences of sum(out * seed) with respect to every element of `leaf`.
void check_gradient(const std::function<Tensor()>& f, Tensor& leaf) {
  Tensor out = f();
  Tensor seed = values(out.shape(), 99);
  Tensor analytic = autograd::grad({out}, {leaf}, {seed}, false, true)[0];
  ASSERT_TRUE(analytic.defined());
  std::vector<double> a = analytic.to_double_vector();
  double* p = leaf.data<double>();
  const std::vector<double> numeric =
      strata::testing::central_differences(size_t(leaf.numel()), 1e-6, [&](size_t e, double d) {
        NoGradGuard ng;
        const double keep = p[e];
        p[e] = keep + d;
        const double loss = ops::sum(ops::mul(f(), seed)).item();
        p[e] = keep;
        return loss;
      });
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_NEAR(a[i], numeric[i], 1e-6 * (1 + std::fabs(a[i]))) << "element " << i;
}

}  // namespace

TEST(GraphOps, SpmmSumAndMeanMatchPlainLoops) {
  Graph g = graph();
  Tensor x = values({6, 5}, 1), w = values({g.num_edges()}, 2);
  const std::vector<double> xv = x.to_double_vector(), wv = w.to_double_vector();
  expect_near(ops::gspmm(g, x, w).to_double_vector(), spmm_ref(g, xv, 5, wv), 1e-12);
  const std::vector<double> sum = spmm_ref(g, xv, 5, {});
  expect_near(ops::gspmm(g, x).to_double_vector(), sum, 1e-12);
  const std::vector<double> deg{2, 3, 2, 1, 0, 0};
  std::vector<double> mean = sum;
  for (size_t i = 0; i < mean.size(); ++i) mean[i] /= std::max(1.0, deg[i / 5]);
  expect_near(ops::gspmm(g, x, Tensor(), "mean").to_double_vector(), mean, 1e-12);
  EXPECT_THROW(ops::gspmm(g, x, Tensor(), "median"), ValueError);
  EXPECT_THROW(ops::gspmm(g, values({5, 5}, 3)), ShapeError);
}

TEST(GraphOps, SddmmDotMatchesPlainLoops) {
  Graph g = graph();
  Tensor a = values({6, 4}, 4), b = values({6, 4}, 5);
  const std::vector<int64_t> s = g.src().to_vector<int64_t>(), d = g.dst().to_vector<int64_t>();
  const std::vector<double> av = a.to_double_vector(), bv = b.to_double_vector();
  std::vector<double> want;
  for (size_t e = 0; e < s.size(); ++e) {
    double dot = 0;
    for (int64_t f = 0; f < 4; ++f) dot += av[size_t(s[e] * 4 + f)] * bv[size_t(d[e] * 4 + f)];
    want.push_back(dot);
  }
  expect_near(ops::gsddmm_dot(g, a, b).to_double_vector(), want, 1e-12);
}

TEST(GraphOps, GradientsMatchFiniteDifferences) {
  Graph g = graph();
  Tensor x = values({6, 3}, 6).set_requires_grad(true),
         w = values({g.num_edges()}, 7).set_requires_grad(true);
  check_gradient([&] { return ops::gspmm(g, x, w); }, x);
  check_gradient([&] { return ops::gspmm(g, x, w); }, w);
  check_gradient([&] { return ops::gspmm(g, x, Tensor(), "mean"); }, x);
  Tensor a = values({6, 3}, 8).set_requires_grad(true), b = values({6, 3}, 9).set_requires_grad(true);
  check_gradient([&] { return ops::gsddmm_dot(g, a, b); }, a);
  check_gradient([&] { return ops::gsddmm_dot(g, a, b); }, b);
  // Through two layers, as a GNN stacks them: gradients flow through the transposed kernels.
  check_gradient([&] { return ops::gspmm(g, ops::tanh(ops::gspmm(g, x, w)), w); }, w);
}

TEST(GraphOps, TypedGraphsAggregateOverEveryRelation) {
  std::vector<Relation> rels{{0, "writes", 1}, {1, "cites", 1}};
  Tensor src = ids({0, 3, 1, 4, 2, 0}), dst = ids({3, 4, 5, 5, 3, 6}), rel = ids({0, 1, 0, 1, 0, 0});
  Graph typed = Graph::from_typed_edges({"author", "paper"}, {3, 4}, rels, src, dst, rel);
  Graph flat = Graph::from_edges(7, src, dst);
  Tensor x = values({7, 3}, 10);
  expect_near(ops::gspmm(typed, x).to_double_vector(), ops::gspmm(flat, x).to_double_vector(), 1e-12);
  Tensor xt = x.clone().set_requires_grad(true), wt = values({6}, 11).set_requires_grad(true);
  check_gradient([&] { return ops::gspmm(typed, xt, wt); }, xt);
  check_gradient([&] { return ops::gspmm(typed, xt, wt); }, wt);
}

TEST(GraphOps, SameBitsForAnyThreadCountAndOnSim) {
  // A graph big enough for the kernels to run in parallel.
  const int64_t N = 3000, E = 40000, F = 16;
  Graph g = skewed_graph(N, E, N / 10, 12345, 13);  // skewed: 300 busy destinations
  Tensor x = values({N, F}, 12, DType::f32).set_requires_grad(true), w = values({E}, 13, DType::f32);
  auto run = [&](int threads, Device dev) {
    omp_set_num_threads(threads);
    Graph gd = g.to(dev);
    Tensor xd = x.detach().to(dev).set_requires_grad(true);
    Tensor y = ops::gspmm(gd, xd, w.to(dev));
    Tensor gx = autograd::grad({ops::sum(ops::mul(y, y))}, {xd})[0];
    omp_set_num_threads(2);
    return std::make_pair(y.to_double_vector(), gx.to_double_vector());
  };
  const auto one = run(1, kCPU), two = run(2, kCPU), on_sim = run(2, sim(0));
  EXPECT_EQ(one.first, two.first);
  EXPECT_EQ(one.second, two.second);
  EXPECT_EQ(on_sim.first, two.first);
  EXPECT_EQ(on_sim.second, two.second);
}

TEST(GraphOps, EdgeSoftmaxNormalizesEachDestinationsInEdges) {
  Graph g = graph();
  Tensor s = values({g.num_edges(), 3}, 14);
  const std::vector<double> y = ops::edge_softmax(g, s).to_double_vector(), sv = s.to_double_vector();
  const std::vector<int64_t> d = g.dst().to_vector<int64_t>();
  for (int64_t h = 0; h < 3; ++h)
    for (int64_t v = 0; v < g.num_nodes(); ++v) {
      double denom = 0, total = 0;
      for (size_t e = 0; e < d.size(); ++e)
        if (d[e] == v) denom += std::exp(sv[e * 3 + size_t(h)]);
      for (size_t e = 0; e < d.size(); ++e)
        if (d[e] == v) {
          EXPECT_NEAR(y[e * 3 + size_t(h)], std::exp(sv[e * 3 + size_t(h)]) / denom, 1e-12);
          total += y[e * 3 + size_t(h)];
        }
      if (denom > 0) EXPECT_NEAR(total, 1.0, 1e-12);
    }
  Tensor leaf = s.clone().set_requires_grad(true);
  check_gradient([&] { return ops::edge_softmax(g, leaf); }, leaf);
  Tensor one = values({g.num_edges()}, 15).set_requires_grad(true);  // one head, [E]
  check_gradient([&] { return ops::edge_softmax(g, one); }, one);
  // GAT's shape: attention from scores, then weighted aggregation.
  Tensor x = values({6, 4}, 16);
  check_gradient([&] { return ops::gspmm(g, x, ops::edge_softmax(g, one)); }, one);
  EXPECT_THROW(ops::edge_softmax(g, values({3}, 17)), ShapeError);
}

// The CUDA kernels against the CPU's (skips without a GPU; tools/gpu_check.sh allows no skip).
TEST(GraphOpsCuda, KernelsMatchTheCpu) {
  SKIP_WITHOUT_CUDA_DEVICE();
  Graph g = graph();
  Graph gc = g.to(cuda(0));
  Tensor x = values({6, 5}, 18, DType::f32).set_requires_grad(true),
         w = values({g.num_edges()}, 19, DType::f32);
  Tensor s = values({g.num_edges(), 2}, 20, DType::f32);
  Tensor xc = x.detach().to(cuda(0)).set_requires_grad(true);
  Tensor y = ops::gspmm(g, x, w, "mean"), yc = ops::gspmm(gc, xc, w.to(cuda(0)), "mean");
  expect_near(yc.to_double_vector(), y.to_double_vector(), 1e-5);
  expect_near(autograd::grad({ops::sum(ops::mul(yc, yc))}, {xc})[0].to_double_vector(),
              autograd::grad({ops::sum(ops::mul(y, y))}, {x})[0].to_double_vector(), 1e-5);
  expect_near(ops::gsddmm_dot(gc, xc.detach(), xc.detach()).to_double_vector(),
              ops::gsddmm_dot(g, x.detach(), x.detach()).to_double_vector(), 1e-5);
  expect_near(ops::edge_softmax(gc, s.to(cuda(0))).to_double_vector(),
              ops::edge_softmax(g, s).to_double_vector(), 1e-6);
}

TEST(GraphOps, MaxAggregationRecordsTheWinningEdgeAndIsThreadCountIndependent) {
  const int64_t N = 2000, E = 30000, F = 8;
  Graph g = skewed_graph(N, E, N / 8, 777, 17);
  // Few distinct values: many ties, which the first edge in CSC order must win every time.
  std::vector<float> xv(size_t(N * F));
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = float((i * 7919) % 5) - 2.0f;
  Tensor x = ops::from_vector(xv, {N, F}).set_requires_grad(true);
  auto run = [&](int threads) {
    omp_set_num_threads(threads);
    Tensor y = ops::gspmm(g, x, Tensor(), "max");
    Tensor gx = autograd::grad({ops::sum(ops::mul(y, y))}, {x})[0];
    omp_set_num_threads(2);
    return std::make_pair(y.to_double_vector(), gx.to_double_vector());
  };
  const auto one = run(1), two = run(2);
  EXPECT_EQ(one.first, two.first);
  EXPECT_EQ(one.second, two.second);
  // Every destination's gradient lands on exactly one source per feature: the column sums of the
  // gradient equal those of 2 y over the nodes with in-edges.
  const std::vector<double> y = one.first;
  for (int64_t f = 0; f < F; ++f) {
    double want = 0, got = 0;
    for (int64_t v = 0; v < N; ++v) want += 2 * y[size_t(v * F + f)], got += one.second[size_t(v * F + f)];
    EXPECT_NEAR(got, want, 1e-3);
  }
  EXPECT_THROW(ops::gspmm(g, x, values({E}, 22, DType::f32), "max"), ValueError);
}

TEST(GraphOps, TypedGraphsTakeTheMaximumOverEveryRelation) {
  std::vector<Relation> rels{{0, "writes", 1}, {1, "cites", 1}};
  Tensor src = ids({0, 3, 1, 4, 2, 0}), dst = ids({3, 4, 5, 5, 3, 6}), rel = ids({0, 1, 0, 1, 0, 0});
  Graph typed = Graph::from_typed_edges({"author", "paper"}, {3, 4}, rels, src, dst, rel);
  Graph flat = Graph::from_edges(7, src, dst);
  Tensor x = values({7, 3}, 23).set_requires_grad(true);
  Tensor yt = ops::gspmm(typed, x, Tensor(), "max"), yf = ops::gspmm(flat, x, Tensor(), "max");
  expect_near(yt.to_double_vector(), yf.to_double_vector(), 0);
  expect_near(autograd::grad({ops::sum(yt)}, {x})[0].to_double_vector(),
              autograd::grad({ops::sum(yf)}, {x})[0].to_double_vector(), 0);
  check_gradient([&] { return ops::gspmm(typed, x, Tensor(), "min"); }, x);
}

TEST(GraphOps, HeadsWeighTheirOwnFeatureBlocks) {
  Graph g = graph();
  Tensor x = values({6, 2, 3}, 24).set_requires_grad(true),
         w = values({g.num_edges(), 2}, 25).set_requires_grad(true);
  // Head h of a [N, 2, 3] input with weights [E, 2] equals a one-head gspmm of its slice.
  Tensor y = ops::gspmm(g, x, w);
  for (int64_t h = 0; h < 2; ++h) {
    Tensor want = ops::gspmm(g, ops::contiguous(ops::select(x, 1, h)), ops::contiguous(ops::select(w, 1, h)));
    expect_near(ops::contiguous(ops::select(y, 1, h)).to_double_vector(), want.to_double_vector(), 1e-12);
  }
  check_gradient([&] { return ops::gspmm(g, x, w); }, w);
  check_gradient([&] { return ops::gsddmm(g, "dot", x, x, "u", "v"); }, x);
  EXPECT_THROW(ops::gspmm(g, values({6, 5}, 26), values({g.num_edges(), 2}, 27)), ShapeError);
  EXPECT_THROW(ops::gsddmm(g, "pow", x, x), ValueError);
  EXPECT_THROW(ops::gsddmm(g, "add", x, x, "u", "w"), ValueError);
}

TEST(SegmentOps, BadIndicesAndOffsetsNameWhatIsWrong) {
  Tensor x = values({4, 2}, 28);
  try {
    ops::gather_rows(x, ids({0, 7}));
    FAIL() << "no IndexError";
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("index[1] = 7 is outside [0, 4)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ops::scatter_reduce_rows(x, ids({0, 1, 2}), 3, "sum"), ShapeError);
  EXPECT_THROW(ops::scatter_reduce_rows(x, ids({0, 1, 2, 3}), 3, "sum"), IndexError);
  EXPECT_THROW(ops::scatter_reduce_rows(x, ids({0, 1, 2, 0}), 3, "prod"), ValueError);
  EXPECT_THROW(ops::segment_reduce(x, ids({0, 3, 2, 4}), "sum"), ValueError);
  EXPECT_THROW(ops::segment_reduce(x, ids({0, 2, 3}), "sum"), ValueError);
  // Off the CPU the index stays on the device and the backend checks it: the same errors.
  const Tensor xs = x.to(sim(0));
  try {
    ops::gather_rows(xs, ids({0, 7}).to(sim(0)));
    FAIL() << "no IndexError on the sim device";
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("gather_rows: "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("7"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ops::scatter_reduce_rows(xs, ids({0, 1, 2}).to(sim(0)), 3, "sum"), ShapeError);
  EXPECT_THROW(ops::scatter_reduce_rows(xs, ids({0, 1, 2, 3}).to(sim(0)), 3, "sum"), IndexError);
}
