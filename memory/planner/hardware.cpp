#include "strata/memory/planner/hardware.h"

#include <google/protobuf/text_format.h>

#include <algorithm>
#include <sstream>

#include "memory/planner/hardware.pb.h"
#include "memory/read_file.h"
#include "memory/text_message.h"
#include "strata/core/error.h"
#include "strata/core/output_path.h"

namespace strata::memory::planner {

namespace {

// Every Sourced field, by name, in both representations.
#define STRATA_HW_FIGURES(X)                                                                          \
  X(device_memory_bytes) X(host_memory_bytes) X(matmul_flops_fp32) X(matmul_flops_bf16)               \
  X(matmul_flops_tf32)                                                                                \
  X(vector_flops_fp32) X(device_memory_bytes_per_second) X(host_to_device_bytes_per_second)           \
  X(device_to_host_bytes_per_second) X(link_latency_seconds) X(host_memcpy_bytes_per_second)          \
  X(kernel_launch_seconds) X(io_cpu_bytes_per_second) X(io_compute_steal)

#define STRATA_DRIVE_FIGURES(X) \
  X(read_bytes_per_second) X(write_bytes_per_second) X(read_latency_seconds) X(write_latency_seconds) X(capacity_bytes)

Sourced from_proto(const proto::Figure& f, const std::string& origin, const std::string& field) {
  STRATA_CHECK(f.value() >= 0, ValueError, origin, ": ", field, " is negative (", f.value(), ")");
  STRATA_CHECK(f.value() == 0 || !f.source().empty(), ValueError, origin, ": ", field, " = ", f.value(),
               " has no source (every figure names where it comes from)");
  return Sourced{f.value(), f.source()};
}

void to_proto(const Sourced& s, proto::Figure* f) {
  f->set_value(s.value);
  f->set_source(s.source);
}

std::vector<SizedRate> rates_from_proto(const google::protobuf::RepeatedPtrField<proto::SizedFigure>& in) {
  std::vector<SizedRate> out;
  for (const auto& r : in) out.push_back({r.request_bytes(), r.bytes_per_second(), r.latency_seconds()});
  std::sort(out.begin(), out.end(), [](const SizedRate& a, const SizedRate& b) { return a.request_bytes < b.request_bytes; });
  return out;
}

void require(const Sourced& s, const std::string& origin, const char* field, const char* why) {
  STRATA_CHECK(s.set(), ValueError, origin, ": ", field, " is missing (", why, ")");
}

}  // namespace

double HardwareProfile::nvme_read_bytes_per_second() const {
  double sum = 0;
  for (const auto& d : drives) sum += d.read_bytes_per_second.value;
  if (gpu && host_to_device_bytes_per_second.set()) sum = std::min(sum, host_to_device_bytes_per_second.value);
  return sum;
}

double HardwareProfile::nvme_write_bytes_per_second() const {
  double sum = 0;
  for (const auto& d : drives) sum += d.write_bytes_per_second.value;
  if (gpu && device_to_host_bytes_per_second.set()) sum = std::min(sum, device_to_host_bytes_per_second.value);
  return sum;
}

double HardwareProfile::nvme_read_latency_seconds() const {
  double l = 0;
  for (const auto& d : drives) l = std::max(l, d.read_latency_seconds.value);
  return l;
}

double HardwareProfile::nvme_write_latency_seconds() const {
  double l = 0;
  for (const auto& d : drives) l = std::max(l, d.write_latency_seconds.value);
  return l;
}

double HardwareProfile::to_host_bytes_per_second() const {
  return gpu ? device_to_host_bytes_per_second.value : host_memcpy_bytes_per_second.value;
}

double HardwareProfile::from_host_bytes_per_second() const {
  return gpu ? host_to_device_bytes_per_second.value : host_memcpy_bytes_per_second.value;
}

const OpEfficiency& HardwareProfile::efficiency(std::string_view kind) const {
  static const OpEfficiency kIdeal{"*", 1, 1, "ideal (no entry)"};
  const OpEfficiency* fallback = &kIdeal;
  for (const auto& e : efficiencies) {
    if (e.kind == kind) return e;
    if (e.kind == "*") fallback = &e;
  }
  return *fallback;
}

HardwareProfile hardware_profile_from_text(const std::string& text, const std::string& origin) {
  proto::HardwareProfile p;
  std::string error;
  STRATA_CHECK(parse_text_message(text, &p, &error), ValueError, origin,
               " is not a valid hardware profile: ", error);
  HardwareProfile h;
  h.name = p.name();
  h.description = p.description();
  h.gpu = p.gpu();
#define STRATA_READ_FIGURE(f) h.f = from_proto(p.f(), origin, #f);
  STRATA_HW_FIGURES(STRATA_READ_FIGURE)
#undef STRATA_READ_FIGURE
  for (const auto& d : p.drives()) {
    DriveProfile dp;
    dp.name = d.name();
    const std::string where = "drive '" + d.name() + "' ";
#define STRATA_READ_DRIVE_FIGURE(f) dp.f = from_proto(d.f(), origin, where + #f);
    STRATA_DRIVE_FIGURES(STRATA_READ_DRIVE_FIGURE)
#undef STRATA_READ_DRIVE_FIGURE
    dp.reads = rates_from_proto(d.reads());
    dp.writes = rates_from_proto(d.writes());
    require(dp.read_bytes_per_second, origin, (where + "read_bytes_per_second").c_str(), "NVMe transfer times");
    require(dp.write_bytes_per_second, origin, (where + "write_bytes_per_second").c_str(), "NVMe transfer times");
    h.drives.push_back(std::move(dp));
  }
  for (const auto& e : p.efficiencies()) {
    STRATA_CHECK(!e.kind().empty(), ValueError, origin, ": an efficiency entry has no kind");
    STRATA_CHECK(e.compute() > 0 && e.compute() <= 1 && e.memory() > 0 && e.memory() <= 1, ValueError, origin,
                 ": efficiency of '", e.kind(), "' must be in (0, 1] (compute ", e.compute(), ", memory ",
                 e.memory(), ")");
    STRATA_CHECK(!e.source().empty(), ValueError, origin, ": efficiency of '", e.kind(), "' has no source");
    h.efficiencies.push_back({e.kind(), e.compute(), e.memory(), e.source()});
  }
  require(h.matmul_flops_fp32, origin, "matmul_flops_fp32", "the op-cost model");
  if (h.gpu) {
    require(h.device_memory_bytes, origin, "device_memory_bytes", "a GPU's capacity");
    require(h.device_memory_bytes_per_second, origin, "device_memory_bytes_per_second", "the op-cost model");
    require(h.host_to_device_bytes_per_second, origin, "host_to_device_bytes_per_second", "host and NVMe transfers");
    require(h.device_to_host_bytes_per_second, origin, "device_to_host_bytes_per_second", "host and NVMe transfers");
  } else {
    require(h.host_memcpy_bytes_per_second, origin, "host_memcpy_bytes_per_second", "host-pool transfers");
  }
  // Wall seconds compute loses per second of I/O-thread checksum work: 0 on idle cores, about 1
  // when the thread takes a core from compute, a little more with its syscalls; beyond 4 the
  // measurement is broken (a noisy neighbour, a swapped-out run).
  STRATA_CHECK(h.io_compute_steal.value <= 4.0, ValueError, origin,
               ": io_compute_steal ", h.io_compute_steal.value,
               " is compute time lost per second of I/O-thread work, expected in [0, 4]");
  return h;
}

std::string hardware_profile_to_text(const HardwareProfile& h) {
  proto::HardwareProfile p;
  p.set_name(h.name);
  p.set_description(h.description);
  p.set_gpu(h.gpu);
#define STRATA_WRITE_FIGURE(f) \
  if (h.f.set()) to_proto(h.f, p.mutable_##f());
  STRATA_HW_FIGURES(STRATA_WRITE_FIGURE)
#undef STRATA_WRITE_FIGURE
  for (const auto& d : h.drives) {
    auto* dp = p.add_drives();
    dp->set_name(d.name);
#define STRATA_WRITE_DRIVE_FIGURE(f) \
  if (d.f.set()) to_proto(d.f, dp->mutable_##f());
    STRATA_DRIVE_FIGURES(STRATA_WRITE_DRIVE_FIGURE)
#undef STRATA_WRITE_DRIVE_FIGURE
    for (const auto& r : d.reads) {
      auto* s = dp->add_reads();
      s->set_request_bytes(r.request_bytes);
      s->set_bytes_per_second(r.bytes_per_second);
      s->set_latency_seconds(r.latency_seconds);
    }
    for (const auto& r : d.writes) {
      auto* s = dp->add_writes();
      s->set_request_bytes(r.request_bytes);
      s->set_bytes_per_second(r.bytes_per_second);
      s->set_latency_seconds(r.latency_seconds);
    }
  }
  for (const auto& e : h.efficiencies) {
    auto* ep = p.add_efficiencies();
    ep->set_kind(e.kind);
    ep->set_compute(e.compute);
    ep->set_memory(e.memory);
    ep->set_source(e.source);
  }
  std::string out;
  google::protobuf::TextFormat::PrintToString(p, &out);
  return out;
}

HardwareProfile load_hardware_profile(const std::string& path) {
  return hardware_profile_from_text(read_whole_file(path, "load_hardware_profile"), path);
}

void save_hardware_profile(const HardwareProfile& profile, const std::string& path) {
  write_file_atomically(path, hardware_profile_to_text(profile), "save_hardware_profile");
}

double peak_matmul_flops(const HardwareProfile& profile, bool bf16, bool tf32) {
  if (bf16) return profile.matmul_flops_bf16.value;
  return tf32 ? profile.matmul_flops_tf32.value : profile.matmul_flops_fp32.value;
}

double model_flops_utilization(double flops_per_item, double items_per_second, double peak_flops) {
  return peak_flops > 0 ? flops_per_item * items_per_second / peak_flops : 0.0;
}

}  // namespace strata::memory::planner
