#include "strata/io/graphs/neighbor_sampler.h"

#include <algorithm>
#include <mutex>
#include <utility>

#include "strata/core/error.h"
#include "strata/core/factory.h"
#include "strata/core/philox.h"

namespace strata::io {
namespace {

// Tells a sampler layer's key apart from every other use of Philox keyed by the same seed.
constexpr uint32_t kLayerStream = 0x4E424C4Bu;
// Up to this many picks, Floyd's membership test scans the picks so far; above, it reads a mark
// per in-edge position.
constexpr int64_t kScanLimit = 32;

// The key of one layer of one batch: (seed, epoch, batch index, layer) mixed by two Philox rounds.
std::pair<uint32_t, uint32_t> layer_key(uint64_t seed, int64_t epoch, int64_t batch, int64_t layer) {
  const auto e = uint64_t(epoch), b = uint64_t(batch);
  const philox::U32x4 a = philox::philox4x32_10(
      {uint32_t(e), uint32_t(e >> 32), uint32_t(b), uint32_t(b >> 32)}, uint32_t(seed), uint32_t(seed >> 32));
  const philox::U32x4 k = philox::philox4x32_10({uint32_t(layer), kLayerStream, a.z, a.w}, a.x, a.y);
  return {k.x, k.y};
}

// A node's random words: Philox under the layer's key with the node id as the high counter, so
// no two nodes of a layer share a word.
class NodeStream {
 public:
  NodeStream(std::pair<uint32_t, uint32_t> key, uint64_t node)
      : k0_(key.first), k1_(key.second), node_(node) {}

  uint32_t next() {
    if (used_ == 4) {
      const philox::U32x4 r = philox::philox4x32_10(
          {uint32_t(block_), uint32_t(block_ >> 32), uint32_t(node_), uint32_t(node_ >> 32)}, k0_, k1_);
      words_[0] = r.x, words_[1] = r.y, words_[2] = r.z, words_[3] = r.w;
      ++block_, used_ = 0;
    }
    return words_[used_++];
  }

  // Uniform in [0, n) exactly: Lemire's multiply-and-reject ("Fast random integer generation in
  // an interval", ACM TOMACS 29(1), 2019), on 32-bit words, or 64-bit ones for n above 2^32.
  uint64_t below(uint64_t n) {
    if (n <= (uint64_t(1) << 32)) {
      uint64_t m = uint64_t(next()) * n;
      if (uint32_t(m) < n) {
        const uint32_t t = uint32_t((uint64_t(1) << 32) % n);
        while (uint32_t(m) < t) m = uint64_t(next()) * n;
      }
      return m >> 32;
    }
    auto word64 = [&] { return (uint64_t(next()) << 32) | next(); };
    unsigned __int128 m = (unsigned __int128)word64() * n;
    if (uint64_t(m) < n) {
      const uint64_t t = (0 - n) % n;
      while (uint64_t(m) < t) m = (unsigned __int128)word64() * n;
    }
    return uint64_t(m >> 64);
  }

 private:
  uint32_t k0_, k1_;
  uint64_t node_, block_ = 0;
  uint32_t words_[4] = {};
  int used_ = 4;
};

void check_homogeneous(const Graph& g, const char* what) {
  STRATA_CHECK(g.defined(), ValueError, what, ": the graph is undefined");
  STRATA_CHECK(g.num_node_types() == 1 && g.num_relations() == 1, NotImplementedError, what,
               ": the graph has ", g.num_node_types(), " node types and ", g.num_relations(),
               " relations; blocks are homogeneous (one node type, one relation), and sampling a typed graph "
               "needs per-relation fanouts, which are not implemented");
}

Tensor iota_tensor(int64_t n) {
  Tensor t = Tensor::empty({n}, DType::i64);
  int64_t* p = t.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) p[i] = i;
  return t;
}

// One sampling call's scratch, reused by the next call on any thread: the global -> local table
// (-1 where unset; only the entries a call touched are reset), the global ids in local order, and
// Floyd's picks and marks.
struct Workspace {
  std::vector<int32_t> local32;  // for i32 graphs
  std::vector<int64_t> local64;  // for i64 graphs
  std::vector<int64_t> nodes;
  std::vector<int64_t> picks;
  std::vector<uint8_t> marks;
  std::vector<std::pair<int64_t, int64_t>> edges;  // (local source, CSC position) of one destination
};

// Chooses k of [0, deg) uniformly without replacement (Floyd), sorted ascending, into picks. The
// membership test scans the picks when they are few, else reads `marks` (reset after).
void choose(NodeStream& rng, int64_t deg, int64_t k, std::vector<int64_t>& picks,
            std::vector<uint8_t>& marks) {
  picks.clear();
  const bool scan = k <= kScanLimit;
  if (!scan && int64_t(marks.size()) < deg) marks.resize(size_t(deg), 0);
  for (int64_t j = deg - k; j < deg; ++j) {
    const auto t = int64_t(rng.below(uint64_t(j) + 1));
    const bool taken = scan ? std::find(picks.begin(), picks.end(), t) != picks.end() : marks[size_t(t)] != 0;
    const int64_t pick = taken ? j : t;
    if (!scan) marks[size_t(pick)] = 1;
    picks.push_back(pick);
  }
  if (!scan)
    for (int64_t p : picks) marks[size_t(p)] = 0;
  std::sort(picks.begin(), picks.end());
}

// Sorts one destination's (local source, CSC position) pairs; they arrive in CSC order, so ties on
// the source stay in it. Insertion sort for the usual handful.
void sort_edges(std::pair<int64_t, int64_t>* e, int64_t n) {
  if (n > 32) {
    std::sort(e, e + n);
    return;
  }
  for (int64_t i = 1; i < n; ++i) {
    const std::pair<int64_t, int64_t> x = e[i];
    int64_t j = i;
    for (; j > 0 && x < e[j - 1]; --j) e[j] = e[j - 1];
    e[j] = x;
  }
}

// The blocks for `seeds`, with IdT the graph's index type. `local` is all -1 on entry and on exit.
template <class IdT>
std::vector<SampledBlock> sample_blocks(const Graph& g, const std::vector<int64_t>& fanouts, uint64_t seed,
                                        std::span<const int64_t> seeds, int64_t epoch, int64_t batch,
                                        std::vector<IdT>& local, Workspace& ws) {
  const IdT* src = g.src().data<IdT>();
  const IdT* eid = g.edge_ids().data<IdT>();
  const int64_t* off = g.in_offsets().data<int64_t>() + g.in_start(0);
  const int64_t N = g.num_nodes();
  std::vector<int64_t>& nodes = ws.nodes;
  nodes.clear();
  // Resets the table whatever happens (a repeated seed, an allocation failure).
  struct Reset {
    std::vector<IdT>& local;
    std::vector<int64_t>& nodes;
    ~Reset() {
      for (int64_t u : nodes) local[size_t(u)] = IdT(-1);
    }
  } reset{local, nodes};
  for (size_t i = 0; i < seeds.size(); ++i) {
    const int64_t s = seeds[i];
    STRATA_CHECK(s >= 0 && s < N, IndexError, "NeighborSampler: seed ", i, " is node ", s, ", outside [0, ",
                 N, ")");
    STRATA_CHECK(local[size_t(s)] < 0, ValueError, "NeighborSampler: node ", s, " is seed ", local[size_t(s)],
                 " and seed ", i, "; seeds must be distinct");
    local[size_t(s)] = IdT(i);
    nodes.push_back(s);
  }
  const auto L = int64_t(fanouts.size());
  std::vector<SampledBlock> blocks(static_cast<size_t>(L));
  for (int64_t l = L - 1; l >= 0; --l) {
    const int64_t fanout = fanouts[size_t(l)];
    const auto num_dst = int64_t(nodes.size());
    int64_t E = 0;
    for (int64_t i = 0; i < num_dst; ++i) {
      const int64_t deg = off[nodes[size_t(i)] + 1] - off[nodes[size_t(i)]];
      E += fanout < 0 ? deg : std::min(fanout, deg);
    }
    Tensor src_t = Tensor::empty({E}, DType::i64), dst_t = Tensor::empty({E}, DType::i64);
    Tensor parent_t = Tensor::empty({E}, DType::i64);
    int64_t* bs = src_t.data<int64_t>();
    int64_t* bd = dst_t.data<int64_t>();
    int64_t* bp = parent_t.data<int64_t>();
    const std::pair<uint32_t, uint32_t> key = layer_key(seed, epoch, batch, l);
    int64_t at = 0;
    for (int64_t i = 0; i < num_dst; ++i) {
      const int64_t v = nodes[size_t(i)];
      const int64_t begin = off[v], deg = off[v + 1] - begin;
      const int64_t k = fanout < 0 ? deg : std::min(fanout, deg);
      ws.edges.resize(size_t(k));
      auto take = [&](int64_t j, int64_t pos) {
        const int64_t u = int64_t(src[pos]);
        IdT lu = local[size_t(u)];
        if (lu < 0) {
          lu = IdT(nodes.size());
          local[size_t(u)] = lu;
          nodes.push_back(u);
        }
        ws.edges[size_t(j)] = {int64_t(lu), pos};
      };
      if (k == deg) {
        for (int64_t j = 0; j < k; ++j) take(j, begin + j);
      } else {
        NodeStream rng(key, uint64_t(v));
        choose(rng, deg, k, ws.picks, ws.marks);
        for (int64_t j = 0; j < k; ++j) take(j, begin + ws.picks[size_t(j)]);
      }
      sort_edges(ws.edges.data(), k);
      for (int64_t j = 0; j < k; ++j, ++at) {
        bs[at] = ws.edges[size_t(j)].first;
        bd[at] = i;
        bp[at] = int64_t(eid[ws.edges[size_t(j)].second]);
      }
    }
    SampledBlock& b = blocks[size_t(l)];
    const auto num_src = int64_t(nodes.size());
    b.num_dst = num_dst;
    b.nodes = Tensor::empty({num_src}, DType::i64);
    std::copy(nodes.begin(), nodes.end(), b.nodes.data<int64_t>());
    b.parent_edges = std::move(parent_t);
    b.graph = Graph::from_edges(num_src, src_t, dst_t);
  }
  return blocks;
}

}  // namespace

struct NeighborSampler::WorkspacePool {
  std::mutex mu;
  std::vector<std::unique_ptr<Workspace>> free;
};

std::vector<SampledBlock> full_graph_blocks(const Graph& graph, int64_t num_layers) {
  check_homogeneous(graph, "full_graph_blocks");
  STRATA_CHECK(num_layers >= 1, ValueError, "full_graph_blocks: ", num_layers, " layers; at least one");
  SampledBlock b;
  b.graph = graph;
  b.num_dst = graph.num_nodes();
  b.nodes = iota_tensor(graph.num_nodes());
  b.parent_edges = iota_tensor(graph.num_edges());
  return std::vector<SampledBlock>(size_t(num_layers), b);
}

NeighborSampler::NeighborSampler(Graph graph, std::vector<int64_t> fanouts, uint64_t seed)
    : graph_(std::move(graph)),
      fanouts_(std::move(fanouts)),
      seed_(seed),
      pool_(std::make_unique<WorkspacePool>()) {
  check_homogeneous(graph_, "NeighborSampler");
  STRATA_CHECK(graph_.device() == kCPU, DeviceError, "NeighborSampler: the graph is on ",
               graph_.device().str(), "; sampling runs on the CPU (sample first, then move the blocks)");
  STRATA_CHECK(!fanouts_.empty(), ValueError, "NeighborSampler: no fanouts; give one per layer");
  for (size_t l = 0; l < fanouts_.size(); ++l)
    STRATA_CHECK(fanouts_[l] > 0 || fanouts_[l] == -1, ValueError, "NeighborSampler: fanout ", fanouts_[l],
                 " of layer ", l, " is neither positive nor -1 (every in-neighbour)");
}

NeighborSampler::~NeighborSampler() = default;
NeighborSampler::NeighborSampler(NeighborSampler&&) noexcept = default;
NeighborSampler& NeighborSampler::operator=(NeighborSampler&&) noexcept = default;

std::vector<SampledBlock> NeighborSampler::sample(std::span<const int64_t> seeds, int64_t epoch,
                                                  int64_t batch_index) const {
  std::unique_ptr<Workspace> ws;
  {
    std::lock_guard<std::mutex> lock(pool_->mu);
    if (!pool_->free.empty()) {
      ws = std::move(pool_->free.back());
      pool_->free.pop_back();
    }
  }
  const bool narrow = graph_.index_dtype() == DType::i32;
  if (!ws) {
    ws = std::make_unique<Workspace>();
    if (narrow)
      ws->local32.assign(size_t(graph_.num_nodes()), -1);
    else
      ws->local64.assign(size_t(graph_.num_nodes()), -1);
  }
  struct GiveBack {
    WorkspacePool& pool;
    std::unique_ptr<Workspace>& ws;
    ~GiveBack() {
      std::lock_guard<std::mutex> lock(pool.mu);
      pool.free.push_back(std::move(ws));
    }
  } give_back{*pool_, ws};
  return narrow
             ? sample_blocks<int32_t>(graph_, fanouts_, seed_, seeds, epoch, batch_index, ws->local32, *ws)
             : sample_blocks<int64_t>(graph_, fanouts_, seed_, seeds, epoch, batch_index, ws->local64, *ws);
}

std::vector<SampledBlock> NeighborSampler::sample(const Tensor& seeds, int64_t epoch,
                                                  int64_t batch_index) const {
  STRATA_CHECK(seeds.defined() && seeds.dim() == 1, ShapeError,
               "NeighborSampler::sample: seeds must be a 1-D tensor of node ids, got ",
               seeds.defined() ? seeds.str() : std::string("undefined"));
  STRATA_CHECK(!is_floating(seeds.dtype()) && seeds.dtype() != DType::boolean, TypeError,
               "NeighborSampler::sample: seeds must hold integers, got ", seeds.str());
  const Tensor s = seeds.to(kCPU).to(DType::i64).contiguous();
  return sample(std::span<const int64_t>(s.data<int64_t>(), size_t(s.numel())), epoch, batch_index);
}

}  // namespace strata::io
