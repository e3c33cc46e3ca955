#include "strata/io/graphs/graph_loader.h"

#include <algorithm>
#include <cstring>
#include <span>

#include "strata/core/error.h"

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

GraphMiniBatch GraphBatchLoader::make(int64_t epoch, int64_t index) const {
  GraphMiniBatch b;
  b.epoch = epoch;
  b.index = index;
  if (o_.full_graph) {
    b.blocks = full_blocks_;
    b.seeds = ids_tensor(seeds_);
    b.features = features_;
    if (labels_.defined()) b.labels = gather_labels(labels_, seeds_);
  } else {
    const std::shared_ptr<const std::vector<int64_t>> ord = orders_->of(b.epoch);
    const int64_t first = b.index * o_.batch;
    const int64_t n = std::min(o_.batch, int64_t(ord->size()) - first);
    const std::span<const int64_t> seeds(ord->data() + first, size_t(n));
    b.blocks = sampler_->sample(seeds, b.epoch, b.index);
    b.seeds = ids_tensor(seeds);
    const SampledBlock& input = b.blocks.front();
    if (features_.defined())
      b.features = gather_rows(features_, {input.nodes.data<int64_t>(), size_t(input.num_src())});
    if (labels_.defined()) b.labels = gather_labels(labels_, seeds);
  }
  if (o_.transform) o_.transform(b);
  return b;
}

GraphBatchLoader::GraphBatchLoader(std::shared_ptr<const GraphDataset> dataset, const Tensor& seeds,
                                   GraphLoaderOptions options)
    : dataset_(std::move(dataset)), o_(std::move(options)) {
  STRATA_CHECK(dataset_ != nullptr, ValueError, "GraphBatchLoader: no dataset");
  STRATA_CHECK(o_.batch > 0, ValueError, "GraphBatchLoader: batch ", o_.batch, " must be positive");
  const BatchPipelineOptions pipeline = pipeline_options_of(o_);
  BatchPipeline::check("GraphBatchLoader", pipeline);
  const GraphDataset& d = *dataset_;
  const Graph& g = d.graph;
  STRATA_CHECK(g.defined(), ValueError, "GraphBatchLoader: dataset '", d.name, "' has no graph");
  const int64_t N = g.num_nodes();
  if (o_.full_graph) {
    STRATA_CHECK(o_.world_size == 1, ValueError,
                 "GraphBatchLoader: full-graph mode has one batch per epoch, so it "
                 "cannot be split across ",
                 o_.world_size, " ranks; sample minibatches for data parallel");
    if (!o_.fanouts.empty()) full_blocks_ = full_graph_blocks(g, int64_t(o_.fanouts.size()));
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
  const int64_t batches_per_epoch = o_.full_graph  ? 1
                                    : o_.drop_last ? S / o_.batch
                                                   : (S + o_.batch - 1) / o_.batch;
  STRATA_CHECK(batches_per_epoch > 0, ValueError, "GraphBatchLoader: ", S, " seeds make no full batch of ",
               o_.batch, " (dataset '", d.name, "'); lower the batch size or keep the last partial batch");
  orders_ = std::make_unique<EpochOrders>(seeds_, o_.shuffle, o_.seed);
  // A full-graph batch shares the dataset's tensors: it holds no bytes of its own.
  BatchPipeline::Bytes bytes;
  if (!o_.full_graph)
    bytes = [](const std::any& b) { return batch_bytes(std::any_cast<const GraphMiniBatch&>(b)); };
  pipe_ = std::make_unique<BatchPipeline>(
      "GraphBatchLoader", pipeline, batches_per_epoch,
      [this](int64_t epoch, int64_t index) { return std::any(make(epoch, index)); }, std::move(bytes));
}

GraphBatchLoader::~GraphBatchLoader() = default;

GraphMiniBatch GraphBatchLoader::next() { return pipe_->next<GraphMiniBatch>(); }

}  // namespace strata::io
