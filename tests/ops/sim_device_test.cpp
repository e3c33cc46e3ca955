// The sim device: names and indices, its allocator's hard capacity and out-of-memory message,
// cpu/sim mixing refused, copies on its own stream ordered after their events, and a small model
// trained on it equal to the CPU's bit for bit.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "strata/strata.h"
#include "support/error_of.h"

using namespace strata;

namespace {

// Sets sim:<index>'s capacity for one test and the default back after.
class CapacityGuard {
 public:
  CapacityGuard(int index, uint64_t bytes) : index_(index) { set_sim_memory_capacity(index, bytes); }
  ~CapacityGuard() { set_sim_memory_capacity(index_, 0); }

 private:
  int index_;
};

// The message of the strata::Error f() throws (a test failure when it throws none).
std::string error_of(const std::function<void()>& f) { return strata::testing::error_of<Error>(f); }

}  // namespace

TEST(SimDevice, ParsesAndPrintsLikeCuda) {
  EXPECT_EQ(Device::parse("sim"), sim(0));
  EXPECT_EQ(Device::parse("sim:3"), sim(3));
  EXPECT_EQ(sim(2).str(), "sim:2");
  EXPECT_TRUE(sim(0).is_host_memory());
  EXPECT_FALSE(cuda(0).is_host_memory());
  for (const char* bad : {"sim:", "sim:x", "sim:-1", "sim1", "cuda:", "cuda:1x", "gpu"})
    EXPECT_THROW(Device::parse(bad), DeviceError) << bad;
  EXPECT_GE(sim_device_count(), 2) << "two ranks each take a sim device of their own";
}

TEST(SimDevice, AMissingDeviceIsAnErrorNamingIt) {
  const std::string msg = error_of([] { ops::zeros({4}, TensorOptions().device(sim(99))); });
  EXPECT_NE(msg.find("sim:99 does not exist"), std::string::npos) << msg;
}

TEST(SimDevice, RunningOutOfMemoryNamesTheRequestCapacityAndUseByCategory) {
  CapacityGuard cap(1, uint64_t(1) << 20);
  Allocator& alloc = BackendRegistry::instance().get(DeviceType::Sim).allocator(1);
  const int64_t before = alloc.stats().snapshot().total_current;
  Tensor params;
  {
    MemoryCategoryGuard g(MemoryCategory::Parameter);
    params = ops::zeros({100 * 1024}, TensorOptions().device(sim(1)));  // 400 KiB
  }
  Tensor act = ops::zeros({100 * 1024}, TensorOptions().device(sim(1)));  // 400 KiB of temporaries
  std::string msg;
  try {
    ops::zeros({100 * 1024}, TensorOptions().device(sim(1)));
    FAIL() << "a third 400 KiB tensor fits a 1 MiB sim:1";
  } catch (const OutOfMemoryError& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("sim:1 out of memory: cannot allocate 400.00 KiB for temporaries"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("capacity 1.00 MiB"), std::string::npos) << msg;
  EXPECT_NE(msg.find("parameters 400.00 KiB"), std::string::npos) << msg;
  EXPECT_NE(msg.find("temporaries 400.00 KiB"), std::string::npos) << msg;
  // A failed request leaves the accounting as it was, and freed memory serves the next one.
  EXPECT_EQ(alloc.stats().snapshot().total_current - before, 2 * 400 * 1024);
  act = Tensor();
  EXPECT_NO_THROW(ops::zeros({100 * 1024}, TensorOptions().device(sim(1))));
  // Cached blocks of other sizes are returned to the system before a request is refused.
  Tensor small = ops::zeros({1000}, TensorOptions().device(sim(1)));
  small = Tensor();
  EXPECT_NO_THROW(ops::zeros({150 * 1024}, TensorOptions().device(sim(1))));
}

TEST(SimDevice, CpuAndSimTensorsNeverMix) {
  Tensor a = ops::ones({3}), b = ops::ones({3}, TensorOptions().device(sim(0)));
  const std::string msg = error_of([&] { ops::add(a, b); });
  EXPECT_NE(msg.find("different devices"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cpu"), std::string::npos) << msg;
  EXPECT_NE(msg.find("sim:0"), std::string::npos) << msg;
  const std::string two = error_of([&] { ops::mul(b, ops::ones({3}, TensorOptions().device(sim(1)))); });
  EXPECT_NE(two.find("sim:1"), std::string::npos) << two;
}

TEST(SimDevice, CopiesRoundTripBetweenCpuAndSimDevices) {
  Tensor x = ops::randn({5, 7});
  Tensor on0 = x.to(sim(0)), on1 = on0.to(sim(1));
  EXPECT_EQ(on0.device(), sim(0));
  EXPECT_EQ(on1.device(), sim(1));
  EXPECT_NE(on0.data_ptr(), x.data_ptr());
  Tensor back = on1.to(kCPU);
  EXPECT_EQ(std::memcmp(back.data_ptr(), x.data_ptr(), x.nbytes()), 0);
  EXPECT_EQ(on0.t().contiguous().to(kCPU).to_double_vector(), x.t().contiguous().to_double_vector());
}

TEST(SimDevice, AsynchronousCopiesWaitForTheirEventAndCompleteWithTheirOwn) {
  Backend& be = BackendRegistry::instance().get(DeviceType::Sim);
  std::vector<float> src(1 << 16, 0.0f), dst(1 << 16, -1.0f);
  auto producer = be.create_stream(0);
  producer->enqueue([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    for (size_t i = 0; i < src.size(); ++i) src[i] = float(i);
  });
  auto ready = be.create_event();
  ready->record(*producer);
  auto done = be.copy_bytes_async(dst.data(), src.data(), src.size() * sizeof(float), 0, ready.get());
  ASSERT_NE(done, nullptr) << "sim copies are asynchronous: they return an event";
  EXPECT_FALSE(done->query()) << "the copy waits for the producer's 30 ms";
  done->synchronize();
  for (size_t i = 0; i < dst.size(); ++i) ASSERT_EQ(dst[i], float(i)) << i;
  producer->synchronize();
}

TEST(SimDevice, AModelTrainsOnSimExactlyAsOnTheCpu) {
  auto run = [](Device dev) {
    manual_seed(7);
    nn::Sequential net{std::make_shared<nn::Linear>(12, 16), std::make_shared<nn::GELU>(),
                       std::make_shared<nn::Linear>(16, 3)};
    net.to(dev);
    optim::AdamW opt(net.parameters(), optim::AdamWOptions(1e-2));
    Tensor x = ops::randn({8, 12}).to(dev);
    Tensor y = ops::from_vector(std::vector<int64_t>{0, 1, 2, 0, 1, 2, 0, 1}, {8}).to(dev);
    std::vector<double> losses;
    for (int step = 0; step < 3; ++step) {
      opt.zero_grad();
      Tensor loss = ops::cross_entropy(net.forward(x), y);
      EXPECT_EQ(loss.device(), dev);
      loss.backward();
      opt.step();
      losses.push_back(loss.item());
    }
    for (const Tensor& p : net.parameters()) EXPECT_EQ(p.device(), dev);
    return losses;
  };
  std::vector<double> cpu = run(kCPU), on_sim = run(sim(0));
  ASSERT_EQ(on_sim.size(), cpu.size());
  for (size_t i = 0; i < cpu.size(); ++i) EXPECT_EQ(on_sim[i], cpu[i]) << "step " << i;
}

// arange fills a device tensor through the backend (the default writes it on the host): the
// CPU's values in every dtype, on the device asked for, and empty ranges stay empty.
TEST(SimDevice, ArangeMakesTheCpusValuesOnTheDevice) {
  for (DType dt : {DType::i64, DType::i32, DType::f32, DType::bf16}) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor want = arange(3.5, -20.0, -0.75, TensorOptions(dt));
    Tensor got = arange(3.5, -20.0, -0.75, TensorOptions(dt).device(sim(0)));
    EXPECT_EQ(got.device(), sim(0));
    EXPECT_EQ(got.to(kCPU).to_double_vector(), want.to_double_vector());
  }
  EXPECT_EQ(arange(int64_t(0), TensorOptions(DType::i64).device(sim(0))).numel(), 0);
}
