// MetaBackend: tensors with shape, dtype and strides but no storage; every kernel is a no-op,
// so ops run by shape rules alone and report their cost (the planner's dry runs).
#include "ops/meta/meta_backend.h"

namespace strata::meta {

namespace {

class NullAllocator final : public Allocator {
 public:
  void* allocate(size_t bytes, MemoryCategory c) override {
    stats_.on_alloc(c, int64_t(bytes));
    return nullptr;
  }
  void deallocate(void*, size_t bytes, MemoryCategory c) override { stats_.on_free(c, int64_t(bytes)); }
  Device device() const override { return kMeta; }
};

class MetaStream final : public Stream {
 public:
  Device device() const override { return kMeta; }
  void enqueue(std::function<void()> task) override { task(); }
  void synchronize() override {}
  void wait(Event&) override {}
};

class MetaEvent final : public Event {
 public:
  void record(Stream&) override {}
  bool query() const override { return true; }
  void synchronize() override {}
};

class MetaBackend final : public Backend {
 public:
  DeviceType type() const override { return DeviceType::Meta; }
  Allocator& allocator(int) override { return alloc_; }
  Allocator& host_allocator() override { return cpu_allocator(); }
  std::unique_ptr<Stream> create_stream(int) override { return std::make_unique<MetaStream>(); }
  std::unique_ptr<Event> create_event() override { return std::make_unique<MetaEvent>(); }
  void synchronize(int) override {}
  void copy(const Tensor&, const Tensor&) override {}
  void fill(const Tensor&, double) override {}
  void elementwise(EwOp, const Tensor&, std::span<const Tensor>, const EwParams&) override {}
  void reduce_rows(ReduceOp, const Tensor&, const Tensor&, int64_t) override {}
  void bmm(const Tensor&, const Tensor&, const Tensor&, double, double) override {}
  void softmax(const Tensor&, const Tensor&, bool) override {}
  void softmax_backward(const Tensor&, const Tensor&, const Tensor&, bool) override {}
  void layer_norm(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                  const Tensor&, double) override {}
  void layer_norm_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                           const Tensor&, const Tensor&, const Tensor&) override {}
  void cross_entropy(const Tensor&, const Tensor&, const Tensor&, const Tensor&, int64_t) override {}
  void cross_entropy_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                              int64_t) override {}
  void index_select(const Tensor&, const Tensor&, int64_t, const Tensor&) override {}
  void index_add(const Tensor&, int64_t, const Tensor&, const Tensor&) override {}
  void gather(const Tensor&, const Tensor&, int64_t, const Tensor&) override {}
  void scatter_add(const Tensor&, int64_t, const Tensor&, const Tensor&) override {}
  void attention(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, bool,
                 double) override {}
  void attention_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                          const Tensor&, const Tensor&, const Tensor&, const Tensor&, bool, double) override {}
  void conv2d(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Conv2dParams&) override {}
  void conv2d_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                       const Conv2dParams&) override {}
  void batch_norm(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                  const Tensor&, const Tensor&, bool, double, double) override {}
  void batch_norm_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                           const Tensor&, const Tensor&, bool) override {}
  void pool2d(const Tensor&, const Tensor&, const Tensor&, const Pool2dParams&) override {}
  void spmm(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
            const Tensor&) override {}
  void spmm_extreme(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                    bool) override {}
  void spmm_extreme_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                             const Tensor&) override {}
  void sddmm_dot(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&) override {}
  void segment_softmax(const Tensor&, const Tensor&, const Tensor&) override {}
  void segment_softmax_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&) override {}
  void gather_host_rows(const Tensor&, const void*, int64_t, int64_t, const Tensor&) override {}
  void segment_mm(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                  const Tensor&, bool) override {}
  void segment_mm_weight_grad(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                              const Tensor&, const Tensor&, bool) override {}
  void pool2d_backward(const Tensor&, const Tensor&, const Tensor&, const Pool2dParams&) override {}
  void random_uniform(const Tensor&, RngState, double, double) override {}
  void random_normal(const Tensor&, RngState, double, double) override {}

 private:
  NullAllocator alloc_;
};

}  // namespace

std::unique_ptr<Backend> make_meta_backend() { return std::make_unique<MetaBackend>(); }

}  // namespace strata::meta
