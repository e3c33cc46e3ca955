// Optimizer state placed outside the parameters' device (optim::StateStore): host memory and the
// NVMe spill file give the bits of the optimizer that keeps its state beside each parameter, on the
// CPU and on the sim device, through chunked updates, state dicts and placement after training.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "strata/io/checkpoint/checkpoint.h"
#include "strata/memory/nvme_state_store.h"
#include "strata/strata.h"
#include "support/error_of.h"
#include "support/spill_room.h"

using namespace strata;
using strata::testing::error_of;

namespace {

// Parameters of awkward sizes: an odd vector, a matrix over several 1024-element chunks, a scalar.
std::vector<Tensor> make_params(Device device, DType dtype) {
  manual_seed(7);
  std::vector<Tensor> out;
  for (const Shape& s : {Shape{37}, Shape{50, 61}, Shape{}, Shape{3, 1030}}) {
    Tensor p = ops::randn(s, TensorOptions(dtype)).to(device);
    p.set_requires_grad(true);
    out.push_back(p);
  }
  return out;
}

std::vector<Tensor> copies(const std::vector<Tensor>& params) {
  std::vector<Tensor> out;
  for (const Tensor& p : params) {
    Tensor c = p.detach().clone();
    c.set_requires_grad(true);
    out.push_back(c);
  }
  return out;
}

// Gives step `step`'s gradients (the same for both sets); parameter 2 has none on odd steps.
void set_grads(std::vector<Tensor>& params, int step) {
  manual_seed(100 + uint64_t(step));
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor g = ops::randn(params[i].shape(), TensorOptions(params[i].dtype())).to(params[i].device());
    params[i].set_grad(i == 2 && step % 2 == 1 ? Tensor() : g);
  }
}

void expect_same_bits(const std::vector<Tensor>& a, const std::vector<Tensor>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_EQ(a[i].to_double_vector(), b[i].to_double_vector()) << what << ": parameter " << i;
}

void expect_same_state(const optim::TensorDict& a, const optim::TensorDict& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (const auto& [key, t] : a) {
    ASSERT_TRUE(b.contains(key)) << what << ": " << key;
    EXPECT_EQ(t.shape(), b.at(key).shape()) << what << ": " << key;
    EXPECT_EQ(t.to_double_vector(), b.at(key).to_double_vector()) << what << ": " << key;
  }
}

using MakeOptimizer = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;

std::unique_ptr<optim::Optimizer> adamw(std::vector<Tensor> ps) {
  std::vector<Tensor> decay = {ps[1], ps[3]}, no_decay = {ps[0], ps[2]};
  return std::make_unique<optim::AdamW>(
      std::vector<optim::ParamGroup>{
          optim::ParamGroup(decay, optim::AdamWOptions(3e-2).weight_decay(0.1)),
          optim::ParamGroup(no_decay, optim::AdamWOptions(3e-2).weight_decay(0.0))},
      optim::AdamWOptions(3e-2));
}

std::unique_ptr<optim::Optimizer> sgd_nesterov(std::vector<Tensor> ps) {
  return std::make_unique<optim::SGD>(ps,
                                      optim::SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(1e-2));
}

std::unique_ptr<optim::Optimizer> sgd_plain(std::vector<Tensor> ps) {
  return std::make_unique<optim::SGD>(ps, optim::SGDOptions(0.1));
}

std::shared_ptr<optim::StateStore> nvme_store(uint64_t bytes, const memory::IoFaults& faults = {}) {
  memory::NvmeStateSettings s;
  s.dir = test::spill_dir("state_store");
  s.capacity = memory::nvme_state_capacity(bytes, 16);
  s.chunk_bytes = 4096;  // 1024 f32 elements: the matrices update in several chunks
  s.faults = faults;
  return memory::make_nvme_state_store(s);
}

// Three steps with the state beside the parameters and three with it in `store`: the same bits in
// parameters and state dict.
void check_placement(Device device, DType dtype, const MakeOptimizer& make,
                     const std::function<std::shared_ptr<optim::StateStore>(const optim::Optimizer&)>& store,
                     const std::string& what) {
  std::vector<Tensor> ref = make_params(device, dtype), placed = copies(ref);
  auto ref_opt = make(ref), placed_opt = make(placed);
  placed_opt->place_state(store(*placed_opt));
  for (int step = 1; step <= 3; ++step) {
    set_grads(ref, step);
    set_grads(placed, step);
    ref_opt->step();
    placed_opt->step();
  }
  expect_same_bits(ref, placed, what);
  expect_same_state(ref_opt->state_dict(), placed_opt->state_dict(), what);
}

}  // namespace

TEST(StatePlacement, HostStateGivesTheBitsOfStateBesideTheParameters) {
  for (Device device : {kCPU, sim(0)})
    for (DType dtype : {DType::f32, DType::f64})
      for (auto [make, name] : {std::pair<MakeOptimizer, const char*>{adamw, "AdamW"},
                                {sgd_nesterov, "SGD nesterov"},
                                {sgd_plain, "SGD"}})
        check_placement(
            device, dtype, make,
            [&](const optim::Optimizer&) { return optim::make_host_state_store(device); },
            std::string(name) + " on " + device.str() + " " + dtype_name(dtype));
}

TEST(StatePlacement, NvmeStateGivesTheBitsOfStateBesideTheParameters) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  for (Device device : {kCPU, sim(0)})
    for (auto [make, name] : {std::pair<MakeOptimizer, const char*>{adamw, "AdamW"}, {sgd_nesterov, "SGD"}}) {
      std::shared_ptr<optim::StateStore> kept;
      check_placement(
          device, DType::f32, make,
          [&](const optim::Optimizer& opt) { return kept = nvme_store(opt.state_bytes()); },
          std::string(name) + " on NVMe, " + device.str());
      EXPECT_GT(kept->bytes_written(), 0u);
      EXPECT_GT(kept->bytes_read(), 0u) << "steps 2 and 3 read what step 1 wrote";
    }
}

TEST(StatePlacement, StateMovesIntoAStoreAndComesBackThroughAStateDict) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  for (const char* where : {"host", "nvme"}) {
    std::vector<Tensor> ref = make_params(sim(0), DType::f32), moved = copies(ref), loaded = copies(ref);
    auto ref_opt = adamw(ref), moved_opt = adamw(moved), loaded_opt = adamw(loaded);
    auto store_for = [&](const optim::Optimizer& opt) {
      return std::string(where) == "host" ? optim::make_host_state_store(sim(0))
                                          : nvme_store(opt.state_bytes());
    };
    for (int step = 1; step <= 2; ++step) {
      set_grads(ref, step), set_grads(moved, step), set_grads(loaded, step);
      ref_opt->step(), moved_opt->step(), loaded_opt->step();
    }
    moved_opt->place_state(store_for(*moved_opt));  // state made beside the parameters moves in
    const optim::TensorDict saved = loaded_opt->state_dict();
    loaded_opt->place_state(store_for(*loaded_opt));
    loaded_opt->load_state_dict(saved);  // and a state dict loads into a store
    for (int step = 3; step <= 4; ++step) {
      set_grads(ref, step), set_grads(moved, step), set_grads(loaded, step);
      ref_opt->step(), moved_opt->step(), loaded_opt->step();
    }
    expect_same_bits(ref, moved, std::string(where) + ": moved after two steps");
    expect_same_bits(ref, loaded, std::string(where) + ": loaded after two steps");
    expect_same_state(ref_opt->state_dict(), loaded_opt->state_dict(), where);
    EXPECT_EQ(loaded_opt->state_dict().at("state.1.exp_avg").device(), kCPU);
  }
}

TEST(StatePlacement, PlacedStateTakesNoDeviceMemory) {
  std::vector<Tensor> ps = make_params(sim(0), DType::f32);
  auto opt = adamw(ps);
  opt->place_state(optim::make_host_state_store(sim(0)),
                   [&](size_t, const Tensor& p) { return p.impl() != ps[3].impl(); });
  MemoryStats& stats = backend_for(sim(0)).allocator(0).stats();
  const int64_t before = stats.snapshot().current_of(MemoryCategory::OptimizerState);
  set_grads(ps, 2);
  opt->step();
  // Only parameter 3's moments are on the device: 2 x 3 x 1030 floats.
  EXPECT_EQ(stats.snapshot().current_of(MemoryCategory::OptimizerState) - before, int64_t(2 * 3 * 1030 * 4));
  EXPECT_EQ(opt->state_store()->bytes(), uint64_t(2 * (37 + 50 * 61 + 1) * 4));
  EXPECT_TRUE(opt->state_placed(0));
  EXPECT_FALSE(opt->state_placed(1)) << "ps[3] is the second parameter of the first group";
  EXPECT_EQ(opt->state_of(ps[0])->size(), 1u) << "a placed parameter keeps only its step beside it";
}

TEST(StatePlacement, BadPlacementsAndCorruptStateNameWhatIsWrong) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  EXPECT_EQ(optim::parse_state_placement("nvme", "--optimizer-state"), optim::StatePlacement::Nvme);
  EXPECT_NE(error_of<ValueError>([] {
              optim::parse_state_placement("disk", "--optimizer-state");
            }).find("--optimizer-state: 'disk' is not a placement; use device, host or nvme"),
            std::string::npos);
  std::vector<Tensor> ps = make_params(kCPU, DType::f32);
  // A file smaller than the state: the figures are named.
  auto small = adamw(ps);
  small->place_state(nvme_store(4096));
  set_grads(ps, 2);
  const std::string full = error_of<OutOfMemoryError>([&] { small->step(); });
  EXPECT_NE(full.find("NVMe state store"), std::string::npos) << full;
  EXPECT_NE(full.find("has no room for"), std::string::npos) << full;
  // A chunk corrupted on its way back from the file fails its CRC: an IoError, never a silent update.
  memory::IoFault corrupt;
  corrupt.kind = memory::IoFault::Kind::Corrupt;
  memory::IoFaults faults;
  faults.faults = {corrupt};
  auto opt = adamw(ps);
  opt->place_state(nvme_store(opt->state_bytes(), faults));
  opt->step();
  set_grads(ps, 4);
  const std::string crc = error_of<IoError>([&] { opt->step(); });
  EXPECT_NE(crc.find("NVMe state store"), std::string::npos) << crc;
  EXPECT_NE(crc.find("reading"), std::string::npos) << crc;
}

TEST(StatePlacement, ACheckpointStreamsPlacedStateWithTheBytesOfTheGatheredOne) {
  STRATA_SKIP_WITHOUT_SPILL_ROOM();
  std::vector<Tensor> ps = make_params(kCPU, DType::f32);
  auto opt = adamw(ps);
  opt->place_state(nvme_store(opt->state_bytes()));
  for (int step = 1; step <= 2; ++step) {
    set_grads(ps, step);
    opt->step();
  }
  const std::string dir = test::spill_dir("state_checkpoint");
  io::CheckpointState gathered;
  gathered.optimizer = opt->state_dict();
  io::save_checkpoint(dir + "/gathered", gathered);
  io::CheckpointState streamed;
  streamed.optimizer = opt->state_dict(streamed.optimizer_sources);
  // Every moment is streamed (4 parameters x 2), none is held in the dict.
  EXPECT_EQ(streamed.optimizer_sources.size(), 8u);
  EXPECT_FALSE(streamed.optimizer.at("state.1.exp_avg").defined());
  io::save_checkpoint(dir + "/streamed", streamed);
  std::ifstream a(dir + "/gathered/tensors.bin", std::ios::binary),
      b(dir + "/streamed/tensors.bin", std::ios::binary);
  const std::string bytes_a((std::istreambuf_iterator<char>(a)), {}),
      bytes_b((std::istreambuf_iterator<char>(b)), {});
  EXPECT_GT(bytes_a.size(), 2u * 3u * 1030u * 4u);
  EXPECT_EQ(bytes_a, bytes_b) << "the streamed checkpoint's tensors differ from the gathered one's";
  expect_same_state(io::load_checkpoint(dir + "/streamed").optimizer, gathered.optimizer, "streamed, loaded");
  std::filesystem::remove_all(dir);
}
