#include "strata/core/device.h"

#include "strata/core/error.h"

namespace strata {

namespace {
// "<name>" is index 0, "<name>:N" index N (digits only); false when `s` is neither.
bool parse_indexed(const std::string& s, const std::string& name, int* index) {
  if (s == name) {
    *index = 0;
    return true;
  }
  const std::string prefix = name + ":";
  if (s.rfind(prefix, 0) != 0 || s.size() == prefix.size() || s.size() > prefix.size() + 6) return false;
  int v = 0;
  for (size_t i = prefix.size(); i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *index = v;
  return true;
}
}  // namespace

Device Device::parse(const std::string& s) {
  if (s == "cpu") return kCPU;
  if (s == "meta") return kMeta;
  int index = 0;
  if (parse_indexed(s, "cuda", &index)) return Device(DeviceType::CUDA, index);
  if (parse_indexed(s, "sim", &index)) return Device(DeviceType::Sim, index);
  throw DeviceError("unknown device '" + s + "' (expected cpu, cuda, cuda:N, sim, sim:N or meta)");
}

std::string Device::str() const {
  switch (type) {
    case DeviceType::CPU: return "cpu";
    case DeviceType::Meta: return "meta";
    case DeviceType::CUDA: return "cuda:" + std::to_string(index);
    case DeviceType::Sim: return "sim:" + std::to_string(index);
  }
  return "?";
}

}  // namespace strata
