// The tensor cache on a real device backend (sim:0 always, cuda:0 where a GPU is present; the cuda
// cases skip without one): a small GPT's step through the host tier, the NVMe tier (staged and
// direct) and recompute on the device gives the keep-all step's loss and gradients bit for bit,
// and the tiers really moved the bytes.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "strata/models/gpt.h"
#include "strata/strata.h"
#include "support/spill_room.h"

using namespace strata;
using namespace strata::memory;

namespace {

struct Step {
  double loss = 0;
  std::vector<std::vector<double>> grads;
  CacheStats stats;
};

Step gpt_step(Device dev, const std::string& policy, const TensorCacheOptions& base) {
  manual_seed(11);
  models::GPTConfig c = models::GPTConfig::preset("tiny");
  c.dropout = 0.1;  // replayed by recompute: the masks must match
  models::GPT model(c);
  model.to(dev);
  std::vector<int64_t> xs(32), ys(32);
  for (int64_t i = 0; i < 32; ++i)
    xs[size_t(i)] = (i * 37 + 5) % c.vocab_size, ys[size_t(i)] = (i * 53 + 1) % c.vocab_size;
  Tensor x = ops::from_vector(xs, {2, 16}).to(dev), y = ops::from_vector(ys, {2, 16}).to(dev);
  TensorCacheOptions o = base;
  o.device = dev;
  o.min_bytes = 0;
  auto cache = TensorCache::create(o, parse_cache_policy(policy, 0));
  Step s;
  {
    autograd::SavePolicyGuard guard(cache);
    cache->begin_step();
    Tensor loss = model.loss(x, y);
    cache->wait_for_stores();  // every store lands before backward: the loads really run
    loss.backward();
    s.loss = loss.item();
  }
  s.stats = cache->end_step();
  for (const Tensor& p : model.parameters()) s.grads.push_back(p.grad().to_double_vector());
  return s;
}

class CacheOnDevice : public ::testing::TestWithParam<DeviceType> {
 protected:
  void SetUp() override {
    (void)backend_for(kCPU);
    auto& reg = BackendRegistry::instance();
    if (!reg.has(GetParam()) || reg.get(GetParam()).device_count() == 0)
      GTEST_SKIP() << "no such device here";
  }
  Device device() const { return Device(GetParam(), 0); }
};

void expect_same_step(const Step& got, const Step& want) {
  EXPECT_EQ(got.loss, want.loss);
  ASSERT_EQ(got.grads.size(), want.grads.size());
  for (size_t i = 0; i < got.grads.size(); ++i) EXPECT_EQ(got.grads[i], want.grads[i]) << "parameter " << i;
  EXPECT_EQ(got.stats.fallbacks, 0u);
  EXPECT_EQ(got.stats.forwarded, 0u);
}

}  // namespace

TEST_P(CacheOnDevice, HostTierAndRecomputeGiveTheKeepAllStep) {
  TensorCacheOptions o;
  o.host_pool_bytes = 64 << 20;
  const Step keep = gpt_step(device(), "keep", o);
  const Step host = gpt_step(device(), "host", o);
  expect_same_step(host, keep);
  EXPECT_GT(host.stats.host.bytes_written, 0u);
  const Step recompute = gpt_step(device(), "recompute", o);
  expect_same_step(recompute, keep);
  EXPECT_GT(recompute.stats.segments, 0u);
}

TEST_P(CacheOnDevice, NvmeTierStagedAndDirectGiveTheKeepAllStep) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  TensorCacheOptions o;
  o.spill_dir = test::spill_dir("device_cache");
  o.spill_arena_bytes = 64 << 20;
  const Step keep = gpt_step(device(), "keep", o);
  for (DeviceIo io : {DeviceIo::Staged, DeviceIo::Auto}) {
    o.device_io = io;
    const Step nvme = gpt_step(device(), "nvme", o);
    SCOPED_TRACE(nvme.stats.device_io);
    expect_same_step(nvme, keep);
    EXPECT_GT(nvme.stats.nvme.bytes_written, 0u);
    EXPECT_EQ(nvme.stats.nvme.bytes_read, nvme.stats.nvme.bytes_written);
  }
  std::filesystem::remove_all(o.spill_dir);
}

INSTANTIATE_TEST_SUITE_P(Devices, CacheOnDevice, ::testing::Values(DeviceType::Sim, DeviceType::CUDA),
                         [](const ::testing::TestParamInfo<DeviceType>& i) {
                           return i.param == DeviceType::Sim ? std::string("sim") : std::string("cuda");
                         });
