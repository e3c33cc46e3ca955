#include "strata/core/device.h"

#include "strata/core/error.h"

namespace strata {

Device Device::parse(const std::string& s) {
  if (s == "cpu") return kCPU;
  if (s == "meta") return kMeta;
  if (s == "cuda") return Device(DeviceType::CUDA, 0);
  if (s.rfind("cuda:", 0) == 0) {
    try {
      size_t used = 0;
      int idx = std::stoi(s.substr(5), &used);
      if (used == s.size() - 5 && idx >= 0) return Device(DeviceType::CUDA, idx);
    } catch (const std::exception&) {
    }
  }
  throw DeviceError("unknown device '" + s + "' (expected cpu, meta, cuda or cuda:N)");
}

std::string Device::str() const {
  switch (type) {
    case DeviceType::CPU: return "cpu";
    case DeviceType::Meta: return "meta";
    case DeviceType::CUDA: return "cuda:" + std::to_string(index);
  }
  return "?";
}

}  // namespace strata
