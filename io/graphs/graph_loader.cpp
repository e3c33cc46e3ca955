#include "strata/io/graphs/graph_loader.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <span>
#include <thread>

#include "strata/core/error.h"
#include "strata/io/keyed_rng.h"

namespace strata::io {
namespace {

// Rows `ids` of a contiguous [N, F] tensor, as a new [ids.size(), F] tensor: one memcpy a row.
Tensor gather_rows(const Tensor& table, std::span<const int64_t> ids) {
  const int64_t F = table.size(1);
  Tensor out = Tensor::empty({int64_t(ids.size()), F}, table.dtype());
  const auto* from = static_cast<const char*>(table.data_ptr());
  auto* to = static_cast<char*>(out.data_ptr());
  const size_t row = size_t(F) * table.element_size();
  for (size_t i = 0; i < ids.size(); ++i) std::memcpy(to + i * row, from + size_t(ids[i]) * row, row);
  return out;
}

Tensor gather_labels(const Tensor& labels, std::span<const int64_t> ids) {
  Tensor out = Tensor::empty({int64_t(ids.size())}, DType::i64);
  const int64_t* from = labels.data<int64_t>();
  int64_t* to = out.data<int64_t>();
  for (size_t i = 0; i < ids.size(); ++i) to[i] = from[ids[i]];
  return out;
}

Tensor ids_tensor(std::span<const int64_t> ids) {
  Tensor t = Tensor::empty({int64_t(ids.size())}, DType::i64);
  std::copy(ids.begin(), ids.end(), t.data<int64_t>());
  return t;
}

// What a ready sampled batch holds: its tensors, and about three 8-byte index entries per block edge.
int64_t batch_bytes(const GraphMiniBatch& b) {
  auto bytes = [](const Tensor& t) { return t.defined() ? int64_t(t.nbytes()) : int64_t(0); };
  int64_t n = bytes(b.features) + bytes(b.labels) + bytes(b.seeds);
  for (const SampledBlock& blk : b.blocks)
    n += bytes(blk.nodes) + bytes(blk.parent_edges) + (blk.graph.defined() ? 24 * blk.graph.num_edges() : 0);
  return n;
}

}  // namespace

// Batches of this rank are numbered k = 0, 1, 2, ... from where the pipeline started; batch k is
// global stream position start + k * world_size + rank. Workers claim k in order, at most
// `prefetch` batches and `prefetch_bytes` ahead of the consumer, and file the result under k;
// next() takes them in order.
struct GraphBatchLoader::Pipeline {
  struct Result {
    GraphMiniBatch batch;
    std::exception_ptr error;
    int64_t bytes = 0;
  };
  const GraphBatchLoader* loader;
  int64_t start;

  std::mutex mu;
  std::condition_variable work_cv, ready_cv;
  int64_t next_claim = 0, consumed = 0;
  std::map<int64_t, Result> ready;
  int64_t ready_bytes = 0;
  bool shutting_down = false;
  std::vector<std::thread> threads;

  std::mutex order_mu;
  std::map<int64_t, std::shared_ptr<const std::vector<int64_t>>> orders;  // epoch -> seed order

  std::shared_ptr<const std::vector<int64_t>> order(int64_t epoch) {
    const GraphLoaderOptions& o = loader->o_;
    std::lock_guard<std::mutex> lock(order_mu);
    auto it = orders.find(o.shuffle ? epoch : 0);
    if (it != orders.end()) return it->second;
    auto v = std::make_shared<std::vector<int64_t>>(loader->seeds_);
    if (o.shuffle) shuffle_keyed(v.get(), o.seed, uint64_t(epoch));
    // Workers are at most a few batches apart: keep this epoch and the one before.
    while (o.shuffle && !orders.empty() && orders.begin()->first < epoch - 1) orders.erase(orders.begin());
    orders[o.shuffle ? epoch : 0] = v;
    return v;
  }

  GraphMiniBatch make(int64_t k) {
    const GraphBatchLoader& L = *loader;
    const GraphLoaderOptions& o = L.o_;
    const int64_t pos = start + k * o.world_size + o.rank;
    GraphMiniBatch b;
    b.epoch = pos / L.batches_per_epoch_;
    b.index = pos % L.batches_per_epoch_;
    if (o.full_graph) {
      b.blocks = L.full_blocks_;
      b.seeds = ids_tensor(L.seeds_);
      b.features = L.features_;
      if (L.labels_.defined()) b.labels = gather_labels(L.labels_, L.seeds_);
    } else {
      const std::shared_ptr<const std::vector<int64_t>> ord = order(b.epoch);
      const int64_t first = b.index * o.batch;
      const int64_t n = std::min(o.batch, int64_t(ord->size()) - first);
      const std::span<const int64_t> seeds(ord->data() + first, size_t(n));
      b.blocks = L.sampler_->sample(seeds, b.epoch, b.index);
      b.seeds = ids_tensor(seeds);
      const SampledBlock& input = b.blocks.front();
      if (L.features_.defined())
        b.features = gather_rows(L.features_, {input.nodes.data<int64_t>(), size_t(input.num_src())});
      if (L.labels_.defined()) b.labels = gather_labels(L.labels_, seeds);
    }
    if (o.transform) o.transform(b);
    return b;
  }

  void work() {
    for (;;) {
      int64_t k;
      {
        std::unique_lock<std::mutex> lock(mu);
        const GraphLoaderOptions& o = loader->o_;
        work_cv.wait(lock, [&] {
          return shutting_down || (next_claim < consumed + o.prefetch &&
                                   (next_claim == consumed || ready_bytes < o.prefetch_bytes));
        });
        if (shutting_down) return;
        k = next_claim++;
      }
      Result r;
      try {
        r.batch = make(k);
      } catch (...) {
        r.error = std::current_exception();
      }
      if (!loader->o_.full_graph) r.bytes = batch_bytes(r.batch);  // a full-graph batch shares the dataset's
      std::lock_guard<std::mutex> lock(mu);
      ready_bytes += r.bytes;
      ready.emplace(k, std::move(r));
      ready_cv.notify_all();
    }
  }
};

GraphBatchLoader::GraphBatchLoader(std::shared_ptr<const GraphDataset> dataset, const Tensor& seeds,
                                   GraphLoaderOptions options)
    : dataset_(std::move(dataset)), o_(std::move(options)) {
  STRATA_CHECK(dataset_ != nullptr, ValueError, "GraphBatchLoader: no dataset");
  STRATA_CHECK(o_.batch > 0, ValueError, "GraphBatchLoader: batch ", o_.batch, " must be positive");
  STRATA_CHECK(o_.num_workers >= 0 && o_.num_workers <= 256, ValueError, "GraphBatchLoader: num_workers ",
               o_.num_workers, " is not in [0, 256]");
  STRATA_CHECK(o_.prefetch >= 1, ValueError, "GraphBatchLoader: prefetch ", o_.prefetch,
               " must be at least 1");
  STRATA_CHECK(o_.prefetch_bytes >= 1, ValueError, "GraphBatchLoader: prefetch_bytes ", o_.prefetch_bytes,
               " must be at least 1");
  STRATA_CHECK(o_.world_size >= 1 && o_.rank >= 0 && o_.rank < o_.world_size, ValueError,
               "GraphBatchLoader: rank ", o_.rank, " of world size ", o_.world_size);
  const GraphDataset& d = *dataset_;
  const Graph& g = d.graph;
  STRATA_CHECK(g.defined(), ValueError, "GraphBatchLoader: dataset '", d.name, "' has no graph");
  const int64_t N = g.num_nodes();
  if (o_.full_graph) {
    STRATA_CHECK(o_.world_size == 1, ValueError,
                 "GraphBatchLoader: full-graph mode has one batch per epoch, so it "
                 "cannot be split across ",
                 o_.world_size, " ranks; sample minibatches for data parallel");
    full_blocks_ = full_graph_blocks(g, int64_t(o_.fanouts.size()));
  } else {
    sampler_ = std::make_unique<NeighborSampler>(g, o_.fanouts, o_.seed);
  }
  if (d.features.defined()) {
    STRATA_CHECK(d.features.dim() == 2 && d.features.size(0) == N, ShapeError, "GraphBatchLoader: dataset '",
                 d.name, "' has features ", d.features.str(), " for ", N, " nodes; expected [", N, ", F]");
    STRATA_CHECK(d.features.dtype() == DType::f32, TypeError, "GraphBatchLoader: dataset '", d.name,
                 "' has features ", d.features.str(), "; expected f32");
    features_ = d.features.to(kCPU).contiguous();
  }
  if (d.labels.defined()) {
    STRATA_CHECK(d.labels.dim() == 1 && d.labels.size(0) == N && d.labels.dtype() == DType::i64, ShapeError,
                 "GraphBatchLoader: dataset '", d.name, "' has labels ", d.labels.str(), "; expected i64[", N,
                 "]");
    labels_ = d.labels.to(kCPU).contiguous();
  }
  STRATA_CHECK(
      seeds.defined() && seeds.dim() == 1 && !is_floating(seeds.dtype()) && seeds.dtype() != DType::boolean,
      ShapeError, "GraphBatchLoader: seeds must be a 1-D integer tensor of node ids, got ",
      seeds.defined() ? seeds.str() : std::string("undefined"));
  const Tensor s64 = seeds.to(kCPU).to(DType::i64).contiguous();
  seeds_.assign(s64.data<int64_t>(), s64.data<int64_t>() + s64.numel());
  std::vector<uint8_t> seen(size_t(N), 0);
  for (size_t i = 0; i < seeds_.size(); ++i) {
    const int64_t s = seeds_[i];
    STRATA_CHECK(s >= 0 && s < N, IndexError, "GraphBatchLoader: seed ", i, " is node ", s, ", outside [0, ",
                 N, ")");
    STRATA_CHECK(!seen[size_t(s)], ValueError, "GraphBatchLoader: node ", s, " is given twice as a seed (at ",
                 i, "); seeds must be distinct");
    seen[size_t(s)] = 1;
  }
  const auto S = int64_t(seeds_.size());
  STRATA_CHECK(S > 0, ValueError, "GraphBatchLoader: no seed nodes (dataset '", d.name, "')");
  batches_per_epoch_ = o_.full_graph ? 1 : o_.drop_last ? S / o_.batch : (S + o_.batch - 1) / o_.batch;
  STRATA_CHECK(batches_per_epoch_ > 0, ValueError, "GraphBatchLoader: ", S, " seeds make no full batch of ",
               o_.batch, " (dataset '", d.name, "'); lower the batch size or keep the last partial batch");
  start();
}

GraphBatchLoader::~GraphBatchLoader() { shut_down(); }

void GraphBatchLoader::start() {
  pipe_ = std::make_unique<Pipeline>();
  pipe_->loader = this;
  pipe_->start = position_;
  for (int i = 0; i < o_.num_workers; ++i) pipe_->threads.emplace_back([p = pipe_.get()] { p->work(); });
}

void GraphBatchLoader::shut_down() {
  if (!pipe_) return;
  {
    std::lock_guard<std::mutex> lock(pipe_->mu);
    pipe_->shutting_down = true;
  }
  pipe_->work_cv.notify_all();
  for (std::thread& t : pipe_->threads) t.join();
  pipe_.reset();
}

GraphMiniBatch GraphBatchLoader::next() {
  Pipeline& p = *pipe_;
  Pipeline::Result r;
  if (o_.num_workers == 0) {
    try {
      r.batch = p.make(p.consumed);
    } catch (...) {
      r.error = std::current_exception();
    }
    ++p.consumed;
  } else {
    std::unique_lock<std::mutex> lock(p.mu);
    const int64_t k = p.consumed;
    if (!p.ready.count(k)) {
      const auto t0 = std::chrono::steady_clock::now();
      p.ready_cv.wait(lock, [&] { return p.ready.count(k) > 0; });
      wait_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    auto it = p.ready.find(k);
    r = std::move(it->second);
    p.ready_bytes -= r.bytes;
    p.ready.erase(it);
    ++p.consumed;
    lock.unlock();
    p.work_cv.notify_all();
  }
  position_ = p.start + p.consumed * o_.world_size;
  if (r.error) std::rethrow_exception(r.error);
  return std::move(r.batch);
}

int64_t GraphBatchLoader::held_batches() const {
  std::lock_guard<std::mutex> lock(pipe_->mu);
  return int64_t(pipe_->ready.size());
}

int64_t GraphBatchLoader::held_bytes() const {
  std::lock_guard<std::mutex> lock(pipe_->mu);
  return pipe_->ready_bytes;
}

DataCursor GraphBatchLoader::cursor() const {
  return DataCursor{
      .epoch = position_ / batches_per_epoch_, .shard = 0, .sample = position_ % batches_per_epoch_};
}

void GraphBatchLoader::set_cursor(const DataCursor& c) {
  STRATA_CHECK(c.epoch >= 0 && c.sample >= 0 && c.sample < batches_per_epoch_, ValueError,
               "GraphBatchLoader::set_cursor: epoch ", c.epoch, " batch ", c.sample, " is outside the ",
               batches_per_epoch_, " batches of an epoch");
  shut_down();
  position_ = c.epoch * batches_per_epoch_ + c.sample;
  start();
}

}  // namespace strata::io
