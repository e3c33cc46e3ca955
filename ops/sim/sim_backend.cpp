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

// The sim devices' state: one allocator and one copy stream per device, made when first used.
class SimBackend final : public Backend {
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
    return cpu_.create_stream(0);
  }
  std::unique_ptr<Event> create_event() override { return cpu_.create_event(); }
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
    auto done = cpu_.create_event();
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
    cpu_.copy(dst, src);
  }
  void fill(const Tensor& dst, double value) override { cpu_.fill(dst, value); }
  void elementwise(EwOp op, const Tensor& out, std::span<const Tensor> inputs,
                   const EwParams& params) override {
    cpu_.elementwise(op, out, inputs, params);
  }
  void reduce_rows(ReduceOp op, const Tensor& out, const Tensor& in, int64_t reduce_numel) override {
    cpu_.reduce_rows(op, out, in, reduce_numel);
  }
  void bmm(const Tensor& out, const Tensor& a, const Tensor& b, double alpha, double beta) override {
    cpu_.bmm(out, a, b, alpha, beta);
  }
  void softmax(const Tensor& out, const Tensor& in, bool log) override { cpu_.softmax(out, in, log); }
  void softmax_backward(const Tensor& grad_in, const Tensor& grad_out, const Tensor& out, bool log) override {
    cpu_.softmax_backward(grad_in, grad_out, out, log);
  }
  void layer_norm(const Tensor& out, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                  const Tensor& weight, const Tensor& bias, double eps) override {
    cpu_.layer_norm(out, mean, rstd, x, weight, bias, eps);
  }
  void layer_norm_backward(const Tensor& grad_x, const Tensor& grad_weight, const Tensor& grad_bias,
                           const Tensor& grad_out, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                           const Tensor& weight) override {
    cpu_.layer_norm_backward(grad_x, grad_weight, grad_bias, grad_out, x, mean, rstd, weight);
  }
  void cross_entropy(const Tensor& loss, const Tensor& lse, const Tensor& logits, const Tensor& target,
                     int64_t ignore_index) override {
    cpu_.cross_entropy(loss, lse, logits, target, ignore_index);
  }
  void cross_entropy_backward(const Tensor& grad_logits, const Tensor& grad_loss, const Tensor& logits,
                              const Tensor& lse, const Tensor& target, int64_t ignore_index) override {
    cpu_.cross_entropy_backward(grad_logits, grad_loss, logits, lse, target, ignore_index);
  }
  void index_select(const Tensor& out, const Tensor& in, int64_t dim, const Tensor& index) override {
    cpu_.index_select(out, in, dim, index);
  }
  void index_add(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src) override {
    cpu_.index_add(out, dim, index, src);
  }
  void gather(const Tensor& out, const Tensor& in, int64_t dim, const Tensor& index) override {
    cpu_.gather(out, in, dim, index);
  }
  void scatter_add(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src) override {
    cpu_.scatter_add(out, dim, index, src);
  }
  void attention(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                 const Tensor& mask, bool causal, double scale) override {
    cpu_.attention(out, lse, q, k, v, mask, causal, scale);
  }
  void attention_backward(const Tensor& grad_q, const Tensor& grad_k, const Tensor& grad_v,
                          const Tensor& grad_out, const Tensor& q, const Tensor& k, const Tensor& v,
                          const Tensor& out, const Tensor& lse, const Tensor& mask, bool causal,
                          double scale) override {
    cpu_.attention_backward(grad_q, grad_k, grad_v, grad_out, q, k, v, out, lse, mask, causal, scale);
  }
  void conv2d(const Tensor& out, const Tensor& x, const Tensor& weight, const Tensor& bias,
              const Conv2dParams& p) override {
    cpu_.conv2d(out, x, weight, bias, p);
  }
  void conv2d_backward(const Tensor& grad_x, const Tensor& grad_weight, const Tensor& grad_bias,
                       const Tensor& grad_out, const Tensor& x, const Tensor& weight,
                       const Conv2dParams& p) override {
    cpu_.conv2d_backward(grad_x, grad_weight, grad_bias, grad_out, x, weight, p);
  }
  void batch_norm(const Tensor& out, const Tensor& mean, const Tensor& invstd, const Tensor& x,
                  const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                  const Tensor& running_var, bool training, double momentum, double eps) override {
    cpu_.batch_norm(out, mean, invstd, x, weight, bias, running_mean, running_var, training, momentum, eps);
  }
  void batch_norm_backward(const Tensor& grad_x, const Tensor& grad_weight, const Tensor& grad_bias,
                           const Tensor& grad_out, const Tensor& x, const Tensor& weight, const Tensor& mean,
                           const Tensor& invstd, bool training) override {
    cpu_.batch_norm_backward(grad_x, grad_weight, grad_bias, grad_out, x, weight, mean, invstd, training);
  }
  void pool2d(const Tensor& out, const Tensor& indices, const Tensor& x, const Pool2dParams& p) override {
    cpu_.pool2d(out, indices, x, p);
  }
  void pool2d_backward(const Tensor& grad_x, const Tensor& grad_out, const Tensor& indices,
                       const Pool2dParams& p) override {
    cpu_.pool2d_backward(grad_x, grad_out, indices, p);
  }
  void random_uniform(const Tensor& out, RngState state, double low, double high) override {
    cpu_.random_uniform(out, state, low, high);
  }
  void random_normal(const Tensor& out, RngState state, double mean, double std) override {
    cpu_.random_normal(out, state, mean, std);
  }

  void spmm(const Tensor& out, const Tensor& offsets, const Tensor& indices, const Tensor& weights,
            const Tensor& weight_index, const Tensor& x) override {
    cpu_.spmm(out, offsets, indices, weights, weight_index, x);
  }
  void spmm_extreme(const Tensor& out, const Tensor& arg, const Tensor& offsets, const Tensor& indices,
                    const Tensor& weight_index, const Tensor& x, bool minimum) override {
    cpu_.spmm_extreme(out, arg, offsets, indices, weight_index, x, minimum);
  }
  void spmm_extreme_backward(const Tensor& grad_x, const Tensor& offsets, const Tensor& positions,
                             const Tensor& rows, const Tensor& arg, const Tensor& grad_out) override {
    cpu_.spmm_extreme_backward(grad_x, offsets, positions, rows, arg, grad_out);
  }
  void sddmm_dot(const Tensor& out, const Tensor& a_index, const Tensor& a, const Tensor& b_index,
                 const Tensor& b) override {
    cpu_.sddmm_dot(out, a_index, a, b_index, b);
  }

  void segment_softmax(const Tensor& out, const Tensor& offsets, const Tensor& scores) override {
    cpu_.segment_softmax(out, offsets, scores);
  }
  void segment_softmax_backward(const Tensor& grad_scores, const Tensor& offsets, const Tensor& grad_out,
                                const Tensor& out) override {
    cpu_.segment_softmax_backward(grad_scores, offsets, grad_out, out);
  }
  void segment_mm(const Tensor& out, const Tensor& x, const Tensor& gather, const Tensor& weight,
                  const Tensor& offsets, const Tensor& scatter, const Tensor& scale,
                  bool accumulate) override {
    cpu_.segment_mm(out, x, gather, weight, offsets, scatter, scale, accumulate);
  }
  void segment_mm_weight_grad(const Tensor& grad_weight, const Tensor& x, const Tensor& gather,
                              const Tensor& grad_y, const Tensor& scatter, const Tensor& scale,
                              const Tensor& offsets, bool accumulate) override {
    cpu_.segment_mm_weight_grad(grad_weight, x, gather, grad_y, scatter, scale, offsets, accumulate);
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
      d.copies = cpu_.create_stream(0);
    }
    return d;
  }

  cpu::CpuBackend cpu_;
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
