// The GPUDirect Storage IoEngine: cuFileRead/cuFileWrite between the spill file and registered
// device staging buffers, run on worker threads (the cuFile calls block). libcufile is loaded at
// run time (dlopen), so this compiles everywhere and a machine without GDS gets a clear reason
// instead of a link error; the few cuFile declarations it needs follow cufile.h's C ABI.
#include <dlfcn.h>
#include <sys/types.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "memory/tiers/queued_io_engine.h"

namespace strata::memory {
namespace {

// cufile.h (CUDA 11.4+): the structs and entry points used here.
struct CUfileError_t {
  int err;     // CUfileOpError: 0 is CU_FILE_SUCCESS
  int cu_err;  // CUresult
};
struct CUfileDescr_t {
  int type;  // CU_FILE_HANDLE_TYPE_OPAQUE_FD = 1
  union {
    int fd;
    void* handle;
  } handle;
  const void* fs_ops;
};
using CUfileHandle_t = void*;

struct CuFileApi {
  void* lib = nullptr;
  CUfileError_t (*driver_open)() = nullptr;
  CUfileError_t (*handle_register)(CUfileHandle_t*, CUfileDescr_t*) = nullptr;
  void (*handle_deregister)(CUfileHandle_t) = nullptr;
  CUfileError_t (*buf_register)(const void*, size_t, int) = nullptr;
  CUfileError_t (*buf_deregister)(const void*) = nullptr;
  ssize_t (*read)(CUfileHandle_t, void*, size_t, off_t, off_t) = nullptr;
  ssize_t (*write)(CUfileHandle_t, const void*, size_t, off_t, off_t) = nullptr;

  // Loads libcufile once per process; `why` says what is missing.
  static const CuFileApi* get(std::string* why) {
    static std::string reason;
    static CuFileApi loaded;  // process-wide, like the library it wraps
    static const CuFileApi* api = [] () -> const CuFileApi* {
      CuFileApi* a = &loaded;
      for (const char* name : {"libcufile.so.0", "libcufile.so"})
        if ((a->lib = ::dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
      if (!a->lib) {
        reason = "libcufile is not installed (GPUDirect Storage)";
        return nullptr;
      }
      auto sym = [&](const char* n) { return ::dlsym(a->lib, n); };
      a->driver_open = reinterpret_cast<decltype(a->driver_open)>(sym("cuFileDriverOpen"));
      a->handle_register = reinterpret_cast<decltype(a->handle_register)>(sym("cuFileHandleRegister"));
      a->handle_deregister = reinterpret_cast<decltype(a->handle_deregister)>(sym("cuFileHandleDeregister"));
      a->buf_register = reinterpret_cast<decltype(a->buf_register)>(sym("cuFileBufRegister"));
      a->buf_deregister = reinterpret_cast<decltype(a->buf_deregister)>(sym("cuFileBufDeregister"));
      a->read = reinterpret_cast<decltype(a->read)>(sym("cuFileRead"));
      a->write = reinterpret_cast<decltype(a->write)>(sym("cuFileWrite"));
      if (!a->driver_open || !a->handle_register || !a->handle_deregister || !a->buf_register ||
          !a->buf_deregister || !a->read || !a->write) {
        reason = "libcufile lacks the cuFile entry points";
        return nullptr;
      }
      CUfileError_t e = a->driver_open();
      if (e.err != 0) {
        reason = "cuFileDriverOpen failed (error " + std::to_string(e.err) + "; is nvidia-fs loaded?)";
        return nullptr;
      }
      return a;
    }();
    if (!api && why) *why = reason;
    return api;
  }
};

class CuFileIoEngine final : public QueuedIoEngine {
 public:
  CuFileIoEngine(const CuFileApi& api, int fd, std::span<const iovec> device_buffers, size_t depth)
      : QueuedIoEngine(depth), api_(api) {
    CUfileDescr_t d{};
    d.type = 1;
    d.handle.fd = fd;
    CUfileError_t e = api_.handle_register(&handle_, &d);
    if (e.err != 0) throw IoEngineUnavailable("cuFileHandleRegister failed (error " + std::to_string(e.err) + ")");
    for (const iovec& b : device_buffers) {
      if (api_.buf_register(b.iov_base, b.iov_len, 0).err != 0) {
        release();
        throw IoEngineUnavailable("cuFileBufRegister failed");
      }
      buffers_.push_back(b.iov_base);
    }
    start(std::min<size_t>(depth, 2));  // cuFile calls block: a worker per request in flight
  }
  ~CuFileIoEngine() override {
    stop();
    release();
  }
  const char* name() const override { return "cufile"; }

 protected:
  int64_t perform(const IoRequest& r) override {
    // Registered buffer `buf_index` is the base; the request's pointer is inside it.
    void* base = r.buf_index >= 0 ? buffers_.at(size_t(r.buf_index)) : r.buf;
    const off_t buf_off = off_t(static_cast<char*>(r.buf) - static_cast<char*>(base));
    ssize_t n = r.kind == IoKind::Read ? api_.read(handle_, base, r.len, off_t(r.offset), buf_off)
                                       : api_.write(handle_, base, r.len, off_t(r.offset), buf_off);
    // cuFile returns -1 with errno for file-system errors, a negative CUfileOpError otherwise.
    return n >= 0 ? int64_t(n) : (n == -1 ? -int64_t(errno) : -int64_t(EIO));
  }

 private:
  void release() {
    for (void* b : buffers_) api_.buf_deregister(b);
    buffers_.clear();
    if (handle_) api_.handle_deregister(handle_);
    handle_ = nullptr;
  }

  const CuFileApi& api_;
  CUfileHandle_t handle_ = nullptr;
  std::vector<void*> buffers_;
};

}  // namespace

std::unique_ptr<IoEngine> make_cufile_engine(int fd, std::span<const iovec> device_buffers, size_t depth) {
  std::string why;
  const CuFileApi* api = CuFileApi::get(&why);
  if (!api) throw IoEngineUnavailable(why);
  return std::make_unique<CuFileIoEngine>(*api, fd, device_buffers, depth);
}

bool cufile_available(std::string* why) { return CuFileApi::get(why) != nullptr; }

}  // namespace strata::memory
