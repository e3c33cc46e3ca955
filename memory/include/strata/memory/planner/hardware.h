// HardwareProfile: the machine a plan is made for (rates, bandwidths, capacities, each figure with
// its source), read from and written to protobuf text files (tools/hardware/*.textproto).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::memory::planner {

// A figure and where it comes from (a datasheet, a paper, or a calibration run); value 0 = unset.
struct Sourced {
  double value = 0;
  std::string source;
  bool set() const { return value > 0; }
};

// Throughput of one channel direction at one request size (calibration tables).
struct SizedRate {
  uint64_t request_bytes = 0;
  double bytes_per_second = 0;
  double latency_seconds = 0;
};

struct DriveProfile {
  std::string name;
  Sourced read_bytes_per_second, write_bytes_per_second;
  Sourced read_latency_seconds, write_latency_seconds;
  Sourced capacity_bytes;
  std::vector<SizedRate> reads, writes;
};

// time = max(flops / (peak * compute), bytes / (bandwidth * memory)) + launch
struct OpEfficiency {
  std::string kind;  // "*" is the default
  double compute = 1;
  double memory = 1;
  std::string source;
};

struct HardwareProfile {
  std::string name, description;
  bool gpu = false;  // false: the device is the CPU (its host pool is the same RAM)
  Sourced device_memory_bytes, host_memory_bytes;
  Sourced matmul_flops_fp32, matmul_flops_bf16, matmul_flops_tf32, vector_flops_fp32;
  Sourced device_memory_bytes_per_second;
  Sourced host_to_device_bytes_per_second, device_to_host_bytes_per_second, link_latency_seconds;
  Sourced host_memcpy_bytes_per_second;
  Sourced kernel_launch_seconds;
  // CPU device only: the cache's I/O threads checksum each offloaded byte (and copy it through a
  // staging buffer where it is not 4 KiB-aligned) at this rate on one thread, on the cores compute
  // uses; compute loses io_compute_steal (0..1) of that CPU time, and a transfer goes no faster.
  Sourced io_cpu_bytes_per_second, io_compute_steal;
  std::vector<DriveProfile> drives;
  std::vector<OpEfficiency> efficiencies;

  // Striped drives: bandwidths add up, capped on a GPU by the link they share with host copies.
  double nvme_read_bytes_per_second() const;
  double nvme_write_bytes_per_second() const;
  double nvme_read_latency_seconds() const;
  double nvme_write_latency_seconds() const;
  // Offload bandwidth to and from host memory: the link on a GPU, memcpy on the CPU.
  double to_host_bytes_per_second() const;
  double from_host_bytes_per_second() const;
  // The entry for `kind`, else the "*" entry, else {1, 1}.
  const OpEfficiency& efficiency(std::string_view kind) const;
};

// Parses a profile; throws ValueError naming `origin`, the line and column, or the figure that has
// a value but no source, or a missing figure the planner needs.
HardwareProfile hardware_profile_from_text(const std::string& text, const std::string& origin = "<profile>");
std::string hardware_profile_to_text(const HardwareProfile& profile);
HardwareProfile load_hardware_profile(const std::string& path);  // IoError / ValueError naming it
void save_hardware_profile(const HardwareProfile& profile, const std::string& path);

// The dense matmul peak a run's precision can reach: bf16 autocast -> matmul_flops_bf16, f32 with
// TF32 allowed -> matmul_flops_tf32, f32 -> matmul_flops_fp32 (0 where the profile lacks it).
double peak_matmul_flops(const HardwareProfile& profile, bool bf16, bool tf32);
// Model FLOPs utilization (PaLM's MFU, as llm.c reports it): the model's FLOPs per item (a token,
// an image) times items per second, over `peak_flops`; 0 without a peak. The trainers' step lines
// and the GPU benchmark both report this figure.
double model_flops_utilization(double flops_per_item, double items_per_second, double peak_flops);

}  // namespace strata::memory::planner
