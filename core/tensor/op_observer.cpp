#include "strata/core/op_observer.h"

namespace strata {

namespace {
thread_local OpObserver* tl_observer = nullptr;
}

OpObserverGuard::OpObserverGuard(OpObserver* o) : prev_(tl_observer) { tl_observer = o; }
OpObserverGuard::~OpObserverGuard() { tl_observer = prev_; }
OpObserver* OpObserverGuard::current() { return tl_observer; }

}  // namespace strata
