#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "strata/core/backend.h"
#include "strata/core/crc32c.h"

namespace strata {

std::unique_ptr<Event> Backend::copy_bytes_async(void* dst, const void* src, size_t bytes, int, Event* after) {
  if (after) after->synchronize();
  std::memcpy(dst, src, bytes);
  return nullptr;
}

uint64_t Backend::memory_capacity(int) {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : 0;
}

uint32_t Backend::crc32c_of(const void* ptr, size_t bytes, int) { return crc32c(ptr, bytes); }

void Backend::arange(const Tensor& dst, double start, double step) {
  std::vector<double> v(static_cast<size_t>(dst.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + double(i) * step;
  const Shape shape{int64_t(v.size())};
  copy(dst,
       Tensor::from_storage(std::make_shared<StorageImpl>(v.data(), v.size() * sizeof(double), kCPU, nullptr),
                            shape, contiguous_strides(shape), 0, DType::f64));
}

void Backend::gather_host_rows(const Tensor& out, const void* host_rows, int64_t num_rows, int64_t row_bytes,
                               const Tensor& ids) {
  const Device d = out.device();
  STRATA_CHECK(d.is_cpu() || d.type == DeviceType::Sim, NotImplementedError,
               "gather_host_rows: no gather of host rows on ", d.str());
  STRATA_CHECK(ids.dtype() == DType::i64 && ids.is_contiguous() && out.is_contiguous() &&
                   out.nbytes() == size_t(ids.numel()) * size_t(row_bytes),
               ValueError, "gather_host_rows: ids ", ids.str(), " and out ", out.str(), " for rows of ",
               row_bytes, " bytes");
  const int64_t* id = static_cast<const int64_t*>(ids.data_ptr());
  char* to = static_cast<char*>(out.data_ptr());
  for (int64_t i = 0; i < ids.numel(); ++i) {
    STRATA_CHECK(id[i] >= 0 && id[i] < num_rows, IndexError, "gather_host_rows: ids[", i, "] = ", id[i],
                 " is outside [0, ", num_rows, ")");
    std::memcpy(to + i * row_bytes, static_cast<const char*>(host_rows) + id[i] * row_bytes,
                size_t(row_bytes));
  }
}

namespace {

// The default of a kernel no backend has to have: NotImplementedError naming the kernel and the device.
template <class... Rest>
[[noreturn]] void throw_no_kernel(const char* kernel, const Tensor& first, const Rest&...) {
  throw NotImplementedError(std::string(kernel) + ": no kernel on " + first.device().str());
}

}  // namespace

#define STRATA_NO_KERNEL(ret, name, params, args) \
  ret Backend::name params { throw_no_kernel(#name, STRATA_KERNEL_ARGS args); }
#define STRATA_NN_KERNEL STRATA_NO_KERNEL
#define STRATA_GRAPH_KERNEL STRATA_NO_KERNEL
#include "strata/core/backend_kernels.def"
#undef STRATA_NO_KERNEL

BackendRegistry& BackendRegistry::instance() {
  // Leaked on purpose: tensors may be freed during static destruction.
  static BackendRegistry* r = new BackendRegistry();
  return *r;
}

void BackendRegistry::add(DeviceType type, std::unique_ptr<Backend> backend) {
  backends_[size_t(type)] = std::move(backend);
}

std::unique_ptr<Backend> BackendRegistry::replace(DeviceType type, std::unique_ptr<Backend> backend) {
  std::swap(backends_[size_t(type)], backend);
  return backend;
}

bool BackendRegistry::has(DeviceType type) const { return backends_[size_t(type)] != nullptr; }

Backend& BackendRegistry::get(DeviceType type) const {
  Backend* b = backends_[size_t(type)].get();
  STRATA_CHECK(b != nullptr, DeviceError, "no backend for device type ", Device(type).str(),
               type == DeviceType::CUDA ? " (Strata was built without CUDA, or no ops ran yet)"
                                        : " (no ops ran yet)");
  return *b;
}

}  // namespace strata
