// GraphBatchLoader: minibatches of a GraphDataset for GNN training, sampled (neighbor_sampler.h)
// and gathered on loader threads, ahead of the trainer.
//
//   GraphBatchLoader loader(data, train_nodes, {.batch = 1024, .fanouts = {15, 10}});
//   GraphMiniBatch b = loader.next();  // b.blocks, b.features (rows of b.blocks[0].nodes), b.labels
//
// N worker threads sample the blocks of a batch of seed nodes and gather its feature rows, and
// hand the batches over in order through a bounded queue. The batches are the same bits whatever
// N is (0: made in next() itself): the epoch's seed order comes from (seed, epoch), the sampling
// from (seed, epoch, batch index). Full-graph mode gives one batch per epoch holding every seed
// and the whole graph as blocks, so one training loop serves both.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "strata/core/tensor.h"
#include "strata/io/batch_pipeline.h"
#include "strata/io/graphs/graph_dataset.h"
#include "strata/io/graphs/neighbor_sampler.h"

namespace strata::io {

struct GraphMiniBatch {
  std::vector<SampledBlock> blocks;  // input layer first
  Tensor seeds;                      // i64 [B] global ids (= blocks.back().nodes[:B])
  Tensor features;  // f32 [blocks[0].num_src(), F] rows of the dataset's; undefined if it has none
  Tensor labels;    // i64 [B] the seeds' labels; undefined if the dataset has none
  int64_t epoch = 0;
  int64_t index = 0;  // global batch index within the epoch
};

struct GraphLoaderOptions {
  int64_t batch = 1024;  // B seeds per batch
  // Per layer, input layer first (fanouts[l] is what each destination of blocks[l] draws; PyG's
  // num_neighbors is the reverse); -1 takes every in-neighbour.
  std::vector<int64_t> fanouts{10, 10};
  // One batch per epoch: fanouts.size() whole-graph blocks (full_graph_blocks), every seed in
  // the order given, the dataset's whole feature tensor. batch, shuffle and drop_last are unused.
  // With no fanouts the batch has no blocks: its consumer runs on the dataset's graph, which may
  // then be typed (a relational model's).
  bool full_graph = false;
  bool shuffle = true;     // a new permutation of the seeds every epoch
  bool drop_last = false;  // else the epoch's last batch holds the remainder
  uint64_t seed = 0;
  int num_workers = 2;   // loader threads; 0 makes batches in next() itself
  int64_t prefetch = 4;  // ready batches held at most (the queue bound)
  // Bytes of ready batches held at most (their features, labels, seeds and blocks), whatever
  // `prefetch` says: workers start no new batch past it, except the one next() waits for.
  int64_t prefetch_bytes = int64_t(1) << 30;
  int rank = 0, world_size = 1;  // data parallel: rank r takes global batches r, r+W, ...
  // Runs on the loader thread on each batch once it is made (PyG NeighborLoader's transform);
  // what it throws reaches the caller from next().
  std::function<void(GraphMiniBatch&)> transform{};
};

class GraphBatchLoader {
 public:
  // `seeds`: the nodes batches are made of (an integer tensor [S] of distinct global ids, e.g.
  // the training nodes). The dataset's graph must be homogeneous and on the CPU, its features
  // f32 [N, F] and labels i64 [N] when defined. Checks everything here (ValueError, IndexError,
  // ShapeError, NotImplementedError name what is wrong).
  GraphBatchLoader(std::shared_ptr<const GraphDataset> dataset, const Tensor& seeds,
                   GraphLoaderOptions options);
  ~GraphBatchLoader();  // ends and joins the workers
  GraphBatchLoader(const GraphBatchLoader&) = delete;
  GraphBatchLoader& operator=(const GraphBatchLoader&) = delete;

  // The next batch of this rank, crossing epoch boundaries; rethrows a worker's error.
  GraphMiniBatch next();

  // Global batches per epoch (all ranks together); 1 in full-graph mode.
  int64_t batches_per_epoch() const { return pipe_->batches_per_epoch(); }
  int64_t num_seeds() const { return int64_t(seeds_.size()); }
  const GraphDataset& dataset() const { return *dataset_; }
  const GraphLoaderOptions& options() const { return o_; }
  // Where the next step starts: `epoch` and `sample` = global batch index in the epoch. The same
  // on every rank, and valid for any world size.
  DataCursor cursor() const { return pipe_->cursor(); }
  void set_cursor(const DataCursor& cursor) { pipe_->set_cursor(cursor); }
  // Seconds next() has spent waiting for a batch that was not ready (the trainer starved).
  double wait_seconds() const { return pipe_->wait_seconds(); }
  // Ready batches held now, and their bytes as prefetch_bytes counts them.
  int64_t held_batches() const { return pipe_->held_batches(); }
  int64_t held_bytes() const { return pipe_->held_bytes(); }

 private:
  GraphMiniBatch make(int64_t epoch, int64_t index) const;
  std::shared_ptr<const GraphDataset> dataset_;
  GraphLoaderOptions o_;
  std::vector<int64_t> seeds_;
  std::unique_ptr<NeighborSampler> sampler_;  // sampled mode
  std::vector<SampledBlock> full_blocks_;     // full-graph mode
  Tensor features_, labels_;                  // the dataset's, contiguous
  std::unique_ptr<EpochOrders> orders_;
  std::unique_ptr<BatchPipeline> pipe_;  // last: its workers stop before the members they read go
};

}  // namespace strata::io
