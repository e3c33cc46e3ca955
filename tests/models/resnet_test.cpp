// ResNet against PyTorch (tools/goldens/resnet_goldens.py): logits, loss, every parameter
// gradient, BatchNorm running statistics, SGD steps and eval-mode logits, in f64 (Strata's
// im2col convolution) and f32 (oneDNN); torchvision's names and parameter counts; identical
// gradients and running statistics under every tensor-cache policy.
#include "strata/models/resnet.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "strata/strata.h"
#include "support/fixture_file.h"
#include "support/spill_room.h"
#include "support/tensor_compare.h"

using namespace strata;
using strata::testing::FixtureFile;
using strata::testing::max_rel_err;

namespace {

FixtureFile fixture(const std::string& name) {
  return FixtureFile(std::string(STRATA_TEST_DATA_DIR) + "/goldens/resnet/resnet_" + name + ".safetensors");
}

models::ResNetConfig config_of(const FixtureFile& f) {
  nlohmann::json c = nlohmann::json::parse(f.metadata("config"));
  models::ResNetConfig r;
  r.block = c["block"] == "basic" ? models::ResNetBlock::Basic : models::ResNetBlock::Bottleneck;
  r.layers = c["layers"].get<std::vector<int64_t>>();
  r.width = c["width"], r.num_classes = c["classes"];
  r.stem = c["stem"] == "cifar" ? models::ResNetStem::Cifar : models::ResNetStem::ImageNet;
  return r;
}

bool is_counter(const std::string& name) { return name.size() > 19 && name.ends_with("num_batches_tracked"); }

std::shared_ptr<models::ResNet> load_model(const FixtureFile& f, DType dtype) {
  auto m = std::make_shared<models::ResNet>(config_of(f));
  m->to(dtype);
  nn::StateDict sd;
  for (const std::string& n : f.names("param."))
    sd.insert(n, f.tensor("param." + n, is_counter(n) ? DType::i64 : dtype));
  m->load_state_dict(sd);
  return m;
}

struct Tolerance {
  double logits, loss, grad, stats;
};
Tolerance tolerance(DType dt) {
  return dt == DType::f64 ? Tolerance{1e-6, 1e-10, 1e-6, 1e-6} : Tolerance{1e-4, 1e-5, 2e-3, 1e-4};
}

}  // namespace

class ResNetParity : public ::testing::TestWithParam<std::tuple<const char*, DType>> {
 protected:
  FixtureFile f = fixture(std::get<0>(GetParam()));
  DType dt = std::get<1>(GetParam());
  Tolerance tol = tolerance(dt);
};

// One training-mode batch: logits, loss, every gradient, and the running statistics it updated.
TEST_P(ResNetParity, LogitsLossGradientsAndRunningStatsMatchPyTorch) {
  auto model = load_model(f, dt);
  model->train();
  Tensor images = f.tensor("images", dt), labels = f.tensor("labels", DType::i64);
  Tensor logits = (*model)(images);
  EXPECT_LT(max_rel_err(logits, f.tensor("logits")), tol.logits);
  Tensor loss = ops::cross_entropy(logits, labels);
  EXPECT_NEAR(loss.item(), std::stod(f.metadata("loss")), tol.loss);
  loss.backward();
  int grads = 0, stats = 0;
  for (const auto& [name, p] : model->named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
    EXPECT_LT(max_rel_err(p.grad(), f.tensor("grad." + name)), tol.grad) << name;
    ++grads;
  }
  EXPECT_EQ(grads, int(f.names("grad.").size()));
  for (const auto& [name, b] : model->named_buffers()) {
    if (is_counter(name)) {
      EXPECT_EQ(b.item(), 1.0) << name;
      continue;
    }
    EXPECT_LT(max_rel_err(b, f.tensor("after1." + name)), tol.stats) << name;
    ++stats;
  }
  EXPECT_EQ(stats, int(f.names("after1.").size()));
}

// Four SGD steps (momentum 0.9, weight decay 1e-4) give PyTorch's losses, parameters and running
// statistics; the trained model in eval mode gives its logits.
TEST_P(ResNetParity, SgdStepsAndEvalModeMatchPyTorch) {
  auto model = load_model(f, dt);
  model->train();
  Tensor images = f.tensor("images", dt), labels = f.tensor("labels", DType::i64);
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.05).momentum(0.9).weight_decay(1e-4));
  std::vector<double> want = nlohmann::json::parse(f.metadata("sgd_losses")).get<std::vector<double>>();
  for (size_t step = 0; step < want.size(); ++step) {
    Tensor loss = ops::cross_entropy((*model)(images), labels);
    EXPECT_NEAR(loss.item(), want[step], (dt == DType::f64 ? 1e-9 : 1e-4) * std::abs(want[step])) << "step " << step;
    opt.zero_grad();
    loss.backward();
    opt.step();
  }
  for (const auto& [name, t] : model->state_dict()) {
    if (is_counter(name)) continue;
    EXPECT_LT(max_rel_err(t, f.tensor("final." + name)), dt == DType::f64 ? 1e-6 : 2e-3) << name;
  }
  model->eval();
  NoGradGuard no_grad;
  EXPECT_LT(max_rel_err((*model)(images), f.tensor("eval_logits")), dt == DType::f64 ? 1e-6 : 2e-3);
}

INSTANTIATE_TEST_SUITE_P(Configs, ResNetParity,
                         ::testing::Combine(::testing::Values("bottleneck_odd", "basic_cifar"),
                                            ::testing::Values(DType::f64, DType::f32)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param)) +
                                  (std::get<1>(info.param) == DType::f64 ? "_f64" : "_f32");
                         });

TEST(ResNet, PresetsHaveTorchvisionParameterCountsAndNames) {
  // (resnet34/101/152 differ from these only in blocks per stage; building them costs seconds)
  const std::pair<const char*, int64_t> want[] = {{"resnet18", 11689512}, {"resnet50", 25557032}};
  for (const auto& [name, count] : want) {
    models::ResNetConfig c = models::ResNetConfig::preset(name);
    models::ResNet m(c);
    EXPECT_EQ(m.num_parameters(), count) << name;
    if (std::string(name) == "resnet50") {
      std::set<std::string> names;
      for (const auto& [n, t] : m.state_dict()) names.insert(n);
      for (const char* n : {"conv1.weight", "bn1.running_var", "layer1.0.conv3.weight", "layer1.0.downsample.0.weight",
                            "layer2.0.downsample.1.num_batches_tracked", "layer4.2.bn3.bias", "fc.weight", "fc.bias"})
        EXPECT_TRUE(names.count(n)) << n;
      EXPECT_EQ(names.size(), 320u);  // torchvision's resnet50 state_dict
    }
  }
  EXPECT_EQ(models::ResNetConfig::preset("resnet34").layers, (std::vector<int64_t>{3, 4, 6, 3}));
  EXPECT_EQ(models::ResNetConfig::preset("resnet101").layers, (std::vector<int64_t>{3, 4, 23, 3}));
  EXPECT_EQ(models::ResNetConfig::preset("resnet152").layers, (std::vector<int64_t>{3, 8, 36, 3}));
  models::ResNetConfig cifar = models::ResNetConfig::preset("resnet18-cifar");
  EXPECT_EQ(cifar.stem, models::ResNetStem::Cifar);
  EXPECT_EQ(cifar.num_classes, 10);
  EXPECT_THROW(models::ResNetConfig::preset("resnet19"), ValueError);
}

TEST(ResNet, BlocksArePlannerBlocksAndShapesFollowTheStem) {
  models::ResNetConfig c = models::ResNetConfig::preset("resnet18");
  c.width = 4, c.num_classes = 5;
  models::ResNet m(c);
  int blocks = 0;
  for (const auto& [name, mod] : m.named_modules())
    if (mod->is_block()) {
      ++blocks;
      EXPECT_EQ(name.rfind("layer", 0), 0u) << name;
    }
  EXPECT_EQ(blocks, 8);
  NoGradGuard no_grad;
  EXPECT_EQ(m(ops::randn({2, 3, 64, 48})).shape(), (Shape{2, 5}));
  models::ResNetConfig cc = models::ResNetConfig::preset("resnet18-cifar");
  cc.width = 4;
  EXPECT_EQ(models::ResNet(cc)(ops::randn({1, 3, 32, 32})).shape(), (Shape{1, 10}));
  EXPECT_THROW(m(ops::randn({2, 1, 32, 32})), ShapeError);
}

// The planner's dry runs: ResNet-50 on Meta tensors runs forward and backward by shapes alone
// and reports its convolutions' FLOPs (4.1 GMACs per 224x224 image, as torchvision's table).
TEST(ResNet, Resnet50RunsOnMetaTensorsWithTorchvisionFlops) {
  models::ResNet m(models::ResNetConfig::preset("resnet50"));
  m.to(kMeta);
  m.train();
  CostCounter counter;
  Tensor loss;
  {
    OpObserverGuard guard(&counter);
    Tensor x = ops::empty({2, 3, 224, 224}, TensorOptions().device(kMeta));
    Tensor y = ops::zeros({2}, TensorOptions().dtype(DType::i64).device(kMeta));
    loss = ops::cross_entropy(m(x), y);
  }
  const double gmacs_per_image = counter.total.flops / 2.0 / 2.0 * 1e-9;
  EXPECT_NEAR(gmacs_per_image, 4.1, 0.15);
  loss.backward();
  for (const auto& [name, p] : m.named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
    EXPECT_TRUE(p.grad().device().is_meta()) << name;
  }
}

// ---- tensor-cache policies: bit-identical gradients, losses and running statistics ----

namespace {

struct TrainRun {
  std::vector<double> losses;
  std::vector<std::vector<float>> grads;  // after step 0
  std::vector<std::vector<float>> buffers;  // after the last step
  std::vector<memory::CacheStats> stats;
};

models::ResNetConfig cache_config() {
  models::ResNetConfig c = models::ResNetConfig::preset("resnet18-cifar");
  c.layers = {1, 1, 1};
  c.width = 4;
  return c;
}

TrainRun train(std::shared_ptr<memory::TensorCache> cache, int steps) {
  manual_seed(7);
  models::ResNet model(cache_config());
  model.train();
  optim::SGD opt(model.parameters(), optim::SGDOptions(0.05).momentum(0.9));
  TrainRun run;
  for (int step = 0; step < steps; ++step) {
    manual_seed(100 + step);
    Tensor x = ops::randn({4, 3, 12, 12});
    Tensor y = ops::from_vector(std::vector<int64_t>{1, 7, 3, int64_t(step)}, {4}, DType::i64);
    {
      std::optional<autograd::SavePolicyGuard> guard;
      if (cache) guard.emplace(cache), cache->begin_step();
      Tensor loss = ops::cross_entropy(model(x), y);
      run.losses.push_back(loss.item<double>());
      opt.zero_grad();
      loss.backward();
      if (cache) run.stats.push_back(cache->end_step());
    }
    if (step == 0)
      for (const Tensor& p : model.parameters())
        run.grads.emplace_back(p.grad().data<float>(), p.grad().data<float>() + p.numel());
    opt.step();
  }
  for (const auto& [name, b] : model.named_buffers()) {
    std::vector<double> v = b.to_double_vector();
    run.buffers.emplace_back(v.begin(), v.end());
  }
  return run;
}

void expect_identical(const TrainRun& a, const TrainRun& b, const std::string& what) {
  ASSERT_EQ(a.losses.size(), b.losses.size());
  for (size_t i = 0; i < a.losses.size(); ++i)
    EXPECT_EQ(std::memcmp(&a.losses[i], &b.losses[i], sizeof(double)), 0) << what << ": loss of step " << i;
  ASSERT_EQ(a.grads.size(), b.grads.size());
  for (size_t p = 0; p < a.grads.size(); ++p)
    EXPECT_EQ(std::memcmp(a.grads[p].data(), b.grads[p].data(), a.grads[p].size() * sizeof(float)), 0)
        << what << ": gradient of parameter " << p;
  ASSERT_EQ(a.buffers.size(), b.buffers.size());
  for (size_t i = 0; i < a.buffers.size(); ++i)
    EXPECT_EQ(a.buffers[i], b.buffers[i]) << what << ": buffer " << i << " (running statistics updated twice?)";
}

memory::TensorCacheOptions cache_options() {
  memory::TensorCacheOptions o;
  o.min_bytes = 0;
  o.host_pool_bytes = 8 << 20;
  o.spill_dir = strata::test::spill_dir("resnet");
  o.spill_arena_bytes = 16 << 20;
  o.io_chunk_bytes = 16384;
  o.sync_stores_before_backward = true;
  return o;
}

}  // namespace

TEST(ResNetCache, EveryPolicyGivesBitIdenticalGradientsAndRunningStats) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  const TrainRun ref = train(nullptr, 3);
  const int n_blocks = 3;
  for (const char* policy : {"keep", "recompute", "nvme", "rules:*=host"}) {
    SCOPED_TRACE(policy);
    auto cache = memory::TensorCache::create(cache_options(), memory::parse_cache_policy(policy, /*keep_last=*/0));
    TrainRun run = train(cache, 3);
    expect_identical(ref, run, policy);
    for (const memory::CacheStats& s : run.stats) {
      EXPECT_EQ(s.fallbacks, 0u);
      if (std::string(policy) == "recompute") {
        EXPECT_EQ(s.segments, size_t(n_blocks));
        EXPECT_EQ(s.segment_recomputes, size_t(n_blocks));
      }
      if (std::string(policy) == "nvme") {
        EXPECT_GT(s.nvme.bytes_written, 0u);
        EXPECT_EQ(s.nvme.bytes_read + s.nvme.bytes_reused, s.nvme.bytes_written);
      }
      if (std::string(policy) == "rules:*=host") {
        EXPECT_GT(s.host.bytes_written, 0u);
      }
    }
  }
}
