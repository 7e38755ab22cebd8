// A calibrated DeviceProfile from a DeviceMeasurement (see calibrated_profile.h).
#include "driver/calibrated_profile.h"

#include <algorithm>
#include <cctype>
#include <ctime>
#include <iostream>
#include <optional>
#include <string>

namespace stitch::driver {
namespace {

std::string today_utc() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[16];
  std::strftime(text, sizeof(text), "%Y-%m-%d", &utc);
  return text;
}

std::string lowercase(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// The shipped profile of the same GPU (its name in the device name, the same SM
// count), for what CUDA does not report.
std::optional<cost_model::DeviceProfile> shipped_profile(
    const runtime::DeviceMeasurement& measurement) {
  const std::string device_name = lowercase(measurement.name);
  for (const std::string& name : cost_model::builtin_device_profile_names()) {
    if (device_name.find(name) == std::string::npos) continue;
    Result<cost_model::DeviceProfile> builtin = cost_model::builtin_device_profile(name);
    if (builtin.is_ok() && builtin->sm_count == measurement.sm_count) return *builtin;
  }
  return std::nullopt;
}

// The measurements, as measured (step 3).
void copy_measurements(const runtime::DeviceMeasurement& measurement,
                       cost_model::DeviceProfile& profile) {
  for (const runtime::MeasuredBandwidth& point : measurement.bandwidth_curve) {
    profile.bandwidth_curve.push_back({point.bytes, point.bytes_per_second});
  }
  profile.l2_bytes_per_second = measurement.l2_bytes_per_second;
  profile.launch_latency_us = measurement.launch_latency_us;
  profile.grid_barrier_us = measurement.grid_barrier_us;
  profile.global_load_latency_ns = measurement.global_load_latency_ns;
}

// The profile's device fields and peaks, from the device's facts, the shipped
// profile when one matches, and the highest measured bandwidth (steps 1, 2, 4, 5).
Status describe_device(const runtime::DeviceMeasurement& measurement, bool verbose,
                       cost_model::DeviceProfile& profile) {
  const std::optional<cost_model::DeviceProfile> shipped = shipped_profile(measurement);
  if (shipped) {
    profile.name = shipped->name;
  } else {
    profile.name = lowercase(measurement.name);
    std::replace(profile.name.begin(), profile.name.end(), ' ', '-');
  }
  profile.source = "calibrated";
  profile.date = today_utc();
  profile.sku = measurement.name;
  profile.note =
      "Measured by stitchopt calibrate: bandwidth_curve (a streaming copy, bytes read "
      "plus written, L2 flushed, median of each size), l2_bytes_per_second (the copy over "
      "a quarter of the L2, not flushed), launch_latency_us (back-to-back empty kernels) "
      "and grid_barrier_us (the emitted stitch_grid_sync, one block per SM).";
  profile.sm_count = measurement.sm_count;
  profile.max_threads_per_block = measurement.max_threads_per_block;
  profile.max_threads_per_sm = measurement.max_threads_per_sm;
  profile.warp_size = measurement.warp_size;
  profile.registers_per_block = measurement.registers_per_block;
  profile.registers_per_sm = measurement.registers_per_sm;
  profile.shared_memory_per_block = measurement.shared_memory_per_block;
  profile.shared_memory_per_block_optin = measurement.shared_memory_per_block_optin;
  profile.shared_memory_per_sm = measurement.shared_memory_per_sm;
  profile.l2_bytes = measurement.l2_bytes;
  if (measurement.memory_clock_khz > 0 && measurement.bus_bits > 0) {
    profile.peak_dram_bytes_per_second =
        2.0 * measurement.memory_clock_khz * 1e3 * measurement.bus_bits / 8.0;
  } else if (shipped) {
    profile.peak_dram_bytes_per_second = shipped->peak_dram_bytes_per_second;
  } else {  // the best copy measured
    profile.peak_dram_bytes_per_second = 0;
    for (const runtime::MeasuredBandwidth& point : measurement.bandwidth_curve) {
      profile.peak_dram_bytes_per_second =
          std::max(profile.peak_dram_bytes_per_second, point.bytes_per_second);
    }
  }
  profile.sm_clock_hz = measurement.clock_khz * 1e3;
  profile.max_blocks_per_sm = measurement.max_blocks_per_sm;
  if (shipped) {
    profile.fp32_flops_per_second = shipped->fp32_flops_per_second;
    profile.fp16_flops_per_second = shipped->fp16_flops_per_second;
    profile.tf32_flops_per_second = shipped->tf32_flops_per_second;
    profile.fp64_flops_per_second = shipped->fp64_flops_per_second;
    profile.block_barrier_cycles = shipped->block_barrier_cycles;
    profile.atomic_same_address_ns = shipped->atomic_same_address_ns;
    profile.library_efficiency = shipped->library_efficiency;
    profile.l1_bytes_per_sm = shipped->l1_bytes_per_sm;
    profile.calibration = shipped->calibration;  // the model's fits, with their provenance
    return Status::ok();
  }
  profile.fp32_flops_per_second =
      static_cast<double>(measurement.sm_count) * measurement.clock_khz * 1e3 * 128 * 2;
  profile.fp16_flops_per_second = 2 * profile.fp32_flops_per_second;
  // TF32 tensor cores from Ampere on, at half the fp16 rate (A100, H100); none before.
  profile.tf32_flops_per_second =
      measurement.compute_capability_major >= 8 ? profile.fp16_flops_per_second / 2 : 0;
  const int major = measurement.compute_capability_major;
  const std::string nearest = major >= 9 ? "h100" : (major == 8 ? "a100" : "v100");
  STITCH_ASSIGN_OR_RETURN(cost_model::DeviceProfile reference,
                          cost_model::builtin_device_profile(nearest));
  profile.fp64_flops_per_second = reference.fp64_flops_per_second *
                                  (profile.sm_count * profile.sm_clock_hz) /
                                  (reference.sm_count * reference.sm_clock_hz);
  profile.block_barrier_cycles = reference.block_barrier_cycles;
  profile.atomic_same_address_ns = reference.atomic_same_address_ns;
  profile.library_efficiency = reference.library_efficiency;
  profile.l1_bytes_per_sm = reference.l1_bytes_per_sm;
  // The model's fits are the nearest shipped profile's; the SASS is this GPU's own.
  profile.calibration = reference.calibration;
  profile.calibration.sass_architecture =
      "sm_" + std::to_string(major * 10 + measurement.compute_capability_minor);
  for (auto& [key, provenance] : profile.calibration.provenance) {
    if (key == "sass_architecture") provenance = "the device's compute capability (calibrate)";
  }
  profile.note +=
      " fp32/fp16 peaks are estimates (no shipped profile matches this GPU); fp64, "
      "block_barrier_cycles, atomic_same_address_ns and library_efficiency come "
      "from the shipped " +
      nearest + " profile, and so does the calibration block but its sass_architecture.";
  if (verbose) {
    std::cerr << "calibrate: no shipped profile matches " << measurement.name
              << "; fp32/fp16 peaks are estimates (SMs x clock x 128 lanes x 2, fp16 twice "
                 "that: no tensor cores), the rest from the shipped "
              << nearest << " profile\n";
  }
  return Status::ok();
}

}  // namespace

Result<cost_model::DeviceProfile> calibrated_profile(const runtime::DeviceMeasurement& measurement,
                                                     bool verbose) {
  cost_model::DeviceProfile profile{};
  copy_measurements(measurement, profile);
  STITCH_RETURN_IF_ERROR(describe_device(measurement, verbose, profile));
  return profile;
}

}  // namespace stitch::driver
