// Weights and gradients paged to host memory and NVMe (memory::ParamPager) on the sim device: the
// bits of the run that keeps them on the device, with every cache policy and with the optimizer's
// state placed too; the device holding a few blocks' weights at a time; touches outside any block
// brought back on demand; the pager's end giving the weights back.
#include "strata/memory/param_pager.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "strata/memory/nvme_state_store.h"
#include "strata/models/gpt.h"
#include "strata/strata.h"
#include "support/spill_room.h"

using namespace strata;
using memory::ParamPager;
using optim::StatePlacement;

namespace {

const Device kSim(DeviceType::Sim, 0);

models::GPTConfig config() {
  models::GPTConfig c = models::GPTConfig::preset("tiny");
  c.n_layer = 4;
  c.dropout = 0.1;  // replayed by recompute: the masks must match
  return c;
}

std::shared_ptr<optim::StateStore> store_for(StatePlacement where, uint64_t bytes, size_t tensors,
                                             const std::string& what) {
  if (where == StatePlacement::Host) return optim::make_host_state_store(kSim);
  if (where == StatePlacement::Device) return nullptr;
  memory::NvmeStateSettings s;
  s.dir = test::spill_dir("param_pager");
  s.capacity = memory::nvme_state_capacity(bytes, tensors);
  s.chunk_bytes = 16 << 10;  // several chunks per matrix
  s.what = what;
  return memory::make_nvme_state_store(s);
}

struct Placement {
  StatePlacement weights = StatePlacement::Device, gradients = StatePlacement::Device,
                 optimizer = StatePlacement::Device;
  std::string policy = "keep";
  bool before_move = false;  // paged while the model is on the CPU, then moved to the device
};

struct PagedRun {
  std::vector<double> losses;
  std::vector<std::vector<double>> weights;  // after the last step
  memory::PagerStats stats;
  int64_t weight_peak = 0;  // the sim device's Parameter bytes at their highest over the steps
  size_t paged = 0;
};

PagedRun train(const Placement& where, int steps = 3) {
  manual_seed(11);
  const models::GPTConfig c = config();
  models::GPT model(c);
  uint64_t bytes = 0;
  for (const Tensor& p : model.parameters()) bytes += p.nbytes();
  auto page = [&] {
    if (where.weights == StatePlacement::Device && where.gradients == StatePlacement::Device)
      return std::shared_ptr<ParamPager>();
    memory::ParamPagerSettings s;
    s.weights = where.weights;
    s.gradients = where.gradients;
    s.weight_store = store_for(where.weights, bytes, model.parameters().size(), "weights");
    s.gradient_store = store_for(where.gradients, bytes, model.parameters().size(), "gradients");
    return ParamPager::create(model, kSim, s);
  };
  std::shared_ptr<ParamPager> pager;
  if (where.before_move) pager = page();
  backend_for(kSim).allocator(0).stats().reset_peaks();
  model.to(kSim);
  if (!where.before_move) {
    pager = page();
    backend_for(kSim).allocator(0).stats().reset_peaks();  // the peak of training, not of the move
  }
  const std::vector<Tensor> params = model.parameters();
  optim::AdamW opt(params, optim::AdamWOptions(1e-2).weight_decay(0.1));
  if (where.optimizer != StatePlacement::Device)
    opt.place_state(store_for(where.optimizer, 2 * bytes, 2 * params.size(), "optimizer state"));
  memory::TensorCacheOptions o;
  o.device = kSim;
  o.min_bytes = 0;
  o.host_pool_bytes = 16 << 20;
  auto cache = memory::TensorCache::create(o, memory::parse_cache_policy(where.policy, 0));
  Allocator& device_memory = backend_for(kSim).allocator(0);
  PagedRun run;
  for (int step = 0; step < steps; ++step) {
    std::vector<int64_t> xs(32), ys(32);
    for (int64_t i = 0; i < 32; ++i)
      xs[size_t(i)] = (i * 37 + 5 * step) % c.vocab_size, ys[size_t(i)] = (i * 53 + 1 + step) % c.vocab_size;
    Tensor x = ops::from_vector(xs, {2, 16}).to(kSim), y = ops::from_vector(ys, {2, 16}).to(kSim);
    {
      autograd::SavePolicyGuard guard(pager ? pager->wrap(cache) : cache);
      cache->begin_step();
      Tensor loss = model.loss(x, y);
      run.losses.push_back(loss.item());
      opt.zero_grad();
      loss.backward();
      cache->end_step();
    }
    optim::clip_grad_norm_(params, 0.5);
    opt.step();
    if (pager) pager->end_step();
  }
  run.weight_peak = device_memory.stats().snapshot().peak_of(MemoryCategory::Parameter);
  if (pager) {
    run.stats = pager->stats();  // before the reads below, which load on demand
    run.paged = pager->paged_parameters();
  }
  for (const Tensor& p : params) {
    run.weights.push_back(p.to_double_vector());
    release_paged(p);
  }
  return run;
}

void expect_same_run(const PagedRun& got, const PagedRun& want, const std::string& what) {
  EXPECT_EQ(got.losses, want.losses) << what;
  ASSERT_EQ(got.weights.size(), want.weights.size()) << what;
  for (size_t i = 0; i < got.weights.size(); ++i)
    EXPECT_EQ(got.weights[i], want.weights[i]) << what << ": parameter " << i;
}

}  // namespace

TEST(ParamPager, EveryPlacementGivesTheBitsOfTheDeviceRun) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  using P = StatePlacement;
  const PagedRun device = train({});
  ASSERT_EQ(device.losses.size(), 3u);
  EXPECT_LT(device.losses.back(), device.losses.front());
  const Placement cases[] = {
      {P::Host, P::Device, P::Device, "keep"},     {P::Device, P::Host, P::Device, "keep"},
      {P::Host, P::Host, P::Host, "keep"},         {P::Nvme, P::Device, P::Device, "keep"},
      {P::Device, P::Nvme, P::Device, "keep"},     {P::Nvme, P::Nvme, P::Nvme, "keep"},
      {P::Host, P::Host, P::Device, "recompute"},  {P::Nvme, P::Nvme, P::Host, "host"},
      {P::Host, P::Host, P::Device, "keep", true}, {P::Nvme, P::Nvme, P::Nvme, "recompute", true},
  };
  for (const Placement& where : cases) {
    const std::string what = std::string("weights ") + optim::state_placement_name(where.weights) +
                             ", gradients " + optim::state_placement_name(where.gradients) +
                             ", optimizer state " + optim::state_placement_name(where.optimizer) +
                             ", cache " + where.policy;
    const PagedRun paged = train(where);
    expect_same_run(paged, device, what);
    EXPECT_EQ(paged.paged, 4u * 12u) << what;  // every parameter of the 4 blocks
    if (where.weights != P::Device) {
      EXPECT_GT(paged.stats.weight_bytes_in, 0u) << what;
      EXPECT_GT(paged.stats.weight_bytes_out, 0u) << what;  // the updated weights went home
      EXPECT_LT(paged.weight_peak, device.weight_peak) << what;
    }
    if (where.gradients != P::Device) EXPECT_GT(paged.stats.gradient_bytes_out, 0u) << what;
  }
  std::filesystem::remove_all(test::spill_dir("param_pager"));
}

TEST(ParamPager, TheDeviceHoldsTheBlocksUnderWayAndThoseOutsideBlocks) {
  using P = StatePlacement;
  const PagedRun device = train({}, 1);
  const PagedRun paged = train({P::Host, P::Host, P::Device, "keep"}, 1);
  // tiny GPT with 4 blocks: the blocks' weights are most of it; at most the block running and the
  // one loading ahead are on the device, besides the embeddings and the final norm.
  manual_seed(11);
  models::GPT model(config());
  int64_t outside = 0, per_block = 0;
  for (const auto& [name, p] : model.named_parameters()) {
    if (name.rfind("transformer.h.0.", 0) == 0) per_block += int64_t(p.nbytes());
    if (name.find(".h.") == std::string::npos) outside += int64_t(p.nbytes());
  }
  ASSERT_GT(per_block, 0);
  EXPECT_EQ(device.weight_peak, outside + 4 * per_block);
  EXPECT_LE(paged.weight_peak, outside + 2 * per_block);
  EXPECT_EQ(paged.stats.demand_loads, 0u) << "every block's weights were loaded ahead";
}

TEST(ParamPager, TouchesOutsideBlocksLoadOnDemandAndTheEndGivesTheWeightsBack) {
  manual_seed(3);
  models::GPT model(config());
  model.to(kSim);
  std::vector<std::vector<double>> before;
  for (const Tensor& p : model.parameters()) before.push_back(p.to_double_vector());
  memory::ParamPagerSettings s;
  s.weights = StatePlacement::Host;
  s.weight_store = optim::make_host_state_store(kSim);
  auto pager = ParamPager::create(model, kSim, s);
  const std::vector<Tensor> params = model.parameters();
  size_t away = 0;
  for (const Tensor& p : params) away += p.storage()->resident() ? 0 : 1;
  EXPECT_EQ(away, pager->paged_parameters());
  // Read with no block running: each comes back on demand, and goes again when handed back.
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(params[i].to_double_vector(), before[i]) << "parameter " << i;
    release_paged(params[i]);
  }
  EXPECT_EQ(pager->stats().demand_loads, pager->paged_parameters());
  // A write while away reaches home, then the device after the pager ends.
  size_t k = 0;
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i].storage()->pager() != nullptr) k = i;
  ASSERT_FALSE(params[k].storage()->resident());
  {
    NoGradGuard no_grad;
    Tensor(params[k]).fill_(0.5);
  }
  release_paged(params[k]);
  EXPECT_FALSE(params[k].storage()->resident());
  pager.reset();
  for (const Tensor& p : params) {
    EXPECT_TRUE(p.storage()->resident());
    EXPECT_EQ(p.storage()->pager(), nullptr);
  }
  for (size_t i = 0; i < params.size(); ++i)
    EXPECT_EQ(params[i].to_double_vector(),
              i == k ? std::vector<double>(size_t(params[k].numel()), 0.5) : before[i])
        << "parameter " << i;
}

TEST(ParamPager, MissingStoresAreRefusedNamingThePlacement) {
  models::GPT model(config());
  memory::ParamPagerSettings s;
  s.weights = StatePlacement::Nvme;
  try {
    ParamPager::create(model, kCPU, s);
    FAIL() << "no weight store";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("weights placed in nvme"), std::string::npos) << e.what();
  }
}
