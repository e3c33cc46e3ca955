// backend_present and SKIP_WITHOUT_CUDA_DEVICE: whether a backend is compiled in and has a device.
#pragma once

#include "strata/core/backend.h"
#include "strata/ops/factory.h"

namespace strata::testing {

// True when backend `t` is registered and sees at least one device (CPU: always).
inline bool backend_present(DeviceType t) {
  ops::empty({0});  // makes sure the built-in backends are registered
  auto& reg = BackendRegistry::instance();
  return reg.has(t) && reg.get(t).device_count() > 0;
}

}  // namespace strata::testing

// Skips the current test where there is no CUDA backend or no device.
#define SKIP_WITHOUT_CUDA_DEVICE()                                       \
  do {                                                                   \
    if (!::strata::testing::backend_present(::strata::DeviceType::CUDA)) \
      GTEST_SKIP() << "no CUDA backend or device";                       \
  } while (0)
