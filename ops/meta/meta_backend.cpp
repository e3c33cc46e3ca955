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

template <class... Args>
void ignore(const Args&...) {}

class MetaBackend final : public Backend {
 public:
  DeviceType type() const override { return DeviceType::Meta; }
  Allocator& allocator(int) override { return alloc_; }
  Allocator& host_allocator() override { return cpu_allocator(); }
  std::unique_ptr<Stream> create_stream(int) override { return std::make_unique<MetaStream>(); }
  std::unique_ptr<Event> create_event() override { return std::make_unique<MetaEvent>(); }
  void synchronize(int) override {}
  void gather_host_rows(const Tensor&, const void*, int64_t, int64_t, const Tensor&) override {}
  // Every kernel does nothing: a meta tensor has no data.
#define STRATA_META_KERNEL(ret, name, params, args) \
  ret name params override { ignore(STRATA_KERNEL_ARGS args); }
#define STRATA_DENSE_KERNEL STRATA_META_KERNEL
#define STRATA_NN_KERNEL STRATA_META_KERNEL
#define STRATA_GRAPH_KERNEL STRATA_META_KERNEL
#include "strata/core/backend_kernels.def"
#undef STRATA_META_KERNEL

 private:
  NullAllocator alloc_;
};

}  // namespace

std::unique_ptr<Backend> make_meta_backend() { return std::make_unique<MetaBackend>(); }

}  // namespace strata::meta
