// Hardware profiles: every committed preset parses with a source for each figure; striped drives
// add up under the link's cap; a figure without a source, a bad efficiency or a missing figure the
// planner needs is an error naming the file.
#include <gtest/gtest.h>

#include <filesystem>

#include "strata/core/error.h"
#include "strata/memory/planner/cost_model.h"
#include "strata/memory/planner/hardware.h"

using namespace strata;
using namespace strata::memory::planner;

namespace {

const std::filesystem::path kPresets = std::filesystem::path(STRATA_TEST_DATA_DIR) / ".." / "tools" / "hardware";

HardwareProfile preset(const std::string& name) { return load_hardware_profile((kPresets / (name + ".textproto")).string()); }

const char* kMinimalCpu = R"(
name: "cpu"
matmul_flops_fp32 { value: 1.5e11 source: "measured" }
host_memcpy_bytes_per_second { value: 1e10 source: "measured" }
)";

}  // namespace

TEST(HardwareProfile, EveryPresetParsesAndNamesItsSources) {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(kPresets)) {
    if (e.path().extension() != ".textproto") continue;
    ++n;
    HardwareProfile h = load_hardware_profile(e.path().string());
    EXPECT_EQ(h.name + ".textproto", e.path().filename().string());
    EXPECT_TRUE(h.gpu) << h.name;
    EXPECT_GT(h.matmul_flops_bf16.value, h.matmul_flops_tf32.value) << h.name;
    EXPECT_GT(h.matmul_flops_tf32.value, h.matmul_flops_fp32.value) << h.name;
    EXPECT_FALSE(h.device_memory_bytes_per_second.source.empty()) << h.name;
    EXPECT_FALSE(h.drives.empty()) << h.name;
    EXPECT_NE(h.efficiency("matmul").kind, "*") << h.name;
    // Text round trip keeps every figure and source.
    HardwareProfile again = hardware_profile_from_text(hardware_profile_to_text(h), "round trip");
    EXPECT_EQ(again.host_to_device_bytes_per_second.value, h.host_to_device_bytes_per_second.value);
    EXPECT_EQ(again.drives.size(), h.drives.size());
    EXPECT_EQ(again.efficiencies.size(), h.efficiencies.size());
    EXPECT_EQ(again.kernel_launch_seconds.source, h.kernel_launch_seconds.source);
  }
  EXPECT_EQ(n, 9u)
      << "H100 + PCIe 5 with 1/2/4 Gen4/Gen5 drives, H200 + PCIe 5, A100 40GB + PCIe 4, G10's A100 + PCIe 3";
}

TEST(HardwareProfile, StripedDrivesAddUpUnderTheLinkCap) {
  HardwareProfile one = preset("h100-sxm-pcie5-1xgen5"), four = preset("h100-sxm-pcie5-4xgen5");
  EXPECT_DOUBLE_EQ(one.nvme_read_bytes_per_second(), 14.5e9);
  EXPECT_DOUBLE_EQ(one.nvme_write_bytes_per_second(), 12.7e9);
  EXPECT_DOUBLE_EQ(four.nvme_read_bytes_per_second(), 58e9);   // 4 x 14.5 < 63 (PCIe 5 x16)
  EXPECT_DOUBLE_EQ(four.nvme_write_bytes_per_second(), 50.8e9);
  EXPECT_DOUBLE_EQ(four.to_host_bytes_per_second(), 63e9);
  HardwareProfile g10 = preset("g10-a100-pcie3-zssd");
  EXPECT_DOUBLE_EQ(g10.nvme_read_bytes_per_second(), 3.2e9);
  EXPECT_DOUBLE_EQ(g10.from_host_bytes_per_second(), 15.754e9);
  EXPECT_DOUBLE_EQ(g10.nvme_write_latency_seconds(), 16e-6);
}

TEST(HardwareProfile, EfficiencyFallsBackToTheDefaultEntry) {
  HardwareProfile h = preset("a100-40gb-pcie4-1xgen4");
  EXPECT_EQ(h.efficiency("attention").kind, "attention");
  EXPECT_EQ(h.efficiency("gelu").kind, "*");
  HardwareProfile cpu = hardware_profile_from_text(kMinimalCpu);
  EXPECT_EQ(cpu.efficiency("matmul").compute, 1.0);
  EXPECT_FALSE(cpu.gpu);
  EXPECT_DOUBLE_EQ(cpu.to_host_bytes_per_second(), 1e10);
  EXPECT_DOUBLE_EQ(cpu.nvme_read_bytes_per_second(), 0.0);
}

TEST(HardwareProfile, AFigureWithoutASourceIsRefused) {
  std::string text = std::string(kMinimalCpu) + "kernel_launch_seconds { value: 1e-6 }\n";
  try {
    hardware_profile_from_text(text, "mine.textproto");
    FAIL() << "a figure without a source was accepted";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("mine.textproto: kernel_launch_seconds = 1e-06 has no source"), std::string::npos)
        << e.what();
  }
}

TEST(HardwareProfile, BadInputNamesTheFileAndTheFigure) {
  EXPECT_THROW(hardware_profile_from_text("name: \"x\"\nmatmul_flops_fp32 { value: 1 source: \"s\" }\n", "no-memcpy"),
               ValueError);  // a CPU profile needs the host pool's copy rate
  try {
    hardware_profile_from_text("gpu: true\nmatmul_flops_fp32 { value: 1 source: \"s\" }\n", "gpu.textproto");
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("gpu.textproto: device_memory_bytes is missing"), std::string::npos) << e.what();
  }
  try {
    hardware_profile_from_text(std::string(kMinimalCpu) + "efficiencies { kind: \"matmul\" compute: 1.5 memory: 1 source: \"s\" }",
                               "eff.textproto");
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("efficiency of 'matmul' must be in (0, 1]"), std::string::npos) << e.what();
  }
  try {
    hardware_profile_from_text("name: \"x\" bogus_field: 3", "typo.textproto");
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("typo.textproto is not a valid hardware profile: line 1"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(load_hardware_profile("/nonexistent/profile.textproto"), IoError);
}

TEST(HardwareProfile, IoThreadFiguresRoundTripAndTheStealIsBounded) {
  HardwareProfile cpu = hardware_profile_from_text(kMinimalCpu);
  cpu.io_cpu_bytes_per_second = {3e9, "test: staging copy + CRC-32C"};
  cpu.io_compute_steal = {1.0, "test: compute on every core"};
  HardwareProfile again = hardware_profile_from_text(hardware_profile_to_text(cpu), "round trip");
  EXPECT_DOUBLE_EQ(again.io_cpu_bytes_per_second.value, 3e9);
  EXPECT_EQ(again.io_compute_steal.source, "test: compute on every core");
  cpu.io_compute_steal.value = 1.5;  // syscalls on top of the checksum: more than the thread's CPU share
  EXPECT_DOUBLE_EQ(hardware_profile_from_text(hardware_profile_to_text(cpu)).io_compute_steal.value, 1.5);
  cpu.io_compute_steal.value = 5;
  EXPECT_THROW(hardware_profile_from_text(hardware_profile_to_text(cpu), "steal.textproto"), ValueError);
}

// A compute-bound GEMM's modeled time scales with the rate of the precision it multiplies in; a
// profile without a TF32 or bf16 figure (a CPU) runs those at its f32 rate; elementwise ops keep
// the vector rate whatever the precision.
TEST(HardwareProfile, GemmPrecisionPicksTheMatmulRate) {
  const HardwareProfile h100 = preset("h100-sxm-pcie5-1xgen4");
  const double flops = 1e13, bytes = 1e6;  // far above the ridge point: compute-bound
  const double launch = h100.kernel_launch_seconds.value;
  const double f32 = op_seconds(h100, "linear", flops, bytes, GemmPrecision::fp32) - launch;
  const double tf32 = op_seconds(h100, "linear", flops, bytes, GemmPrecision::tf32) - launch;
  const double bf16 = op_seconds(h100, "linear", flops, bytes, GemmPrecision::bf16) - launch;
  EXPECT_NEAR(f32 / tf32, h100.matmul_flops_tf32.value / h100.matmul_flops_fp32.value, 1e-9);
  EXPECT_NEAR(tf32 / bf16, h100.matmul_flops_bf16.value / h100.matmul_flops_tf32.value, 1e-9);
  EXPECT_DOUBLE_EQ(op_seconds(h100, "gelu", 1e6, 1e9, GemmPrecision::tf32),
                   op_seconds(h100, "gelu", 1e6, 1e9, GemmPrecision::fp32));
  const HardwareProfile cpu = hardware_profile_from_text(kMinimalCpu);
  EXPECT_DOUBLE_EQ(matmul_flops(cpu, GemmPrecision::tf32), 1.5e11);
  EXPECT_DOUBLE_EQ(matmul_flops(cpu, GemmPrecision::bf16), 1.5e11);
  EXPECT_EQ(parse_gemm_precision("tf32"), GemmPrecision::tf32);
  EXPECT_STREQ(gemm_precision_name(GemmPrecision::bf16), "bf16");
  EXPECT_THROW(parse_gemm_precision("fp16"), ValueError);
}
