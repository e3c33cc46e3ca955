#include "strata/models/layers/batch_norm.h"

#include "strata/autograd/checkpoint.h"
#include "strata/autograd/grad_mode.h"
#include "strata/core/memory_stats.h"
#include "strata/ops/conv.h"

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
  return ops::batch_norm(x, running_mean, running_var, weight, bias, batch_stats,
                         options_.momentum(), options_.eps());
}

}  // namespace strata::nn
