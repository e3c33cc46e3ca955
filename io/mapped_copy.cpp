// The SIGBUS guard: one handler for the process, installed on first use, and a per-thread record
// of the mapping being copied from. The handler jumps back to copy_mapped_rows only for a fault
// inside that thread's guarded mapping; any other SIGBUS gets the disposition it had before.
// Between sigsetjmp and the copy's memcpy there is no C++ object to unwind.
#include "io/mapped_copy.h"

#include <atomic>
#include <csetjmp>
#include <csignal>
#include <cstring>
#include <mutex>

namespace strata::io {
namespace {

struct MappedCopyGuard {
  uintptr_t begin = 0, end = 0;  // the mapping
  volatile uintptr_t fault = 0;
  sigjmp_buf jump;
};

// volatile: the stores around the copy must happen (nothing the compiler sees reads them).
thread_local MappedCopyGuard* volatile tl_guard = nullptr;
struct sigaction g_previous_sigbus {};  // written once, under g_install
std::once_flag g_install;

void on_sigbus(int sig, siginfo_t* info, void* context) {
  MappedCopyGuard* g = tl_guard;
  const auto at = reinterpret_cast<uintptr_t>(info->si_addr);
  if (g != nullptr && at >= g->begin && at < g->end) {
    g->fault = at;
    siglongjmp(g->jump, 1);
  }
  // Not a guarded copy's: what was there before (the default ends the process when the faulting
  // instruction runs again).
  if ((g_previous_sigbus.sa_flags & SA_SIGINFO) != 0 && g_previous_sigbus.sa_sigaction != nullptr) {
    g_previous_sigbus.sa_sigaction(sig, info, context);
    return;
  }
  if (g_previous_sigbus.sa_handler != SIG_DFL && g_previous_sigbus.sa_handler != SIG_IGN &&
      g_previous_sigbus.sa_handler != nullptr) {
    g_previous_sigbus.sa_handler(sig);
    return;
  }
  std::signal(SIGBUS, SIG_DFL);
}

void install_handler() {
  struct sigaction sa {};
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGBUS, &sa, &g_previous_sigbus);
}

}  // namespace

int64_t copy_mapped_rows(const char* base, size_t length, const char* rows, std::span<const int64_t> ids,
                         int64_t begin, int64_t end, int64_t row_bytes, char* out) {
  std::call_once(g_install, install_handler);
  MappedCopyGuard guard;
  guard.begin = reinterpret_cast<uintptr_t>(base);
  guard.end = guard.begin + length;
  MappedCopyGuard* const outer = tl_guard;
  if (sigsetjmp(guard.jump, 1) != 0) {
    tl_guard = outer;
    return int64_t(guard.fault - guard.begin);
  }
  tl_guard = &guard;
  std::atomic_signal_fence(std::memory_order_seq_cst);  // the guard is set before the first read
  for (int64_t i = begin; i < end; ++i, out += row_bytes)
    std::memcpy(out, rows + ids[size_t(i)] * row_bytes, size_t(row_bytes));
  std::atomic_signal_fence(std::memory_order_seq_cst);  // and cleared after the last
  tl_guard = outer;
  return -1;
}

}  // namespace strata::io
