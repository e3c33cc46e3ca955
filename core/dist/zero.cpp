#include "strata/dist/zero.h"

#include <sstream>

#include "strata/autograd/grad_mode.h"
#include "strata/core/memory_stats.h"
#include "strata/core/factory.h"

namespace strata::dist {

ZeroRedundancyOptimizer::ZeroRedundancyOptimizer(std::vector<optim::ParamGroup> groups,
                                                 const optim::OptimizerOptions& defaults,
                                                 std::shared_ptr<ProcessGroup> group, LocalOptimizerFactory make_local,
                                                 std::vector<std::string> elementwise_state)
    : Optimizer(std::move(groups), defaults, "ZeroRedundancyOptimizer"), group_(std::move(group)),
      elementwise_state_(std::move(elementwise_state)) {
  STRATA_CHECK(group_ != nullptr, ValueError, "ZeroRedundancyOptimizer: needs a process group");
  const std::vector<Tensor> params = parameters();
  const Tensor& first = params.front();
  for (const Tensor& p : params) {
    STRATA_CHECK(p.dtype() == first.dtype() && p.device() == first.device(), NotImplementedError,
                 "ZeroRedundancyOptimizer: every parameter must have one dtype and device; got ", p.str(), " and ",
                 first.str());
    STRATA_CHECK(p.is_contiguous(), NotImplementedError, "ZeroRedundancyOptimizer: parameter ", p.str(),
                 " is not contiguous");
    offset_.push_back(total_);
    total_ += p.numel();
  }
  const int W = group_->size();
  shard_ = (total_ + W - 1) / W;
  shard_begin_ = std::min(total_, shard_ * group_->rank());
  shard_end_ = std::min(total_, shard_begin_ + shard_);

  // Pieces of this rank's shard, grouped like the parameters they come from.
  std::vector<optim::ParamGroup> local_groups;
  int64_t index = 0;
  for (const optim::ParamGroup& g : param_groups()) {
    std::vector<Tensor> views;
    for (const Tensor& p : g.params()) {
      const int64_t lo = std::max(offset_[size_t(index)], shard_begin_);
      const int64_t hi = std::min(offset_[size_t(index)] + p.numel(), shard_end_);
      if (lo < hi) {
        Piece piece{index, lo - offset_[size_t(index)], hi - lo, Tensor()};
        piece.view = Tensor::from_storage(p.storage(), {piece.len}, {1}, p.storage_offset() + piece.begin, p.dtype());
        views.push_back(piece.view);
        pieces_.push_back(std::move(piece));
      }
      ++index;
    }
    local_group_.push_back(views.empty() ? -1 : int(local_groups.size()));
    if (!views.empty()) local_groups.emplace_back(std::move(views), g.options());
  }
  if (!local_groups.empty()) local_ = make_local(std::move(local_groups));

  MemoryCategoryGuard category(MemoryCategory::Temporary);
  send_ = strata::zeros({shard_}, TensorOptions(first.dtype()).device(first.device()));
  gathered_ = strata::zeros({shard_ * W}, TensorOptions(first.dtype()).device(first.device()));
}

std::unique_ptr<ZeroRedundancyOptimizer> ZeroRedundancyOptimizer::adamw(std::vector<optim::ParamGroup> groups,
                                                                        const optim::AdamWOptions& defaults,
                                                                        std::shared_ptr<ProcessGroup> group) {
  return std::make_unique<ZeroRedundancyOptimizer>(
      std::move(groups), defaults, std::move(group),
      [defaults](std::vector<optim::ParamGroup> local) {
        return std::make_unique<optim::AdamW>(std::move(local), defaults);
      },
      std::vector<std::string>{"exp_avg", "exp_avg_sq"});
}

std::vector<std::string> ZeroRedundancyOptimizer::state_names() const {
  std::vector<std::string> names{"step"};
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
      const Tensor& grad = params[size_t(piece.param)].grad();
      piece.view.set_grad(grad.defined() ? grad.contiguous().view({-1}).narrow(0, piece.begin, piece.len) : Tensor());
    }
    local_->step();
    for (Piece& piece : pieces_) piece.view.set_grad(Tensor());
  }
  // All-gather: every rank contributes its updated shard.
  for (const Piece& piece : pieces_)
    send_.narrow(0, offset_[size_t(piece.param)] + piece.begin - shard_begin_, piece.len).copy_(piece.view);
  group_->all_gather(gathered_, send_)->wait();
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor p = params[i];
    p.view({-1}).copy_(gathered_.narrow(0, offset_[i], p.numel()));
  }
}

optim::TensorDict ZeroRedundancyOptimizer::consolidated_state_dict() {
  NoGradGuard no_grad;
  const std::vector<Tensor> params = parameters();
  // "step" per parameter, from the rank holding its first element.
  Tensor steps = strata::zeros({int64_t(params.size())}, DType::f64);
  double* s = steps.data<double>();
  for (const Piece& piece : pieces_) {
    const optim::TensorDict* st = local_ ? local_->state_of(piece.view) : nullptr;
    if (piece.begin == 0 && st) s[piece.param] = st->at("step").item();
  }
  group_->all_reduce(steps, ReduceOp::Sum)->wait();

  optim::TensorDict out;
  std::vector<Tensor> full;  // per elementwise state name: the whole flat vector
  for (const std::string& name : elementwise_state_) {
    send_.zero_();
    for (const Piece& piece : pieces_) {
      const optim::TensorDict* st = local_ ? local_->state_of(piece.view) : nullptr;
      if (st) send_.narrow(0, offset_[size_t(piece.param)] + piece.begin - shard_begin_, piece.len).copy_(st->at(name));
    }
    Tensor all = strata::zeros({shard_ * group_->size()}, TensorOptions(send_.dtype()).device(send_.device()));
    group_->all_gather(all, send_)->wait();
    full.push_back(all);
  }
  for (size_t i = 0; i < params.size(); ++i) {
    if (s[i] <= 0) continue;
    const std::string prefix = "state." + std::to_string(i) + ".";
    out.insert(prefix + "step", strata::scalar_tensor(s[i], DType::f64));
    for (size_t n = 0; n < elementwise_state_.size(); ++n)
      out.insert(prefix + elementwise_state_[n],
                 full[n].narrow(0, offset_[i], params[i].numel()).view(params[i].shape()).clone());
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
    if (!state.contains(prefix + "step")) continue;
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
    if (!state.contains(prefix + "step")) continue;
    const std::string lp = "state." + std::to_string(k) + ".";
    local.insert(lp + "step", state.at(prefix + "step"));
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
