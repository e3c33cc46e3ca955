// Device: CPU, CUDA:n, Sim:n (a simulated accelerator: host memory with a hard capacity, the CPU's
// kernels, asynchronous copies), or Meta (shape and cost only, no storage).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace strata {

enum class DeviceType : uint8_t { CPU, CUDA, Meta, Sim };
inline constexpr size_t kNumDeviceTypes = 4;

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;

  constexpr Device() = default;
  constexpr Device(DeviceType t, int i = 0) : type(t), index(i) {}
  // Parses "cpu", "cuda", "cuda:1", "sim", "sim:1", "meta"; throws DeviceError otherwise.
  static Device parse(const std::string& s);

  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_cuda() const { return type == DeviceType::CUDA; }
  bool is_meta() const { return type == DeviceType::Meta; }
  bool is_sim() const { return type == DeviceType::Sim; }
  // Memory the host addresses directly and the CPU's kernels run on: the CPU's and the sim device's.
  bool is_host_memory() const { return type == DeviceType::CPU || type == DeviceType::Sim; }
  std::string str() const;
  friend bool operator==(const Device&, const Device&) = default;
};

inline constexpr Device kCPU{DeviceType::CPU, 0};
inline constexpr Device kMeta{DeviceType::Meta, 0};
inline Device cuda(int index = 0) { return Device(DeviceType::CUDA, index); }
inline Device sim(int index = 0) { return Device(DeviceType::Sim, index); }

}  // namespace strata
