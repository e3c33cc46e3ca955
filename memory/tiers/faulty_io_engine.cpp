// The fault-injecting IoEngine: sits between the cache's tiers and the real engine, so fault
// tests exercise the real cache, staging and checksums, not a mock.
#include <cerrno>
#include <chrono>
#include <thread>
#include <cstring>
#include <deque>
#include <unordered_map>

#include "memory/tiers/io_engine.h"

namespace strata::memory {
namespace {

class FaultyIoEngine final : public IoEngine {
 public:
  FaultyIoEngine(std::unique_ptr<IoEngine> inner, IoFaults faults, std::shared_ptr<FaultCounters> n)
      : inner_(std::move(inner)), faults_(std::move(faults)), n_(std::move(n)) {}
  const char* name() const override { return inner_->name(); }
  size_t depth() const override { return inner_->depth(); }

  void submit(const IoRequest& r) override {
    uint64_t index = r.kind == IoKind::Read ? n_->reads++ : n_->writes++;
    const IoFault* f = match(r.kind, index);
    if (!f) return inner_->submit(r);
    switch (f->kind) {
      case IoFault::Kind::NoSpace: synthetic_.push_back({r.tag, -ENOSPC}); return;
      case IoFault::Kind::WriteError:
      case IoFault::Kind::ReadError: synthetic_.push_back({r.tag, -EIO}); return;
      case IoFault::Kind::ShortWrite:
      case IoFault::Kind::ShortRead: {
        IoRequest half = r;
        half.len = r.len > 4096 ? r.len / 2 / 4096 * 4096 : 0;
        if (half.len == 0) {
          synthetic_.push_back({r.tag, 0});
          return;
        }
        return inner_->submit(half);
      }
      case IoFault::Kind::Corrupt: corrupt_[r.tag] = r.buf; return inner_->submit(r);
      case IoFault::Kind::SlowWrite:
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        return inner_->submit(r);
    }
  }

  IoCompletion wait() override {
    if (!synthetic_.empty()) {
      IoCompletion c = synthetic_.front();
      synthetic_.pop_front();
      return c;
    }
    IoCompletion c = inner_->wait();
    auto it = corrupt_.find(c.tag);
    if (it != corrupt_.end()) {
      if (c.result > 0) static_cast<unsigned char*>(it->second)[c.result / 2] ^= 0x5A;
      corrupt_.erase(it);
    }
    return c;
  }

 private:
  const IoFault* match(IoKind kind, uint64_t index) const {
    for (const IoFault& f : faults_.faults) {
      bool is_read = f.kind == IoFault::Kind::ReadError || f.kind == IoFault::Kind::ShortRead ||
                     f.kind == IoFault::Kind::Corrupt;
      if (is_read != (kind == IoKind::Read)) continue;
      if (index >= f.first && (f.count == UINT64_MAX || index - f.first < f.count)) return &f;
    }
    return nullptr;
  }

  std::unique_ptr<IoEngine> inner_;
  IoFaults faults_;
  std::shared_ptr<FaultCounters> n_;
  std::deque<IoCompletion> synthetic_;
  std::unordered_map<uint64_t, void*> corrupt_;
};

}  // namespace

std::unique_ptr<IoEngine> make_faulty_engine(std::unique_ptr<IoEngine> inner, const IoFaults& faults,
                                             std::shared_ptr<FaultCounters> state) {
  return std::make_unique<FaultyIoEngine>(std::move(inner), faults, std::move(state));
}

}  // namespace strata::memory
