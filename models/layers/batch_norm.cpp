#include "strata/models/layers/batch_norm.h"

#include "strata/autograd/checkpoint.h"
#include "strata/autograd/grad_mode.h"
#include "strata/core/factory.h"
#include "strata/core/memory_stats.h"
#include "strata/dist/functional.h"
#include "strata/ops/conv.h"
#include "strata/ops/elementwise.h"
#include "strata/ops/reduction.h"
#include "strata/ops/shape_ops.h"

namespace strata::nn {

BatchNorm2d::BatchNorm2d(const BatchNormOptions& o) : options_(o) {
  STRATA_CHECK(o.num_features() > 0, ValueError, "BatchNorm2d: num_features must be positive, got ", o.num_features());
  STRATA_CHECK(is_floating(o.dtype()), TypeError, "BatchNorm2d: dtype must be floating, got ", dtype_name(o.dtype()));
  const int64_t C = o.num_features();
  MemoryCategoryGuard category(MemoryCategory::Parameter);
  if (o.affine()) {
    weight = register_parameter("weight", Tensor::empty({C}, o.dtype()));
    bias = register_parameter("bias", Tensor::empty({C}, o.dtype()));
  }
  if (o.track_running_stats()) {
    running_mean = register_buffer("running_mean", Tensor::empty({C}, o.dtype()));
    running_var = register_buffer("running_var", Tensor::empty({C}, o.dtype()));
    num_batches_tracked = register_buffer("num_batches_tracked", Tensor::empty({}, DType::i64));
  }
  reset_parameters();
}

void BatchNorm2d::reset_parameters() {
  NoGradGuard no_grad;
  if (weight.defined()) weight.fill_(1.0);
  if (bias.defined()) bias.zero_();
  if (running_mean.defined()) running_mean.zero_();
  if (running_var.defined()) running_var.fill_(1.0);
  if (num_batches_tracked.defined()) num_batches_tracked.zero_();
}

Tensor BatchNorm2d::forward(const Tensor& x) {
  STRATA_CHECK(x.dim() == 4 && x.size(1) == options_.num_features(), ShapeError, "BatchNorm2d(",
               options_.num_features(), "): expects x [N, ", options_.num_features(), ", H, W], got ",
               shape_str(x.shape()));
  const bool batch_stats = is_training() || !running_mean.defined();
  // torch counts batches only to offer momentum=None (cumulative averages); kept for state dicts.
  if (is_training() && num_batches_tracked.defined() && !autograd::in_recompute() && !x.device().is_meta()) {
    NoGradGuard no_grad;
    num_batches_tracked.fill_(double(num_batches_tracked.item()) + 1.0);
  }
  if (batch_stats && group_ && group_->size() > 1 && !x.device().is_meta()) return forward_synced(x);
  return ops::batch_norm(x, running_mean, running_var, weight, bias, batch_stats,
                         options_.momentum(), options_.eps());
}

// Statistics over every rank's batch, in two passes as the single-process kernel's: the mean
// from the summed per-channel sums and counts, then the biased variance from the summed squared
// deviations. Autograd carries the gradient through both sums (their backward sums over ranks).
Tensor BatchNorm2d::forward_synced(const Tensor& x) {
  const int64_t C = options_.num_features();
  const DType dt = x.dtype() == DType::f64 ? DType::f64 : DType::f32;
  const Tensor xc = x.dtype() == dt ? x : x.to(dt);
  const std::vector<int64_t> reduced = {0, 2, 3};
  const Shape per_channel = {1, C, 1, 1};
  const double local_count = double(x.numel() / C);
  const Tensor sums = dist::all_reduce_sum(
      ops::cat({ops::sum(xc, reduced), full({1}, local_count, TensorOptions(dt).device(x.device()))}),
      group_);
  const double count = ops::narrow(sums, 0, C, 1).item();
  STRATA_CHECK(count > 1, ValueError, "BatchNorm2d(", C,
               "): training needs more than one value per channel over the ", group_->size(), " ranks, got ",
               count);
  const Tensor mean = ops::mul(ops::narrow(sums, 0, 0, C), 1.0 / count);
  const Tensor centered = ops::sub(xc, ops::view(mean, per_channel));
  const Tensor var =
      ops::mul(dist::all_reduce_sum(ops::sum(ops::square(centered), reduced), group_), 1.0 / count);
  Tensor y = ops::mul(centered, ops::view(ops::rsqrt(ops::add(var, options_.eps())), per_channel));
  if (weight.defined())
    y = ops::add(ops::mul(y, ops::view(weight.to(dt), per_channel)), ops::view(bias.to(dt), per_channel));
  if (running_mean.defined() && !autograd::in_recompute()) {
    NoGradGuard no_grad;
    const double m = options_.momentum();
    running_mean.copy_(ops::add(ops::mul(running_mean, 1.0 - m), ops::mul(mean.to(running_mean.dtype()), m)));
    running_var.copy_(ops::add(ops::mul(running_var, 1.0 - m),
                               ops::mul(var.to(running_var.dtype()), m * count / (count - 1.0))));
  }
  return y.dtype() == x.dtype() ? y : y.to(x.dtype());
}

int64_t convert_sync_batchnorm(Module& root, const std::shared_ptr<dist::ProcessGroup>& group) {
  int64_t found = 0;
  for (const auto& m : root.modules())
    if (auto* bn = dynamic_cast<BatchNorm2d*>(m.get())) {
      bn->set_process_group(group);
      ++found;
    }
  return found;
}

}  // namespace strata::nn
