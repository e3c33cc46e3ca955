// The GPUDirect Storage IoEngine: cuFileRead/cuFileWrite between the spill file and registered
// device staging buffers, run on worker threads (the cuFile calls block). libcufile is loaded at
// run time (dlopen), so this compiles everywhere and a machine without GDS gets a clear reason
// instead of a link error; the few cuFile declarations it needs follow cufile.h's C ABI.
#include <dlfcn.h>
#include <sys/types.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "memory/tiers/io_engine.h"

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
    static const CuFileApi* api = [] () -> const CuFileApi* {
      auto* a = new CuFileApi();
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

class CuFileIoEngine final : public IoEngine {
 public:
  CuFileIoEngine(const CuFileApi& api, int fd, std::span<const iovec> device_buffers, size_t depth)
      : api_(api), depth_(depth) {
    CUfileDescr_t d{};
    d.type = 1;
    d.handle.fd = fd;
    CUfileError_t e = api_.handle_register(&handle_, &d);
    if (e.err != 0) throw IoUringRefused{"cuFileHandleRegister failed (error " + std::to_string(e.err) + ")"};
    for (const iovec& b : device_buffers) {
      if (api_.buf_register(b.iov_base, b.iov_len, 0).err != 0) {
        release();
        throw IoUringRefused{"cuFileBufRegister failed"};
      }
      buffers_.push_back(b.iov_base);
    }
    for (size_t i = 0; i < std::min<size_t>(depth, 2); ++i) workers_.emplace_back([this] { run(); });
  }
  ~CuFileIoEngine() override {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
    release();
  }
  const char* name() const override { return "cufile"; }
  size_t depth() const override { return depth_; }
  void submit(const IoRequest& r) override {
    {
      std::lock_guard<std::mutex> lk(mu_);
      pending_.push_back(r);
    }
    cv_.notify_one();
  }
  IoCompletion wait() override {
    std::unique_lock<std::mutex> lk(mu_);
    done_cv_.wait(lk, [&] { return !done_.empty(); });
    IoCompletion c = done_.front();
    done_.pop_front();
    return c;
  }

 private:
  void release() {
    for (void* b : buffers_) api_.buf_deregister(b);
    buffers_.clear();
    if (handle_) api_.handle_deregister(handle_);
    handle_ = nullptr;
  }
  void run() {
    for (;;) {
      IoRequest r;
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return stop_ || !pending_.empty(); });
        if (stop_ && pending_.empty()) return;
        r = pending_.front();
        pending_.pop_front();
      }
      // Registered buffer `buf_index` is the base; the request's pointer is inside it.
      void* base = r.buf_index >= 0 ? buffers_.at(size_t(r.buf_index)) : r.buf;
      const off_t buf_off = off_t(static_cast<char*>(r.buf) - static_cast<char*>(base));
      ssize_t n = r.kind == IoKind::Read ? api_.read(handle_, base, r.len, off_t(r.offset), buf_off)
                                         : api_.write(handle_, base, r.len, off_t(r.offset), buf_off);
      // cuFile returns -1 with errno for file-system errors, a negative CUfileOpError otherwise.
      int64_t result = n >= 0 ? int64_t(n) : (n == -1 ? -int64_t(errno) : -int64_t(EIO));
      {
        std::lock_guard<std::mutex> lk(mu_);
        done_.push_back({r.tag, result});
      }
      done_cv_.notify_one();
    }
  }

  const CuFileApi& api_;
  size_t depth_;
  CUfileHandle_t handle_ = nullptr;
  std::vector<void*> buffers_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  std::deque<IoRequest> pending_;
  std::deque<IoCompletion> done_;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace

std::unique_ptr<IoEngine> make_cufile_engine(int fd, std::span<const iovec> device_buffers, size_t depth) {
  std::string why;
  const CuFileApi* api = CuFileApi::get(&why);
  if (!api) throw IoUringRefused{why};
  return std::make_unique<CuFileIoEngine>(*api, fd, device_buffers, depth);
}

bool cufile_available(std::string* why) { return CuFileApi::get(why) != nullptr; }

}  // namespace strata::memory
