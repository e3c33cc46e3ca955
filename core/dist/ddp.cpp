#include "strata/dist/ddp.h"

#include <algorithm>
#include <chrono>

#include "strata/autograd/grad_mode.h"
#include "strata/core/memory_stats.h"
#include "strata/core/factory.h"

namespace strata::dist {

double GradSyncStats::hidden_fraction() const {
  if (comm_seconds <= 0) return 0.0;
  return std::clamp(1.0 - exposed_seconds / comm_seconds, 0.0, 1.0);
}

std::vector<std::vector<int64_t>> assign_buckets(const std::vector<Tensor>& params, size_t bucket_cap_bytes,
                                                 size_t first_bucket_cap_bytes) {
  std::vector<std::vector<int64_t>> buckets;
  size_t bytes = 0;
  for (int64_t i = int64_t(params.size()) - 1; i >= 0; --i) {
    const Tensor& p = params[size_t(i)];
    bool fresh = buckets.empty();
    if (!fresh) {
      const Tensor& head = params[size_t(buckets.back().front())];
      const size_t cur_cap = buckets.size() == 1 ? first_bucket_cap_bytes : bucket_cap_bytes;
      fresh = head.dtype() != p.dtype() || head.device() != p.device() || bytes + p.nbytes() > cur_cap;
    }
    if (fresh) {
      buckets.emplace_back();
      bytes = 0;
    }
    buckets.back().push_back(i);
    bytes += p.nbytes();
  }
  return buckets;
}

ShardSpan shard_span(int64_t numel, int rank, int world, int64_t align) {
  ShardSpan s;
  s.chunk = (numel + world - 1) / world;
  s.chunk = std::min(numel, (s.chunk + align - 1) / align * align);
  s.begin = std::min(numel, s.chunk * rank);
  s.len = std::min(numel, s.begin + s.chunk) - s.begin;
  return s;
}

struct DistributedDataParallel::Reducer {
  struct Bucket {
    std::vector<int64_t> params;
    Tensor flat;  // the bucket's gradients, back to back
    int64_t pending = 0;
    WorkPtr work;
  };
  ProcessGroup* group = nullptr;
  const bool* sync_enabled = nullptr;
  std::vector<Tensor> params;
  std::vector<int64_t> bucket_of, offset_of;
  std::vector<Bucket> buckets;
  std::vector<char> marked;
  int64_t next_launch = 0;
  bool in_progress = false;
  std::vector<GradSyncEvent> events;
  GradSyncStats stats;

  // ZeRO-2 (shard_gradients): one reduce-scatter per parameter instead of buckets.
  // A parameter that one rank owns whole (at most `alignment` elements) is all-reduced in place
  // instead: no padded copy, and the ranks that do not own it let go of it when the sum is done.
  struct Shard {
    // This rank's chunk of the average, [chunk] (owned whole: [len]); its first len elements are
    // the span.
    Tensor out;
    // The local gradient, [world * chunk] (owned whole: [numel]), held until its collective is done.
    Tensor input;
    WorkPtr work;
    bool whole = false;
  };
  bool sharded = false;
  int64_t alignment = 1;
  std::vector<Shard> shards;
  // The launch position in reverse parameter order, and the release position behind it.
  int64_t next_shard = 0, drained = 0;
  // Bytes of gradients launched and not yet released, and their bound.
  size_t in_flight = 0, in_flight_cap = 0;

  Tensor slot(int64_t i) {
    const Tensor& p = params[size_t(i)];
    return buckets[size_t(bucket_of[size_t(i)])].flat.narrow(0, offset_of[size_t(i)], p.numel()).view(p.shape());
  }

  void begin() {
    in_progress = true;
    std::fill(marked.begin(), marked.end(), 0);
    next_shard = drained = 0;
    in_flight = 0;
    for (Shard& sh : shards) sh.work.reset(), sh.input = Tensor();
    for (Bucket& b : buckets) {
      b.pending = int64_t(b.params.size());
      b.work.reset();
    }
    next_launch = 0;
    events.clear();
  }

  // The ZeRO-2 input of parameter i: its gradient flattened and padded to world x chunk (zeros
  // where it has none). The parameter lets go of its gradient: the input holds it until sent.
  void stage_shard(int64_t i) {
    Tensor p = params[size_t(i)];
    const Tensor& g = p.grad();
    Shard& sh = shards[size_t(i)];
    const int64_t padded = sh.whole ? p.numel() : sh.out.numel() * group->size();
    if (g.defined() && g.is_contiguous() && g.numel() == padded) {
      sh.input = g.view({-1});
    } else {
      MemoryCategoryGuard category(MemoryCategory::Gradient);
      sh.input = strata::zeros({padded}, TensorOptions(p.dtype()).device(p.device()));
      if (g.defined()) sh.input.narrow(0, 0, p.numel()).view(p.shape()).copy_(g);
    }
    p.set_grad(Tensor());
    marked[size_t(i)] = 1;
  }

  void launch_ready_shards() {
    const auto n = int64_t(params.size());
    while (next_shard < n && marked[size_t(n - 1 - next_shard)]) {
      Shard& sh = shards[size_t(n - 1 - next_shard)];
      sh.work = sh.whole ? group->all_reduce(sh.input, ReduceOp::Avg)
                         : group->reduce_scatter(sh.out, sh.input, ReduceOp::Avg);
      in_flight += sh.input.nbytes();
      events.push_back({GradSyncEvent::BucketLaunched, n - 1 - next_shard});
      ++next_shard;
    }
    // Gradients whose collective is done go now, not at the end of backward; past the bound on
    // bytes in flight, backward waits for the oldest.
    while (drained < next_shard) {
      Shard& oldest = shards[size_t(n - 1 - drained)];
      if (!oldest.work->is_completed()) {
        if (in_flight <= in_flight_cap) break;
        oldest.work->wait();
      }
      in_flight -= oldest.input.nbytes();
      complete(n - 1 - drained++);
    }
  }

  // After parameter k's collective: its owner keeps an all-reduced gradient as its span; the
  // input goes.
  void complete(int64_t k) {
    Shard& sh = shards[size_t(k)];
    if (sh.whole && sh.out.numel() > 0) sh.out = sh.input;
    sh.input = Tensor();
    events.push_back({GradSyncEvent::BucketDone, k});
  }

  // Copies parameter i's gradient (zeros if it has none) into its bucket slot.
  void stage(int64_t i) {
    Tensor dst = slot(i);
    const Tensor& g = params[size_t(i)].grad();
    if (!g.defined())
      dst.zero_();
    else if (g.data_ptr() != dst.data_ptr() || g.strides() != dst.strides())
      dst.copy_(g);
    marked[size_t(i)] = 1;
    --buckets[size_t(bucket_of[size_t(i)])].pending;
  }

  void launch_ready() {
    while (next_launch < int64_t(buckets.size()) && buckets[size_t(next_launch)].pending == 0) {
      Bucket& b = buckets[size_t(next_launch)];
      b.work = group->all_reduce(b.flat, ReduceOp::Avg);
      events.push_back({GradSyncEvent::BucketLaunched, next_launch});
      ++next_launch;
    }
  }

  void on_grad_ready(int64_t i) {
    if (!*sync_enabled) return;
    if (!in_progress) begin();
    STRATA_CHECK(!marked[size_t(i)], AutogradError, "DistributedDataParallel: parameter ", i, " (",
                 params[size_t(i)].str(),
                 ") received its gradient twice before finish_gradient_sync(); call finish_gradient_sync() after each "
                 "step's last backward, and turn sync off (NoSyncGuard) for the micro-batches before it");
    NoGradGuard no_grad;
    events.push_back({GradSyncEvent::GradReady, i});
    if (sharded) {
      stage_shard(i);
      launch_ready_shards();
      return;
    }
    stage(i);
    launch_ready();
  }

  // Waits for `count` collectives (work(k): the k-th; done(k) runs after it), sums their run
  // times and the wait, and rethrows the first failure once every one has finished.
  template <class WorkOf, class Done>
  void wait_all(int64_t count, WorkOf work, Done done) {
    const auto t0 = std::chrono::steady_clock::now();
    stats = {};
    std::exception_ptr error;
    for (int64_t k = 0; k < count; ++k) {
      try {
        work(k)->wait();
      } catch (...) {
        if (!error) error = std::current_exception();
      }
      stats.comm_seconds += work(k)->run_seconds();
      done(k);
    }
    stats.exposed_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    in_progress = false;
    if (error) std::rethrow_exception(error);
  }

  void finish_shards() {
    for (int64_t i = 0; i < int64_t(params.size()); ++i)
      if (!marked[size_t(i)]) stage_shard(i);
    launch_ready_shards();
    const auto n = int64_t(params.size());  // in launch order: reverse parameter order
    wait_all(
        n, [&](int64_t k) { return shards[size_t(n - 1 - k)].work; },
        [&](int64_t k) {
          if (shards[size_t(n - 1 - k)].input.defined()) complete(n - 1 - k);
        });
  }

  void finish() {
    NoGradGuard no_grad;
    if (!in_progress) begin();
    if (sharded) return finish_shards();
    for (int64_t i = 0; i < int64_t(params.size()); ++i)
      if (!marked[size_t(i)]) stage(i);
    launch_ready();
    auto done = [&](int64_t b) { events.push_back({GradSyncEvent::BucketDone, b}); };
    wait_all(
        int64_t(buckets.size()), [&](int64_t b) { return buckets[size_t(b)].work; }, done);
    // The averaged gradients stay in the buckets; .grad() becomes a view of its slot.
    for (int64_t i = 0; i < int64_t(params.size()); ++i) params[size_t(i)].set_grad(slot(i));
  }
};

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<nn::Module> module, std::shared_ptr<ProcessGroup> group,
                                                 DistributedDataParallelOptions options)
    : module_(std::move(module)), group_(std::move(group)) {
  STRATA_CHECK(module_ && group_, ValueError, "DistributedDataParallel: needs a module and a process group");
  STRATA_CHECK(options.bucket_cap_mb > 0 && options.first_bucket_cap_mb > 0, ValueError,
               "DistributedDataParallel: bucket sizes must be positive, got ", options.bucket_cap_mb, " MB and ",
               options.first_bucket_cap_mb, " MB");
  NoGradGuard no_grad;
  if (options.broadcast_parameters && group_->size() > 1) {
    std::vector<WorkPtr> works;
    for (const Tensor& p : module_->parameters()) works.push_back(group_->broadcast(p.detach(), 0));
    for (const Tensor& b : module_->buffers())
      if (b.is_contiguous() && is_floating(b.dtype())) works.push_back(group_->broadcast(b, 0));
    for (WorkPtr& w : works) w->wait();
  }

  reducer_ = std::make_shared<Reducer>();
  Reducer& r = *reducer_;
  r.group = group_.get();
  r.sync_enabled = &sync_enabled_;
  for (const Tensor& p : module_->parameters())
    if (p.requires_grad()) r.params.push_back(p);
  STRATA_CHECK(!r.params.empty(), ValueError, "DistributedDataParallel: the module has no parameter that requires grad");
  r.marked.assign(r.params.size(), 0);
  r.sharded = options.shard_gradients;
  r.alignment = options.shard_alignment;
  r.in_flight_cap = size_t(options.bucket_cap_mb * 1024 * 1024);
  STRATA_CHECK(r.alignment > 0, ValueError, "DistributedDataParallel: shard_alignment must be positive, got ",
               r.alignment);
  if (r.sharded) {
    MemoryCategoryGuard category(MemoryCategory::Gradient);
    for (const Tensor& p : r.params) {
      const ShardSpan span = shard_span(p.numel(), group_->rank(), group_->size(), r.alignment);
      const bool whole = span.chunk == p.numel();
      r.shards.push_back(
          {strata::zeros({whole ? span.len : span.chunk}, TensorOptions(p.dtype()).device(p.device())),
           Tensor(), nullptr, whole});
    }
  }
  const auto cap = size_t(options.bucket_cap_mb * 1024 * 1024);
  const auto first_cap = size_t(std::min(options.first_bucket_cap_mb, options.bucket_cap_mb) * 1024 * 1024);
  std::vector<std::vector<int64_t>> assignment =
      r.sharded ? std::vector<std::vector<int64_t>>{} : assign_buckets(r.params, cap, first_cap);
  r.bucket_of.assign(r.params.size(), 0);
  r.offset_of.assign(r.params.size(), 0);
  MemoryCategoryGuard category(MemoryCategory::Gradient);
  for (size_t b = 0; b < assignment.size(); ++b) {
    Reducer::Bucket bucket;
    bucket.params = assignment[b];
    int64_t numel = 0;
    for (int64_t i : bucket.params) {
      r.bucket_of[size_t(i)] = int64_t(b);
      r.offset_of[size_t(i)] = numel;
      numel += r.params[size_t(i)].numel();
    }
    const Tensor& head = r.params[size_t(bucket.params.front())];
    bucket.flat = strata::zeros({numel}, TensorOptions(head.dtype()).device(head.device()));
    r.buckets.push_back(std::move(bucket));
  }
  std::weak_ptr<Reducer> weak = reducer_;
  for (int64_t i = 0; i < int64_t(r.params.size()); ++i)
    r.params[size_t(i)].register_post_accumulate_grad_hook([weak, i](const Tensor&) {
      if (auto red = weak.lock()) red->on_grad_ready(i);
    });
}

DistributedDataParallel::~DistributedDataParallel() = default;

void DistributedDataParallel::finish_gradient_sync() { reducer_->finish(); }

const std::vector<Tensor>& DistributedDataParallel::parameters() const { return reducer_->params; }

bool DistributedDataParallel::shards_gradients() const { return reducer_->sharded; }

Tensor DistributedDataParallel::gradient_shard(int64_t i) const {
  const ShardSpan span = gradient_span(i);  // checks that gradients are sharded and that i is one
  return reducer_->shards[size_t(i)].out.narrow(0, 0, span.len);
}

ShardSpan DistributedDataParallel::gradient_span(int64_t i) const {
  const Reducer& r = *reducer_;
  STRATA_CHECK(
      r.sharded, ValueError,
      "DistributedDataParallel: gradients are all-reduced whole (shard_gradients is off), not sharded");
  STRATA_CHECK(i >= 0 && i < int64_t(r.params.size()), ValueError, "DistributedDataParallel: parameter ", i,
               " of ", r.params.size());
  return shard_span(r.params[size_t(i)].numel(), group_->rank(), group_->size(), r.alignment);
}

int64_t DistributedDataParallel::shard_alignment() const { return reducer_->alignment; }

std::vector<std::vector<int64_t>> DistributedDataParallel::bucket_assignment() const {
  std::vector<std::vector<int64_t>> out;
  for (const auto& b : reducer_->buckets) out.push_back(b.params);
  return out;
}

std::vector<GradSyncEvent> DistributedDataParallel::last_sync_events() const { return reducer_->events; }

GradSyncStats DistributedDataParallel::last_sync_stats() const { return reducer_->stats; }

}  // namespace strata::dist
