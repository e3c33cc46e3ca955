#include "strata/memory/io_engine_kind.h"

namespace strata::memory {

const char* io_engine_name(IoEngineKind e) {
  switch (e) {
    case IoEngineKind::Auto: return "auto";
    case IoEngineKind::Uring: return "io_uring";
    case IoEngineKind::Threads: return "threads";
    case IoEngineKind::CuFile: return "cufile";
  }
  return "?";
}

}  // namespace strata::memory
