// driver::calibrated_profile: the DeviceProfile `stitchopt calibrate` writes, made of the
// CUDA plugin's DeviceMeasurement without a GPU. A GPU the shipped profiles know (its
// name and SM count) takes their peaks and calibration block; any other GPU gets
// estimated peaks and the nearest architecture's fits with its own SASS architecture.
// Either profile is one `calibrate` can write (it passes the profile's range checks).
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "cost_model/device_profile.h"
#include "driver/calibrated_profile.h"
#include "runtime_stub/device_measurement.h"

namespace stitch::driver {
namespace {

// The note every calibrated profile carries; an estimated one appends to it.
constexpr const char* kMeasuredNote =
    "Measured by stitchopt calibrate: bandwidth_curve (a streaming copy, bytes read plus "
    "written, L2 flushed, median of each size), l2_bytes_per_second (the copy over a "
    "quarter of the L2, not flushed), launch_latency_us (back-to-back empty kernels) and "
    "grid_barrier_us (the emitted stitch_grid_sync, one block per SM).";

cost_model::DeviceProfile shipped(const std::string& name) {
  Result<cost_model::DeviceProfile> profile = cost_model::builtin_device_profile(name);
  STITCH_CHECK(profile.is_ok()) << profile.status().message();
  return *profile;
}

// What the plugin returns on an H100 SXM (cudaDeviceProp and the driver's attributes
// as CUDA 13 reports them), with measurements of the size calibrate gives there.
runtime::DeviceMeasurement h100_measurement() {
  runtime::DeviceMeasurement measurement;
  measurement.name = "NVIDIA H100 80GB HBM3";
  measurement.compute_capability_major = 9;
  measurement.compute_capability_minor = 0;
  measurement.sm_count = 132;
  measurement.max_threads_per_block = 1024;
  measurement.max_threads_per_sm = 2048;
  measurement.warp_size = 32;
  measurement.registers_per_block = 65536;
  measurement.registers_per_sm = 65536;
  measurement.shared_memory_per_block = 49152;
  measurement.shared_memory_per_block_optin = 232448;
  measurement.shared_memory_per_sm = 233472;
  measurement.l2_bytes = 52428800;
  measurement.clock_khz = 1980000;
  measurement.memory_clock_khz = 2619000;
  measurement.bus_bits = 5120;
  measurement.max_blocks_per_sm = 32;
  measurement.bandwidth_curve = {{1024, 3.0e8}, {1048576, 1.1e12}, {1073741824, 2.834e12}};
  measurement.l2_bytes_per_second = 7.1e12;
  measurement.launch_latency_us = 3.4;
  measurement.grid_barrier_us = 1.24;
  measurement.global_load_latency_ns = 130;
  return measurement;
}

// An NVIDIA L4 (sm_89, 58 SMs): no shipped profile is this GPU.
runtime::DeviceMeasurement l4_measurement() {
  runtime::DeviceMeasurement measurement = h100_measurement();
  measurement.name = "NVIDIA L4";
  measurement.compute_capability_major = 8;
  measurement.compute_capability_minor = 9;
  measurement.sm_count = 58;
  measurement.max_threads_per_sm = 1536;
  measurement.shared_memory_per_block_optin = 101376;
  measurement.shared_memory_per_sm = 102400;
  measurement.l2_bytes = 50331648;
  measurement.clock_khz = 2040000;
  measurement.memory_clock_khz = 6251000;
  measurement.bus_bits = 192;
  measurement.max_blocks_per_sm = 24;
  measurement.bandwidth_curve = {{1024, 3.0e8}, {1073741824, 2.7e11}};
  return measurement;
}

// The device's facts and the measurements, carried over as the plugin gave them.
void expect_measured_fields(const runtime::DeviceMeasurement& measurement,
                            const cost_model::DeviceProfile& profile) {
  EXPECT_EQ(profile.source, "calibrated");
  EXPECT_EQ(profile.sku, measurement.name);
  EXPECT_TRUE(std::regex_match(profile.date, std::regex(R"(\d{4}-\d{2}-\d{2})"))) << profile.date;
  EXPECT_EQ(profile.sm_count, measurement.sm_count);
  EXPECT_EQ(profile.max_threads_per_block, measurement.max_threads_per_block);
  EXPECT_EQ(profile.max_threads_per_sm, measurement.max_threads_per_sm);
  EXPECT_EQ(profile.warp_size, measurement.warp_size);
  EXPECT_EQ(profile.registers_per_block, measurement.registers_per_block);
  EXPECT_EQ(profile.registers_per_sm, measurement.registers_per_sm);
  EXPECT_EQ(profile.shared_memory_per_block, measurement.shared_memory_per_block);
  EXPECT_EQ(profile.shared_memory_per_block_optin, measurement.shared_memory_per_block_optin);
  EXPECT_EQ(profile.shared_memory_per_sm, measurement.shared_memory_per_sm);
  EXPECT_EQ(profile.l2_bytes, measurement.l2_bytes);
  EXPECT_DOUBLE_EQ(profile.sm_clock_hz, measurement.clock_khz * 1e3);
  EXPECT_EQ(profile.max_blocks_per_sm, measurement.max_blocks_per_sm);
  ASSERT_EQ(profile.bandwidth_curve.size(), measurement.bandwidth_curve.size());
  for (size_t i = 0; i < profile.bandwidth_curve.size(); ++i) {
    EXPECT_EQ(profile.bandwidth_curve[i].bytes, measurement.bandwidth_curve[i].bytes) << i;
    EXPECT_EQ(profile.bandwidth_curve[i].bytes_per_second,
              measurement.bandwidth_curve[i].bytes_per_second)
        << i;
  }
  EXPECT_EQ(profile.l2_bytes_per_second, measurement.l2_bytes_per_second);
  EXPECT_EQ(profile.launch_latency_us, measurement.launch_latency_us);
  EXPECT_EQ(profile.grid_barrier_us, measurement.grid_barrier_us);
  EXPECT_EQ(profile.global_load_latency_ns, measurement.global_load_latency_ns);
  // What calibrate checks before it writes the profile.
  Status valid = cost_model::validate_device_profile(profile, "calibrated profile");
  EXPECT_TRUE(valid.is_ok()) << valid.message();
}

TEST(CalibratedProfileTest, ShippedGpuTakesTheShippedPeaksAndCalibration) {
  const runtime::DeviceMeasurement measurement = h100_measurement();
  testing::internal::CaptureStderr();
  Result<cost_model::DeviceProfile> profile = calibrated_profile(measurement, /*verbose=*/true);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");  // nothing estimated to warn of
  ASSERT_TRUE(profile.is_ok()) << profile.status().message();
  const cost_model::DeviceProfile h100 = shipped("h100");
  ASSERT_EQ(h100.sm_count, measurement.sm_count);  // else the test tries the other path

  EXPECT_EQ(profile->name, "h100");
  EXPECT_EQ(profile->note, kMeasuredNote);
  expect_measured_fields(measurement, *profile);
  // 2 (DDR) x 2619 MHz x 5120 bits / 8.
  EXPECT_DOUBLE_EQ(profile->peak_dram_bytes_per_second, 3.35232e12);
  EXPECT_EQ(profile->fp32_flops_per_second, h100.fp32_flops_per_second);
  EXPECT_EQ(profile->fp16_flops_per_second, h100.fp16_flops_per_second);
  EXPECT_EQ(profile->fp64_flops_per_second, h100.fp64_flops_per_second);
  EXPECT_EQ(profile->block_barrier_cycles, h100.block_barrier_cycles);
  EXPECT_EQ(profile->atomic_same_address_ns, h100.atomic_same_address_ns);
  EXPECT_EQ(profile->library_efficiency, h100.library_efficiency);
  EXPECT_EQ(profile->calibration.sass_architecture, h100.calibration.sass_architecture);
  EXPECT_EQ(profile->calibration.provenance, h100.calibration.provenance);
  EXPECT_EQ(profile->calibration.tiled_gemm_instructions_per_mac,
            h100.calibration.tiled_gemm_instructions_per_mac);
}

TEST(CalibratedProfileTest, ShippedGpuWithoutMemoryClockTakesTheShippedDramPeak) {
  runtime::DeviceMeasurement measurement = h100_measurement();
  measurement.memory_clock_khz = 0;
  Result<cost_model::DeviceProfile> profile = calibrated_profile(measurement, false);
  ASSERT_TRUE(profile.is_ok()) << profile.status().message();
  EXPECT_EQ(profile->peak_dram_bytes_per_second, shipped("h100").peak_dram_bytes_per_second);
}

TEST(CalibratedProfileTest, UnknownGpuGetsEstimatedPeaksAndTheNearestCalibration) {
  const runtime::DeviceMeasurement measurement = l4_measurement();
  testing::internal::CaptureStderr();
  Result<cost_model::DeviceProfile> profile = calibrated_profile(measurement, /*verbose=*/true);
  const std::string said = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(profile.is_ok()) << profile.status().message();
  EXPECT_EQ(said,
            "calibrate: no shipped profile matches NVIDIA L4; fp32/fp16 peaks are estimates "
            "(SMs x clock x 128 lanes x 2, fp16 twice that: no tensor cores), the rest from the "
            "shipped a100 profile\n");

  EXPECT_EQ(profile->name, "nvidia-l4");
  expect_measured_fields(measurement, *profile);
  // 2 x 6251 MHz x 192 bits / 8.
  EXPECT_DOUBLE_EQ(profile->peak_dram_bytes_per_second, 3.00048e11);
  // 58 SMs x 2.04 GHz x 128 lanes x 2 (FMA); fp16 the half2 rate.
  EXPECT_DOUBLE_EQ(profile->fp32_flops_per_second, 3.028992e13);
  EXPECT_DOUBLE_EQ(profile->fp16_flops_per_second, 6.057984e13);
  // sm_8x: the a100's, fp64 scaled by SMs x clock.
  const cost_model::DeviceProfile a100 = shipped("a100");
  EXPECT_DOUBLE_EQ(profile->fp64_flops_per_second,
                   a100.fp64_flops_per_second * (58 * 2.04e9) / (a100.sm_count * a100.sm_clock_hz));
  EXPECT_EQ(profile->block_barrier_cycles, a100.block_barrier_cycles);
  EXPECT_EQ(profile->atomic_same_address_ns, a100.atomic_same_address_ns);
  EXPECT_EQ(profile->library_efficiency, a100.library_efficiency);
  // The a100's fits, but this GPU's own SASS architecture, which says where it came from.
  EXPECT_EQ(profile->calibration.sass_architecture, "sm_89");
  EXPECT_EQ(profile->calibration.gemm_load_share, a100.calibration.gemm_load_share);
  ASSERT_EQ(profile->calibration.provenance.size(), a100.calibration.provenance.size());
  for (size_t i = 0; i < a100.calibration.provenance.size(); ++i) {
    const auto& [key, provenance] = profile->calibration.provenance[i];
    EXPECT_EQ(key, a100.calibration.provenance[i].first);
    EXPECT_EQ(provenance, key == "sass_architecture" ? "the device's compute capability (calibrate)"
                                                     : a100.calibration.provenance[i].second)
        << key;
  }
  EXPECT_EQ(profile->note,
            std::string(kMeasuredNote) +
                " fp32/fp16 peaks are estimates (no shipped profile matches this GPU); fp64, "
                "block_barrier_cycles, atomic_same_address_ns and library_efficiency come from "
                "the shipped a100 profile, and so does the calibration block but its "
                "sass_architecture.");
}

// A shipped GPU's name with another SM count is another product (an H100 PCIe, 114
// SMs, is not the shipped SXM h100): estimated, from the h100 as the nearest sm_90.
TEST(CalibratedProfileTest, ShippedNameWithAnotherSmCountIsEstimated) {
  runtime::DeviceMeasurement measurement = h100_measurement();
  measurement.name = "NVIDIA H100 PCIe";
  measurement.sm_count = 114;
  measurement.memory_clock_khz = 0;  // and no memory clock: the best measured copy
  Result<cost_model::DeviceProfile> profile = calibrated_profile(measurement, false);
  ASSERT_TRUE(profile.is_ok()) << profile.status().message();
  EXPECT_EQ(profile->name, "nvidia-h100-pcie");
  EXPECT_DOUBLE_EQ(profile->fp32_flops_per_second, 114 * 1.98e9 * 128 * 2);
  EXPECT_EQ(profile->calibration.sass_architecture, "sm_90");
  EXPECT_EQ(profile->peak_dram_bytes_per_second, 2.834e12);  // the curve's best copy
  EXPECT_NE(profile->note.find("from the shipped h100 profile"), std::string::npos)
      << profile->note;
}

}  // namespace
}  // namespace stitch::driver
