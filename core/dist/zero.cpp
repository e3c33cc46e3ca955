#include "strata/dist/zero.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <unordered_map>

#include "strata/autograd/grad_mode.h"
#include "strata/core/backend.h"
#include "strata/core/factory.h"
#include "strata/core/memory_stats.h"
#include "strata/optim/clip_grad.h"

namespace strata::dist {

ZeroRedundancyOptimizer::ZeroRedundancyOptimizer(std::vector<optim::ParamGroup> groups,
                                                 const optim::OptimizerOptions& defaults,
                                                 std::shared_ptr<ProcessGroup> group,
                                                 LocalOptimizerFactory make_local,
                                                 std::vector<std::string> elementwise_state,
                                                 const DistributedDataParallel* sharded_gradients,
                                                 bool counts_steps, ShardedParameters* sharded_parameters)
    : Optimizer(std::move(groups), defaults, "ZeroRedundancyOptimizer"),
      ddp_(sharded_gradients),
      params_(sharded_parameters),
      group_(std::move(group)),
      elementwise_state_(std::move(elementwise_state)),
      counts_steps_(counts_steps) {
  STRATA_CHECK(group_ != nullptr, ValueError, "ZeroRedundancyOptimizer: needs a process group");
  STRATA_CHECK(!params_ || ddp_, ValueError,
               "ZeroRedundancyOptimizer: stage 3 (sharded parameters) needs stage 2's sharded gradients");
  const std::vector<Tensor> params = parameters();
  const Tensor& first = params.front();
  const int W = group_->size(), rank = group_->rank();
  std::unordered_map<const TensorImpl*, int64_t> in_ddp;
  if (ddp_) {
    STRATA_CHECK(
        ddp_->shards_gradients(), ValueError,
        "ZeroRedundancyOptimizer: stage 2 needs a DistributedDataParallel built with shard_gradients");
    STRATA_CHECK(&ddp_->group() == group_.get(), ValueError,
                 "ZeroRedundancyOptimizer: the DistributedDataParallel reduces over another process group");
    for (size_t i = 0; i < ddp_->parameters().size(); ++i) in_ddp[ddp_->parameters()[i].impl()] = int64_t(i);
  }
  for (const Tensor& p : params) {
    STRATA_CHECK(p.dtype() == first.dtype() && p.device() == first.device(), NotImplementedError,
                 "ZeroRedundancyOptimizer: every parameter must have one dtype and device; got ", p.str(), " and ",
                 first.str());
    STRATA_CHECK(p.is_contiguous(), NotImplementedError, "ZeroRedundancyOptimizer: parameter ", p.str(),
                 " is not contiguous");
    offset_.push_back(total_);
    if (ddp_) {
      const auto at = in_ddp.find(p.impl());
      STRATA_CHECK(at != in_ddp.end(), ValueError, "ZeroRedundancyOptimizer: parameter ", p.str(),
                   " is not one the DistributedDataParallel reduces");
      ddp_index_.push_back(at->second);
      // Stage 2: offsets within one rank's chunks, laid end to end.
      total_ += shard_span(p.numel(), rank, W, ddp_->shard_alignment()).chunk;
    } else {
      total_ += p.numel();
    }
  }
  if (ddp_) {
    shard_ = total_;
    shard_begin_ = shard_end_ = 0;
  } else {
    shard_ = (total_ + W - 1) / W;
    shard_begin_ = std::min(total_, shard_ * rank);
    shard_end_ = std::min(total_, shard_begin_ + shard_);
  }

  // Pieces of this rank's shard, grouped like the parameters they come from.
  std::vector<optim::ParamGroup> local_groups;
  int64_t index = 0;
  for (const optim::ParamGroup& g : param_groups()) {
    std::vector<Tensor> views;
    for (const Tensor& p : g.params()) {
      int64_t lo = 0, hi = 0;  // element range within the parameter
      if (ddp_) {
        const ShardSpan span = shard_span(p.numel(), rank, W, ddp_->shard_alignment());
        lo = span.begin, hi = span.begin + span.len;
      } else {
        lo = std::max(offset_[size_t(index)], shard_begin_) - offset_[size_t(index)];
        hi = std::min(offset_[size_t(index)] + p.numel(), shard_end_) - offset_[size_t(index)];
      }
      if (lo < hi) {
        Piece piece{index, lo, hi - lo, Tensor()};
        if (params_)  // stage 3: the span lives on its own; the parameter's storage comes and goes
          piece.view = params_->shard(size_t(ddp_index_[size_t(index)]));
        else
          piece.view = Tensor::from_storage(p.storage(), {piece.len}, {1}, p.storage_offset() + piece.begin,
                                            p.dtype());
        views.push_back(piece.view);
        pieces_.push_back(std::move(piece));
      }
      ++index;
    }
    local_group_.push_back(views.empty() ? -1 : int(local_groups.size()));
    if (!views.empty()) local_groups.emplace_back(std::move(views), g.options());
  }
  if (!local_groups.empty()) local_ = make_local(std::move(local_groups));
}

int64_t ZeroRedundancyOptimizer::send_offset(const Piece& piece) const {
  return ddp_ ? offset_[size_t(piece.param)] : offset_[size_t(piece.param)] + piece.begin - shard_begin_;
}

void ZeroRedundancyOptimizer::all_gather_pieces(const std::function<Tensor(const Piece&)>& source,
                                                const std::vector<Tensor>& dest) {
  const int W = group_->size();
  // Staging for one window at a time, only while gathering: under ZeRO-2 the update (and so this)
  // runs after the full gradients are gone, so it does not add to backward's peak.
  const Tensor like = parameters().front();
  const int64_t window = std::max<int64_t>(std::min(shard_, kGatherWindow), 1);
  MemoryCategoryGuard category(MemoryCategory::Temporary);
  const Tensor send_buffer = strata::empty({window}, TensorOptions(like.dtype()).device(like.device()));
  const Tensor all_buffer = strata::empty({window * W}, TensorOptions(like.dtype()).device(like.device()));
  for (int64_t c0 = 0; c0 < shard_; c0 += window) {
    const int64_t c = std::min(window, shard_ - c0), c1 = c0 + c;
    Tensor send = send_buffer.narrow(0, 0, c), all = all_buffer.narrow(0, 0, W * c);
    send.zero_();
    for (const Piece& piece : pieces_) {
      const int64_t at = send_offset(piece), lo = std::max(at, c0), hi = std::min(at + piece.len, c1);
      if (lo < hi) {
        const Tensor from = source(piece);
        if (from.defined()) send.narrow(0, lo - c0, hi - lo).copy_(from.narrow(0, lo - at, hi - lo));
      }
    }
    group_->all_gather(all, send)->wait();
    // Rank r's send positions [first, first + len) hold parameter i's elements from `element` on.
    for (size_t i = 0; i < dest.size(); ++i) {
      if (!dest[i].defined()) continue;
      const int64_t n = dest[i].numel();
      for (int r = 0; r < W; ++r) {
        int64_t first = 0, len = 0, element = 0;
        if (ddp_) {
          const ShardSpan span = shard_span(n, r, W, ddp_->shard_alignment());
          first = offset_[i], len = span.len, element = span.begin;
        } else {
          const int64_t from = std::max(offset_[i], shard_ * r),
                        to = std::min(offset_[i] + n, shard_ * (r + 1));
          first = from - shard_ * r, len = std::max<int64_t>(to - from, 0), element = from - offset_[i];
        }
        const int64_t lo = std::max(first, c0), hi = std::min(first + len, c1);
        if (lo < hi)
          dest[i].narrow(0, element + lo - first, hi - lo).copy_(all.narrow(0, r * c + lo - c0, hi - lo));
      }
    }
  }
}

std::unique_ptr<ZeroRedundancyOptimizer> ZeroRedundancyOptimizer::adamw(
    std::vector<optim::ParamGroup> groups, const optim::AdamWOptions& defaults,
    std::shared_ptr<ProcessGroup> group, const DistributedDataParallel* sharded_gradients,
    ShardedParameters* sharded_parameters) {
  return std::make_unique<ZeroRedundancyOptimizer>(
      std::move(groups), defaults, std::move(group),
      [defaults](std::vector<optim::ParamGroup> local) {
        return std::make_unique<optim::AdamW>(std::move(local), defaults);
      },
      std::vector<std::string>{"exp_avg", "exp_avg_sq"}, sharded_gradients, /*counts_steps=*/true,
      sharded_parameters);
}

std::unique_ptr<ZeroRedundancyOptimizer> ZeroRedundancyOptimizer::sgd(
    std::vector<optim::ParamGroup> groups, const optim::SGDOptions& defaults,
    std::shared_ptr<ProcessGroup> group, const DistributedDataParallel* sharded_gradients,
    ShardedParameters* sharded_parameters) {
  std::vector<std::string> buffers;
  for (const optim::ParamGroup& g : groups)
    if (static_cast<const optim::SGDOptions&>(g.options()).momentum() != 0.0) buffers = {"momentum_buffer"};
  return std::make_unique<ZeroRedundancyOptimizer>(
      std::move(groups), defaults, std::move(group),
      [defaults](std::vector<optim::ParamGroup> local) {
        return std::make_unique<optim::SGD>(std::move(local), defaults);
      },
      std::move(buffers), sharded_gradients, /*counts_steps=*/false, sharded_parameters);
}

std::string ZeroRedundancyOptimizer::state_key(size_t i) const {
  const std::string prefix = "state." + std::to_string(i) + ".";
  return counts_steps_ || elementwise_state_.empty() ? prefix + "step" : prefix + elementwise_state_.front();
}

std::vector<std::string> ZeroRedundancyOptimizer::state_names() const {
  std::vector<std::string> names;
  if (counts_steps_) names.push_back("step");
  names.insert(names.end(), elementwise_state_.begin(), elementwise_state_.end());
  return names;
}

void ZeroRedundancyOptimizer::step() {
  NoGradGuard no_grad;
  const std::vector<Tensor> params = parameters();
  if (local_) {
    // LR schedules write the outer groups; the pieces follow.
    for (size_t g = 0; g < param_groups().size(); ++g)
      if (local_group_[g] >= 0) local_->param_groups()[size_t(local_group_[g])].set_lr(param_groups()[g].lr());
    for (Piece& piece : pieces_) {
      if (ddp_) {
        piece.view.set_grad(ddp_->gradient_shard(ddp_index_[size_t(piece.param)]));
        continue;
      }
      const Tensor& grad = params[size_t(piece.param)].grad();
      piece.view.set_grad(grad.defined() ? grad.contiguous().view({-1}).narrow(0, piece.begin, piece.len) : Tensor());
    }
    local_->step();
    for (Piece& piece : pieces_) piece.view.set_grad(Tensor());
  }
  if (params_) {  // the spans are the parameters now: any whole copy gathered before is stale
    params_->release_all();
    return;
  }
  // All-gather: every rank contributes its updated pieces.
  std::vector<Tensor> flat;
  for (const Tensor& p : params) flat.push_back(p.view({-1}));
  all_gather_pieces([](const Piece& piece) { return piece.view; }, flat);
}

namespace {

// How many pieces of clip_grad_norm_'s blocks a span has.
int64_t piece_count(const ShardSpan& s) {
  return s.len == 0 ? 0 : (s.begin + s.len - 1) / optim::kClipBlock - s.begin / optim::kClipBlock + 1;
}

}  // namespace

double ZeroRedundancyOptimizer::clip_grad_norm_(double max_norm) {
  NoGradGuard no_grad;
  if (!ddp_) return optim::clip_grad_norm_(parameters(), max_norm);
  const std::vector<Tensor>& params = ddp_->parameters();
  const int W = group_->size();
  std::vector<Tensor> spans;
  bool host = true;
  for (int64_t i = 0; i < int64_t(params.size()); ++i) {
    spans.push_back(ddp_->gradient_shard(i));
    host = host && spans.back().device().is_host_memory();
  }
  double acc = 0;
  if (host) {
    // Every rank's piece sums, gathered and folded as clip_grad_norm_ folds one process's blocks:
    // parameter by parameter, in element order (the ranks' spans follow each other).
    std::vector<int64_t> counts(size_t(W) * params.size());  // [rank][parameter]
    int64_t widest = 0;
    for (int r = 0; r < W; ++r) {
      int64_t total = 0;
      for (size_t i = 0; i < params.size(); ++i)
        total += counts[size_t(r) * params.size() + i] =
            piece_count(shard_span(params[i].numel(), r, W, ddp_->shard_alignment()));
      widest = std::max(widest, total);
    }
    Tensor mine = strata::zeros({widest}, DType::f64);
    int64_t at = 0;
    for (size_t i = 0; i < params.size(); ++i)
      for (double v : optim::clip_piece_sums(spans[i], ddp_->gradient_span(int64_t(i)).begin))
        mine.data<double>()[at++] = v;
    const Device dev = spans.front().device();
    Tensor all = strata::zeros({widest * W}, TensorOptions(DType::f64).device(dev));
    group_->all_gather(all, mine.to(dev))->wait();
    all = all.to(kCPU);
    std::vector<int64_t> next(size_t(W), 0);  // per rank: its next piece in `all`
    for (size_t i = 0; i < params.size(); ++i) {
      double sum = 0.0;
      for (int r = 0; r < W; ++r)
        for (int64_t k = 0; k < counts[size_t(r) * params.size() + i]; ++k)
          sum += all.data<double>()[r * widest + next[size_t(r)]++];
      acc += sum;
    }
  } else {
    // On a device: each rank's sums of squares, then over the ranks (equal to rounding).
    for (const Tensor& g : spans)
      if (g.numel() > 0) acc += backend_for(g.device()).norm_power_sum(g, 2.0);
    acc = group_->all_reduce_scalar(acc, ReduceOp::Sum);
  }
  const double total = std::sqrt(acc);
  const double coef = max_norm / (total + 1e-6);
  if (coef < 1.0 || std::isnan(coef)) optim::scale_gradients_(spans, coef);
  return total;
}

optim::TensorDict ZeroRedundancyOptimizer::consolidated_state_dict() {
  NoGradGuard no_grad;
  const std::vector<Tensor> params = parameters();
  // This rank's state per piece: the local optimizer's own tensors, or, where they live in a
  // StateStore, its state_dict()'s copies on the CPU ("state.<piece>.<name>").
  const bool placed = local_ && local_->state_store() != nullptr;
  const optim::TensorDict local_copies = placed ? local_->state_dict() : optim::TensorDict();
  auto local_state = [&](size_t k, const std::string& name) -> Tensor {
    if (placed) {
      const Tensor* t = local_copies.find("state." + std::to_string(k) + "." + name);
      return t ? *t : Tensor();
    }
    const optim::TensorDict* st = local_ ? local_->state_of(pieces_[k].view) : nullptr;
    return st && st->contains(name) ? st->at(name) : Tensor();
  };
  // "step" per parameter (1 for an optimizer without steps), from the rank holding its first
  // element; 0: no state.
  Tensor steps = strata::zeros({int64_t(params.size())}, DType::f64);
  double* s = steps.data<double>();
  for (size_t k = 0; k < pieces_.size(); ++k) {
    if (pieces_[k].begin != 0) continue;
    const Tensor marker = local_state(k, counts_steps_                ? "step"
                                         : elementwise_state_.empty() ? ""
                                                                      : elementwise_state_[0]);
    if (marker.defined()) s[pieces_[k].param] = counts_steps_ ? marker.item() : 1.0;
  }
  group_->all_reduce(steps, ReduceOp::Sum)->wait();

  optim::TensorDict out;
  // The whole state is put together on the CPU, window by window: a device that holds one shard of
  // it (a state sharded to fit) need not hold it all for a checkpoint.
  std::vector<std::vector<Tensor>> full;  // per elementwise state name, per parameter (with state)
  for (const std::string& name : elementwise_state_) {
    std::vector<Tensor> whole(params.size());
    for (size_t i = 0; i < params.size(); ++i)
      if (s[i] > 0) whole[i] = strata::zeros({params[i].numel()}, TensorOptions(params[i].dtype()));
    std::vector<Tensor> from(pieces_.size());  // each piece's, flat, on the parameters' device
    for (size_t k = 0; k < pieces_.size(); ++k) {
      const Tensor t = local_state(k, name);
      if (t.defined()) from[k] = t.to(pieces_[k].view.device()).view({-1});
    }
    all_gather_pieces([&](const Piece& piece) { return from[size_t(&piece - pieces_.data())]; }, whole);
    full.push_back(std::move(whole));
  }
  for (size_t i = 0; i < params.size(); ++i) {
    if (s[i] <= 0) continue;
    const std::string prefix = "state." + std::to_string(i) + ".";
    if (counts_steps_) out.insert(prefix + "step", strata::scalar_tensor(s[i], DType::f64));
    for (size_t n = 0; n < elementwise_state_.size(); ++n)
      out.insert(prefix + elementwise_state_[n], full[n][i].view(params[i].shape()));
  }
  for (size_t g = 0; g < param_groups().size(); ++g)
    out.insert("param_groups." + std::to_string(g) + ".lr", strata::scalar_tensor(param_groups()[g].lr(), DType::f64));
  return out;
}

void ZeroRedundancyOptimizer::load_consolidated_state_dict(const optim::TensorDict& state) {
  const std::vector<Tensor> params = parameters();
  std::vector<std::string> problems;
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string prefix = "state." + std::to_string(i) + ".";
    if (!state.contains(state_key(i))) continue;
    for (const std::string& n : elementwise_state_) {
      if (!state.contains(prefix + n))
        problems.push_back("missing \"" + prefix + n + "\"");
      else if (state.at(prefix + n).shape() != params[i].shape())
        problems.push_back("size mismatch for \"" + prefix + n + "\": " + shape_str(state.at(prefix + n).shape()) +
                           " in the state dict, the parameter's shape is " + shape_str(params[i].shape()));
    }
  }
  if (!problems.empty()) {
    std::ostringstream msg;
    msg << "Error(s) in loading the ZeroRedundancyOptimizer state_dict:";
    for (const std::string& p : problems) msg << "\n\t" << p;
    throw ValueError(msg.str());
  }
  for (size_t g = 0; g < param_groups().size(); ++g) {
    const std::string key = "param_groups." + std::to_string(g) + ".lr";
    if (state.contains(key)) param_groups()[g].set_lr(state.at(key).item());
  }
  if (!local_) return;
  optim::TensorDict local;
  for (size_t k = 0; k < pieces_.size(); ++k) {
    const Piece& piece = pieces_[k];
    const std::string prefix = "state." + std::to_string(piece.param) + ".";
    if (!state.contains(state_key(size_t(piece.param)))) continue;
    const std::string lp = "state." + std::to_string(k) + ".";
    if (counts_steps_) local.insert(lp + "step", state.at(prefix + "step"));
    for (const std::string& n : elementwise_state_)
      local.insert(lp + n, state.at(prefix + n).contiguous().view({-1}).narrow(0, piece.begin, piece.len).clone());
  }
  for (size_t g = 0; g < param_groups().size(); ++g)
    if (local_group_[g] >= 0)
      local.insert("param_groups." + std::to_string(local_group_[g]) + ".lr",
                   strata::scalar_tensor(param_groups()[g].lr(), DType::f64));
  local_->load_state_dict(local);
}

}  // namespace strata::dist
