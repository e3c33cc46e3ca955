#include "ops/sim/sim_backend.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "ops/cpu/cpu_backend.h"
#include "ops/dispatch.h"
#include "ops/sim/sim_allocator.h"
#include "strata/core/byte_size.h"
#include "strata/core/error.h"
#include "strata/ops/sim_device.h"

namespace strata::simulated {

namespace {

int env_device_count() {
  const char* v = std::getenv("STRATA_SIM_DEVICES");
  if (!v || !*v) return 8;
  char* end = nullptr;
  long n = std::strtol(v, &end, 10);
  STRATA_CHECK(end && *end == '\0' && n >= 1 && n <= 64, ValueError, "STRATA_SIM_DEVICES='", v,
               "' is not a device count from 1 to 64");
  return int(n);
}

uint64_t default_capacity() {
  if (const char* v = std::getenv("STRATA_SIM_MEMORY"); v && *v)
    return parse_byte_size(v, "STRATA_SIM_MEMORY");
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : uint64_t(16) << 30;
}

// The CPU's kernels on the sim devices' memory: one allocator and one copy stream per device, made
// when first used.
class SimBackend final : public cpu::CpuBackend {
 public:
  SimBackend() : count_(env_device_count()), devices_(size_t(count_)) {}
  ~SimBackend() override {
    for (auto& d : devices_)
      if (d.copies) d.copies->synchronize();
  }

  DeviceType type() const override { return DeviceType::Sim; }
  int device_count() const override { return count_; }
  uint64_t memory_capacity(int index) override { return state(index).alloc->capacity(); }
  Allocator& allocator(int index) override { return *state(index).alloc; }
  Allocator& host_allocator() override { return cpu_allocator(); }
  std::unique_ptr<Stream> create_stream(int index) override {
    state(index);
    return CpuBackend::create_stream(0);
  }
  // Kernels run on the caller's thread: what remains is the copy stream's work.
  void synchronize(int index) override { state(index).copies->synchronize(); }

  // Compute is synchronous (everything issued has finished): a transfer has nothing to wait for.
  std::unique_ptr<Event> record_compute(int index) override {
    state(index);
    return nullptr;
  }
  std::unique_ptr<Event> copy_bytes_async(void* dst, const void* src, size_t bytes, int index,
                                          Event* after) override {
    Stream& s = *state(index).copies;
    if (after) s.wait(*after);
    s.enqueue([=] { std::memcpy(dst, src, bytes); });
    auto done = CpuBackend::create_event();
    done->record(s);
    return done;
  }
  uint32_t crc32c_of(const void* ptr, size_t bytes, int index) override {
    synchronize(index);
    return Backend::crc32c_of(ptr, bytes, index);
  }

  void copy(const Tensor& dst, const Tensor& src) override {
    STRATA_CHECK(dst.device().is_host_memory() && src.device().is_host_memory(), DeviceError,
                 "sim copy from ", src.str(), " to ", dst.str(),
                 ": the sim device copies to and from the CPU only");
    CpuBackend::copy(dst, src);
  }

  SimAllocator& sim_allocator(int index) { return *state(index).alloc; }

 private:
  struct DeviceState {
    std::unique_ptr<SimAllocator> alloc;
    std::unique_ptr<Stream> copies;
  };
  DeviceState& state(int index) {
    STRATA_CHECK(index >= 0 && index < count_, DeviceError, "sim:", index, " does not exist (", count_,
                 " sim devices: sim:0 to sim:", count_ - 1, "; STRATA_SIM_DEVICES sets how many)");
    std::lock_guard<std::mutex> lk(mu_);
    DeviceState& d = devices_[size_t(index)];
    if (!d.alloc) {
      d.alloc = std::make_unique<SimAllocator>(index, default_capacity());
      d.copies = CpuBackend::create_stream(0);
    }
    return d;
  }

  const int count_;
  std::mutex mu_;
  std::vector<DeviceState> devices_;
};

SimBackend& backend() {
  auto* b = dynamic_cast<SimBackend*>(&ops::detail::kernels(Device(DeviceType::Sim, 0)));
  STRATA_CHECK(b != nullptr, DeviceError, "the sim device's backend was replaced");
  return *b;
}

}  // namespace

std::unique_ptr<Backend> make_sim_backend() { return std::make_unique<SimBackend>(); }

}  // namespace strata::simulated

namespace strata {

int sim_device_count() { return simulated::backend().device_count(); }

uint64_t sim_memory_capacity(int index) { return simulated::backend().sim_allocator(index).capacity(); }

void set_sim_memory_capacity(int index, uint64_t bytes) {
  simulated::backend().sim_allocator(index).set_capacity(bytes == 0 ? simulated::default_capacity() : bytes);
}

}  // namespace strata
