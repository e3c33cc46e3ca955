// sampler_bench: NeighborSampler and GraphBatchLoader throughput on an R-MAT graph (Chakrabarti,
// Zhan, Faloutsos, "R-MAT: A Recursive Model for Graph Mining", SDM 2004; a = 0.57, b = c = 0.19,
// node ids permuted so the hubs are spread out). The reference beside Strata is the textbook
// sampler: std::sample per destination with std::mt19937_64 and an std::unordered_map for the
// global -> local relabel; both build the same kind of blocks (Graph::from_edges), and the
// reference's edge counts are checked against Strata's before anything is timed.
//
//   strata_sampler_bench --nodes-log2 20 --edges 10000000 --batch 1024 --fanouts 15,10 --threads 2
//   (--rmat 0.25,0.25,0.25 for a uniform random graph)
//
// Fanouts are listed input layer first (DGL's order; PyG's num_neighbors is the reverse).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "host_info.h"
#include "strata/core/factory.h"
#include "strata/core/philox.h"
#include "strata/io/graphs/graph_loader.h"
#include "strata/io/graphs/neighbor_sampler.h"

using namespace strata;
using namespace strata::io;

namespace {

using bench::cpu_model;
using bench::now_s;

// 2^scale nodes, `m` edges: each edge descends `scale` levels of the adjacency matrix, picking a
// quadrant with probabilities (a, b, c, 1 - a - b - c) from one Philox word per level.
Graph rmat_graph(int scale, int64_t m, const std::vector<double>& abc, uint64_t seed) {
  const int64_t n = int64_t(1) << scale;
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937_64(seed));
  Tensor src = Tensor::empty({m}, DType::i64), dst = Tensor::empty({m}, DType::i64);
  int64_t *s = src.data<int64_t>(), *d = dst.data<int64_t>();
  const auto a = uint32_t(abc[0] * 4294967296.0), ab = uint32_t((abc[0] + abc[1]) * 4294967296.0),
             abc_ = uint32_t(std::min(abc[0] + abc[1] + abc[2], 0.999999999) * 4294967296.0);
  for (int64_t e = 0; e < m; ++e) {
    int64_t u = 0, v = 0;
    for (int level = 0; level < scale; ++level) {
      const uint32_t w = philox::word(seed, 0, uint64_t(e) * uint64_t(scale) + uint64_t(level));
      u = 2 * u + (w >= ab), v = 2 * v + ((w >= a && w < ab) || w >= abc_);
    }
    s[e] = perm[size_t(u)], d[e] = perm[size_t(v)];
  }
  return Graph::from_edges(n, src, dst);
}

// The textbook sampler: the blocks' edge count and node count per layer (what the check compares).
std::vector<std::pair<int64_t, int64_t>> reference_sample(const Graph& g, const std::vector<int64_t>& fanouts,
                                                          std::span<const int64_t> seeds, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int32_t* src = g.src().data<int32_t>();
  const int64_t* off = g.in_offsets().data<int64_t>();
  std::unordered_map<int64_t, int64_t> local;
  std::vector<int64_t> nodes(seeds.begin(), seeds.end()), picked;
  for (size_t i = 0; i < nodes.size(); ++i) local.emplace(nodes[i], int64_t(i));
  std::vector<std::pair<int64_t, int64_t>> sizes(fanouts.size());
  for (auto l = int64_t(fanouts.size()) - 1; l >= 0; --l) {
    const int64_t num_dst = int64_t(nodes.size());
    std::vector<int64_t> bs, bd;
    for (int64_t i = 0; i < num_dst; ++i) {
      const int64_t v = nodes[size_t(i)], k = fanouts[size_t(l)];
      picked.clear();
      std::vector<int64_t> all(size_t(off[v + 1] - off[v]));
      std::iota(all.begin(), all.end(), off[v]);
      std::sample(all.begin(), all.end(), std::back_inserter(picked), k < 0 ? all.size() : size_t(k), rng);
      for (int64_t p : picked) {
        auto [it, fresh] = local.emplace(src[p], int64_t(nodes.size()));
        if (fresh) nodes.push_back(src[p]);
        bs.push_back(it->second), bd.push_back(i);
      }
    }
    const auto E = int64_t(bs.size());
    Graph::from_edges(int64_t(nodes.size()), from_vector(bs, {E}), from_vector(bd, {E}));
    sizes[size_t(l)] = {E, int64_t(nodes.size())};
  }
  return sizes;
}

// Seeds per second of `threads` threads sampling batches t, t + threads, ... of `order`.
double sampled_seeds_per_second(const NeighborSampler& sampler, const std::vector<int64_t>& order,
                                int64_t batch, int64_t batches, int threads) {
  const double t0 = now_s();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int64_t i = t; i < batches; i += threads)
        sampler.sample(std::span<const int64_t>(order.data() + i * batch, size_t(batch)), 0, i);
    });
  for (std::thread& t : pool) t.join();
  return double(batches * batch) / (now_s() - t0);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"NeighborSampler / GraphBatchLoader throughput on an R-MAT graph"};
  int scale = 20, threads = 2;
  int64_t edges = 10'000'000, batch = 1024, batches = 200, features = 64;
  std::vector<int64_t> fanouts{15, 10};
  std::vector<double> abc{0.57, 0.19, 0.19};
  app.add_option("--nodes-log2", scale);
  app.add_option("--edges", edges);
  app.add_option("--batch", batch);
  app.add_option("--batches", batches, "batches timed per measurement");
  app.add_option("--fanouts", fanouts, "input layer first")->delimiter(',');
  app.add_option("--rmat", abc, "R-MAT's a,b,c (0.25,0.25,0.25: uniform)")->delimiter(',')->expected(3);
  app.add_option("--threads", threads, "sampling threads (and loader workers)");
  app.add_option("--features", features, "F of the loader's feature rows (f32)");
  CLI11_PARSE(app, argc, argv);

  double t0 = now_s();
  const Graph g = rmat_graph(scale, edges, abc, 42);
  std::printf(
      "graph: R-MAT (%.2f, %.2f, %.2f), %lld nodes, %lld edges, built in %.1f s; CPU: %s, %u hardware "
      "threads\n",
      abc[0], abc[1], abc[2], (long long)g.num_nodes(), (long long)g.num_edges(), now_s() - t0,
      cpu_model().c_str(), std::thread::hardware_concurrency());
  std::string fan;
  for (int64_t f : fanouts) fan += (fan.empty() ? "" : ",") + std::to_string(f);
  std::printf("batch %lld, fanouts %s (input layer first)\n", (long long)batch, fan.c_str());

  std::vector<int64_t> order(size_t(g.num_nodes()));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(7));
  batches = std::min(batches, g.num_nodes() / batch);
  NeighborSampler sampler(g, fanouts, 1);

  // Check first: with every in-neighbour taken (no randomness) the one block has the reference's
  // edge and node counts, and sampled, the last block has its min(fanout, degree) edges.
  const std::span<const int64_t> first(order.data(), size_t(batch));
  const std::vector<SampledBlock> blocks = sampler.sample(first, 0, 0);
  const SampledBlock all = NeighborSampler(g, {-1}, 1).sample(first, 0, 0)[0];
  const auto ref_all = reference_sample(g, {-1}, first, 1);
  const auto ref = reference_sample(g, fanouts, first, 1);
  if (ref_all[0] != std::pair(all.graph.num_edges(), all.num_src()) ||
      ref.back().first != blocks.back().graph.num_edges()) {
    std::printf(
        "MISMATCH: %lld edges and %lld nodes taking every in-neighbour, the reference %lld and %lld; "
        "%lld sampled edges in the last block, the reference %lld\n",
        (long long)all.graph.num_edges(), (long long)all.num_src(), (long long)ref_all[0].first,
        (long long)ref_all[0].second, (long long)blocks.back().graph.num_edges(),
        (long long)ref.back().first);
    return 1;
  }
  int64_t block_edges = 0;
  for (const SampledBlock& b : blocks) block_edges += b.graph.num_edges();
  std::printf("a batch: %lld input nodes, %lld block edges\n", (long long)blocks.front().num_src(),
              (long long)block_edges);

  // Of a batch's time, the part spent building the block graphs (Graph::from_edges).
  t0 = now_s();
  const int64_t rebuilds = std::min<int64_t>(batches, 20);
  for (int64_t i = 0; i < rebuilds; ++i)
    for (const SampledBlock& b : blocks) Graph::from_edges(b.num_src(), b.graph.src(), b.graph.dst());
  const double build_s = (now_s() - t0) / double(rebuilds);

  const double ref_t0 = now_s();
  const int64_t ref_batches = std::min<int64_t>(batches, 20);
  for (int64_t i = 0; i < ref_batches; ++i)
    reference_sample(g, fanouts, std::span<const int64_t>(order.data() + i * batch, size_t(batch)),
                     uint64_t(i));
  const double ref_rate = double(ref_batches * batch) / (now_s() - ref_t0);

  sampled_seeds_per_second(sampler, order, batch, std::min<int64_t>(batches, 4),
                           threads);  // warm the workspaces
  const double one = sampled_seeds_per_second(sampler, order, batch, batches, 1);
  const double many = sampled_seeds_per_second(sampler, order, batch, batches, threads);

  auto data = std::make_shared<GraphDataset>();
  data->name = "rmat";
  data->graph = g;
  data->features = zeros({g.num_nodes(), features});
  GraphBatchLoader loader(data, from_vector(order, {g.num_nodes()}),
                          {.batch = batch, .fanouts = fanouts, .seed = 1, .num_workers = threads});
  loader.next();
  t0 = now_s();
  for (int64_t i = 0; i < batches; ++i) loader.next();
  const double loader_rate = double(batches * batch) / (now_s() - t0);

  std::printf("\n%-46s %14s %10s\n", "", "seeds/s", "vs ref");
  std::printf("%-46s %14.0f %10s\n", "reference (std::sample, unordered_map), 1 thread", ref_rate, "1.00");
  std::printf("%-46s %14.0f %10.2f\n", "NeighborSampler, 1 thread", one, one / ref_rate);
  std::printf("%-46s %14.0f %10.2f\n", ("NeighborSampler, " + std::to_string(threads) + " threads").c_str(),
              many, many / ref_rate);
  std::printf(
      "%-46s %14.0f %10.2f\n",
      ("GraphBatchLoader, " + std::to_string(threads) + " workers, F=" + std::to_string(features)).c_str(),
      loader_rate, loader_rate / ref_rate);
  std::printf("\nGraph::from_edges of a batch's blocks: %.2f ms, %.0f%% of a 1-thread batch (%.2f ms)\n",
              build_s * 1e3, 100 * build_s / (double(batch) / one), 1e3 * double(batch) / one);
  std::printf("loader wait: %.2f s over %lld batches\n", loader.wait_seconds(), (long long)batches);
  return 0;
}
