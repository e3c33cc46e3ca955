// SyncBatchNorm (BatchNorm2d with a process group) on the in-process backend: two ranks holding
// the halves of a batch normalize, differentiate and update their running statistics as one
// BatchNorm2d over the whole batch does.
#include <gtest/gtest.h>

#include "strata/dist/functional.h"
#include "strata/models/layers/batch_norm.h"
#include "strata/models/resnet.h"
#include "strata/ops.h"
#include "tests/dist/dist_test_util.h"
#include "tests/support/tensor_compare.h"

using namespace strata;
using strata::dist::testing::run_ranks;
using strata::testing::max_rel_err;

namespace {

struct Batch {
  Tensor x, c;  // x [N, 3, 2, 2]; the loss is sum(c * y^2)
};

// A batch whose second part has other statistics than its first (a rank's own batch would
// normalize differently from the whole).
Batch make_batch(int64_t n) {
  manual_seed(5);
  Batch b{randn({n, 3, 2, 2}, DType::f64), randn({n, 3, 2, 2}, DType::f64)};
  b.x = ops::add(b.x, ops::mul(ops::view(arange(0, double(n), 1, DType::f64), {n, 1, 1, 1}), 0.7));
  return b;
}

std::shared_ptr<nn::BatchNorm2d> make_bn() {
  auto bn = std::make_shared<nn::BatchNorm2d>(nn::BatchNormOptions(3).dtype(DType::f64).momentum(0.3));
  NoGradGuard ng;
  bn->weight.copy_(from_vector(std::vector<double>{0.5, -1.5, 2.0}, {3}, DType::f64));
  bn->bias.copy_(from_vector(std::vector<double>{0.1, 0.2, -0.3}, {3}, DType::f64));
  return bn;
}

struct Result {
  Tensor y, x_grad, w_grad, b_grad, running_mean, running_var;
};

Result train_step(nn::BatchNorm2d& bn, const Tensor& x_in, const Tensor& c) {
  Tensor x = x_in.detach().clone();
  x.set_requires_grad(true);
  Tensor y = bn(x);
  ops::sum(ops::mul(c, ops::square(y))).backward();
  return {y.detach(),
          x.grad(),
          bn.weight.grad(),
          bn.bias.grad(),
          bn.running_mean.clone(),
          bn.running_var.clone()};
}

}  // namespace

// Rank 0 holds samples [0, 3), rank 1 sample 3 (counts differ); each rank's loss is its part of
// the whole batch's, so the input gradients equal the whole batch's rows and the parameter
// gradients sum to the whole batch's.
TEST(SyncBatchNorm, TwoRanksNormalizeAsOneBatch) {
  const Batch whole = make_batch(4);
  auto reference = make_bn();
  const Result want = train_step(*reference, whole.x, whole.c);
  const int64_t starts[] = {0, 3, 4};
  std::vector<Result> got(2), alone(2);
  run_ranks(2, [&](int rank, std::shared_ptr<dist::ProcessGroup> pg) {
    const int64_t a = starts[rank], n = starts[rank + 1] - a;
    const Tensor x = ops::narrow(whole.x, 0, a, n), c = ops::narrow(whole.c, 0, a, n);
    auto bn = make_bn();
    bn->set_process_group(pg);
    Result r = train_step(*bn, x, c);
    r.w_grad = dist::all_reduce_sum(r.w_grad, pg);
    r.b_grad = dist::all_reduce_sum(r.b_grad, pg);
    EXPECT_EQ(bn->num_batches_tracked.item(), 1.0);
    got[size_t(rank)] = r;
    if (rank == 0) alone[0] = train_step(*make_bn(), x, c);  // no group: its own statistics
  });
  for (int rank = 0; rank < 2; ++rank) {
    const int64_t a = starts[rank], n = starts[rank + 1] - a;
    const Result& r = got[size_t(rank)];
    EXPECT_LT(max_rel_err(r.y, ops::narrow(want.y, 0, a, n)), 1e-13) << "rank " << rank;
    EXPECT_LT(max_rel_err(r.x_grad, ops::narrow(want.x_grad, 0, a, n)), 1e-12) << "rank " << rank;
    EXPECT_LT(max_rel_err(r.w_grad, want.w_grad), 1e-12) << "rank " << rank;
    EXPECT_LT(max_rel_err(r.b_grad, want.b_grad), 1e-12) << "rank " << rank;
    EXPECT_LT(max_rel_err(r.running_mean, want.running_mean), 1e-13) << "rank " << rank;
    EXPECT_LT(max_rel_err(r.running_var, want.running_var), 1e-13) << "rank " << rank;
  }
  // The check has power: rank 0's batch alone normalizes otherwise.
  EXPECT_GT(max_rel_err(alone[0].y, ops::narrow(want.y, 0, 0, 3)), 1e-2);
  EXPECT_GT(max_rel_err(alone[0].running_var, want.running_var), 1e-2);
}

// Evaluation uses the running statistics and no collective: one rank alone evaluates without
// waiting for the other.
TEST(SyncBatchNorm, EvaluationTakesNoCollective) {
  const Batch b = make_batch(2);
  run_ranks(2,
            [&](int rank, std::shared_ptr<dist::ProcessGroup> pg) {
              if (rank != 0) return;
              auto bn = make_bn();
              bn->set_process_group(pg);
              bn->eval();
              NoGradGuard ng;
              const Tensor y = (*bn)(b.x);
              auto plain = make_bn();
              plain->eval();
              EXPECT_EQ(max_rel_err(y, (*plain)(b.x)), 0.0);
            },
            {.timeout = std::chrono::milliseconds(2000)});
}

TEST(SyncBatchNorm, ConvertGivesEveryBatchNormOfAResNetTheGroup) {
  auto groups = dist::make_local_group(1);
  models::ResNetConfig config = models::ResNetConfig::preset("resnet18-cifar");
  config.width = 4;
  models::ResNet model(config);
  EXPECT_EQ(nn::convert_sync_batchnorm(model, groups[0]), 20);  // stem, 2 per block, 3 downsamples
  EXPECT_EQ(model.bn1->process_group(), groups[0]);
}
