// DeviceProfile parsing: valid profiles, exact error messages, the range of every
// field, files that are no regular file, shipped profiles.
#include "cost_model/device_profile.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

namespace stitch::cost_model {
namespace {

// A calibration block: its numbers (the shipped ones), then one provenance per key.
#define STITCH_TEST_PROVENANCE                                                              \
  "\"provenance\": {\"sass_architecture\": \"cc\", \"warp_schedulers_per_sm\": \"w\", "     \
  "\"integer_lanes_per_sm_clock\": \"i\", \"special_lanes_per_sm_clock\": \"s\", "          \
  "\"memory_lanes_per_sm_clock\": \"m\", \"thread_gemm_instructions_per_mac\": \"t\", "     \
  "\"tiled_gemm_instructions_per_mac\": \"t\", \"attention_instructions_per_mac\": \"a\", " \
  "\"recomputed_dot_load_share\": \"r\", \"gemm_load_share\": \"g\", "                      \
  "\"stencil_load_share\": \"s\", \"recomputed_leaf_bytes\": \"l\", "                       \
  "\"graph_launch_latency_us\": \"g\"}"

const char* kValidProfile = R"({
  "name": "test", "source": "estimate", "date": "2024-01-01", "note": "for tests",
  "sm_count": 80, "max_threads_per_block": 1024, "max_threads_per_sm": 2048,
  "warp_size": 32, "registers_per_block": 65536, "registers_per_sm": 65536,
  "shared_memory_per_block": 49152, "shared_memory_per_block_optin": 102400,
  "shared_memory_per_sm": 102400, "l1_bytes_per_sm": 131072, "l2_bytes": 6291456,
  "peak_dram_bytes_per_second": 1.2e12,
  "bandwidth_curve": [{"bytes": 1024, "bytes_per_second": 1e9},
                      {"bytes": 1048576, "bytes_per_second": 1e11}],
  "launch_latency_us": 5.0,
  "fp32_flops_per_second": 1e13, "fp16_flops_per_second": 1e14,
  "sm_clock_hz": 1.5e9, "max_blocks_per_sm": 32, "l2_bytes_per_second": 4e12,
  "fp64_flops_per_second": 5e12, "block_barrier_cycles": 24, "grid_barrier_us": 1.5,
  "atomic_same_address_ns": 1, "global_load_latency_ns": 130, "library_efficiency": 0.6,
  "calibration": {"sass_architecture": "sm_80", "warp_schedulers_per_sm": 4,
    "integer_lanes_per_sm_clock": 64, "special_lanes_per_sm_clock": 16,
    "memory_lanes_per_sm_clock": 32, "thread_gemm_instructions_per_mac": 60,
    "tiled_gemm_instructions_per_mac": 10, "attention_instructions_per_mac": 7.5,
    "recomputed_dot_load_share": 0.17, "gemm_load_share": 0.5, "stencil_load_share": 0.25,
    "recomputed_leaf_bytes": 4, "graph_launch_latency_us": 2.5, )" STITCH_TEST_PROVENANCE R"(}
})";

// kValidProfile with the first occurrence of `from` replaced by `to`.
std::string edited(const std::string& from, const std::string& to) {
  std::string text = kValidProfile;
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

std::string error_of(const std::string& text) {
  Result<DeviceProfile> profile = parse_device_profile(text, "t.json");
  EXPECT_FALSE(profile.is_ok());
  return profile.is_ok() ? "" : profile.status().message();
}

TEST(DeviceProfileTest, ParsesEveryField) {
  Result<DeviceProfile> profile = parse_device_profile(kValidProfile, "t.json");
  ASSERT_TRUE(profile.is_ok()) << profile.status().message();
  EXPECT_EQ(profile->name, "test");
  EXPECT_EQ(profile->source, "estimate");
  EXPECT_EQ(profile->date, "2024-01-01");
  EXPECT_EQ(profile->sm_count, 80);
  EXPECT_EQ(profile->max_threads_per_block, 1024);
  EXPECT_EQ(profile->max_threads_per_sm, 2048);
  EXPECT_EQ(profile->warp_size, 32);
  EXPECT_EQ(profile->registers_per_block, 65536);
  EXPECT_EQ(profile->registers_per_sm, 65536);
  EXPECT_EQ(profile->shared_memory_per_block, 49152);
  EXPECT_EQ(profile->shared_memory_per_block_optin, 102400);
  EXPECT_EQ(profile->shared_memory_per_sm, 102400);
  EXPECT_EQ(profile->l1_bytes_per_sm, 131072);
  EXPECT_EQ(profile->l2_bytes, 6291456);
  EXPECT_EQ(profile->peak_dram_bytes_per_second, 1.2e12);
  ASSERT_EQ(profile->bandwidth_curve.size(), 2u);
  EXPECT_EQ(profile->bandwidth_curve[1].bytes, 1048576.0);
  EXPECT_EQ(profile->bandwidth_curve[1].bytes_per_second, 1e11);
  EXPECT_EQ(profile->launch_latency_us, 5.0);
  EXPECT_EQ(profile->fp32_flops_per_second, 1e13);
  EXPECT_EQ(profile->fp16_flops_per_second, 1e14);
  const Calibration& calibration = profile->calibration;
  EXPECT_EQ(calibration.sass_architecture, "sm_80");
  EXPECT_EQ(sass_architecture(*profile), "sm_80");
  EXPECT_EQ(calibration.warp_schedulers_per_sm, 4);
  EXPECT_EQ(calibration.integer_lanes_per_sm_clock, 64);
  EXPECT_EQ(calibration.special_lanes_per_sm_clock, 16);
  EXPECT_EQ(calibration.memory_lanes_per_sm_clock, 32);
  EXPECT_EQ(calibration.thread_gemm_instructions_per_mac, 60);
  EXPECT_EQ(calibration.tiled_gemm_instructions_per_mac, 10);
  EXPECT_EQ(calibration.attention_instructions_per_mac, 7.5);
  EXPECT_EQ(calibration.recomputed_dot_load_share, 0.17);
  EXPECT_EQ(calibration.gemm_load_share, 0.5);
  EXPECT_EQ(calibration.stencil_load_share, 0.25);
  EXPECT_EQ(calibration.recomputed_leaf_bytes, 4);
  EXPECT_EQ(calibration.graph_launch_latency_us, 2.5);
  ASSERT_EQ(calibration.provenance.size(), 13u);
  EXPECT_EQ(calibration.provenance[0],
            (std::pair<std::string, std::string>("sass_architecture", "cc")));
  EXPECT_EQ(calibration.provenance[12].first, "graph_launch_latency_us");
}

// The calibration block (issue 37): required, every key in its range, the architecture
// spelled as nvcc's -arch, and a provenance for each number.
TEST(DeviceProfileTest, CalibrationBlock) {
  std::string without = kValidProfile;
  const size_t block = without.find(",\n  \"calibration\"");
  ASSERT_NE(block, std::string::npos);
  without = without.substr(0, block) + "\n}";
  EXPECT_EQ(error_of(without),
            "t.json: key \"calibration\": missing; every profile needs the performance model's "
            "calibration block since issue 37: copy it from the shipped profile of the same "
            "architecture (cost_model/profiles/*.json, docs/cost-model.md \"Calibration\") or "
            "recompile the output");
  EXPECT_EQ(error_of(edited("\"calibration\": {", "\"calibration\": 4, \"x\": {")),
            "t.json: key \"calibration\": expected an object, got an integer");
  EXPECT_EQ(error_of(edited("\"gemm_load_share\": 0.5,", "")),
            "t.json: key \"calibration.gemm_load_share\": missing; every profile needs it (see "
            "cost_model/profiles/h100.json)");
  EXPECT_EQ(error_of(edited("\"gemm_load_share\": 0.5", "\"gemm_load_share\": 1.5")),
            "t.json: key \"calibration.gemm_load_share\": must be between 0 and 1 (a fraction of "
            "the load chain), got 1.5");
  EXPECT_EQ(error_of(edited("\"warp_schedulers_per_sm\": 4", "\"warp_schedulers_per_sm\": 0")),
            "t.json: key \"calibration.warp_schedulers_per_sm\": must be between 1 and 8 (warp "
            "instructions issued per SM per clock; 4 on every GPU since Maxwell), got 0");
  EXPECT_EQ(error_of(edited("\"attention_instructions_per_mac\": 7.5",
                            "\"attention_instructions_per_mac\": \"7.5\"")),
            "t.json: key \"calibration.attention_instructions_per_mac\": expected a number, got a "
            "string");
  EXPECT_EQ(error_of(edited("\"graph_launch_latency_us\": 2.5", "\"graph_launch_latency_us\": -1")),
            "t.json: key \"calibration.graph_launch_latency_us\": must be between 0 and 1e+06 "
            "(microseconds), got -1");
  EXPECT_EQ(
      error_of(edited("\"stencil_load_share\": 0.25,", "\"stencil_load_share\": 0.25, \"x\": 1,")),
      "t.json: unknown key \"calibration.x\"; remove it or fix its spelling");
  for (const char* arch : {"sm_60", "sm_9", "sm_090", "sm_130", "compute_90", "sm_9a", "90"}) {
    EXPECT_EQ(error_of(edited("\"sm_80\"", "\"" + std::string(arch) + "\"")),
              "t.json: key \"calibration.sass_architecture\": must be \"sm_\" and the compute "
              "capability's digits, from sm_70 to sm_129 (\"sm_90\" for H100), got \"" +
                  std::string(arch) + "\"");
  }
  for (const char* arch : {"sm_70", "sm_89", "sm_120"}) {
    Result<DeviceProfile> profile =
        parse_device_profile(edited("\"sm_80\"", "\"" + std::string(arch) + "\""), "t.json");
    ASSERT_TRUE(profile.is_ok()) << profile.status().message();
    EXPECT_EQ(sass_architecture(*profile), arch);
  }
  EXPECT_EQ(error_of(edited("\"gemm_load_share\": \"g\", ", "")),
            "t.json: key \"calibration.provenance.gemm_load_share\": missing; every profile "
            "needs it (see cost_model/profiles/h100.json)");
  EXPECT_EQ(error_of(edited("\"gemm_load_share\": \"g\"", "\"gemm_load_share\": 0.5")),
            "t.json: key \"calibration.provenance.gemm_load_share\": expected a string, got a "
            "number");
  EXPECT_EQ(
      error_of(edited("\"gemm_load_share\": \"g\"", "\"gemm_load_share\": \"g\", \"gem\": \"g\"")),
      "t.json: unknown key \"calibration.provenance.gem\"; remove it or fix its spelling");
  EXPECT_EQ(error_of(edited("\"gemm_load_share\": \"g\"", "\"gemm_load_share\": \"\"")),
            "t.json: key \"calibration.provenance.gemm_load_share\": is empty; say which run "
            "fitted the value, or where it is from");
}

// phi follows the launch mode: a host launch's as loaded (the field's default), a graph
// replay's under kGraph; set_launch_phi (--launch-latency-us) sets the mode's own.
TEST(DeviceProfileTest, LaunchModeSetsPhi) {
  Result<DeviceProfile> loaded = builtin_device_profile("h100");
  ASSERT_TRUE(loaded.is_ok());
  DeviceProfile profile = *loaded;
  EXPECT_EQ(profile.launch_mode, LaunchMode::kHost);
  EXPECT_EQ(launch_phi(profile), profile.launch_latency_us);
  profile.launch_mode = LaunchMode::kGraph;
  EXPECT_EQ(launch_phi(profile), profile.calibration.graph_launch_latency_us);
  EXPECT_LT(launch_phi(profile), profile.launch_latency_us) << "a replay costs less";
  const double host = profile.launch_latency_us;
  set_launch_phi(&profile, 1.25);
  EXPECT_EQ(launch_phi(profile), 1.25);
  EXPECT_EQ(profile.launch_latency_us, host) << "the host launch's is kept";
  profile.launch_mode = LaunchMode::kHost;
  set_launch_phi(&profile, 7.5);
  EXPECT_EQ(profile.launch_latency_us, 7.5);
  EXPECT_EQ(profile.calibration.graph_launch_latency_us, 1.25);
  EXPECT_EQ(launch_mode_name(LaunchMode::kGraph), "graph");
  EXPECT_EQ(launch_mode_name(LaunchMode::kHost), "host");
  EXPECT_EQ(parse_launch_mode("graph"), LaunchMode::kGraph);
  EXPECT_EQ(parse_launch_mode("host"), LaunchMode::kHost);
  EXPECT_EQ(parse_launch_mode("Graph"), std::nullopt);
}

TEST(DeviceProfileTest, MissingKey) {
  EXPECT_EQ(error_of(edited("\"sm_count\": 80,", "")),
            "t.json: key \"sm_count\": missing; every profile needs it (see "
            "cost_model/profiles/h100.json)");
}

TEST(DeviceProfileTest, WrongTypes) {
  EXPECT_EQ(error_of(edited("\"sm_count\": 80", "\"sm_count\": \"80\"")),
            "t.json: key \"sm_count\": expected an integer, got a string");
  EXPECT_EQ(error_of(edited("\"sm_count\": 80", "\"sm_count\": 80.5")),
            "t.json: key \"sm_count\": expected an integer, got a number");
  EXPECT_EQ(error_of(edited("\"name\": \"test\"", "\"name\": 3")),
            "t.json: key \"name\": expected a string, got an integer");
  EXPECT_EQ(error_of(edited("\"launch_latency_us\": 5.0", "\"launch_latency_us\": [5]")),
            "t.json: key \"launch_latency_us\": expected a number, got a list");
  EXPECT_EQ(error_of(edited("\"note\": \"for tests\"", "\"note\": 1")),
            "t.json: key \"note\": expected a string, got an integer");
}

TEST(DeviceProfileTest, NonPositiveNumbers) {
  EXPECT_EQ(error_of(edited("\"sm_count\": 80", "\"sm_count\": 0")),
            "t.json: key \"sm_count\": must be between 1 and 4096 (streaming multiprocessors), "
            "got 0");
  EXPECT_EQ(error_of(edited("\"launch_latency_us\": 5.0", "\"launch_latency_us\": -5")),
            "t.json: key \"launch_latency_us\": must be between 0 and 1e+06 (microseconds, as "
            "--launch-latency-us accepts), got -5");
}

// Positive, finite values that made a score infinite (issue 36 R9): each is refused
// with the key, the value and the range.
TEST(DeviceProfileTest, ExtremeRatesAndLatencies) {
  EXPECT_EQ(error_of(edited("\"launch_latency_us\": 5.0", "\"launch_latency_us\": 1e308")),
            "t.json: key \"launch_latency_us\": must be between 0 and 1e+06 (microseconds, as "
            "--launch-latency-us accepts), got 1e+308");
  EXPECT_EQ(
      error_of(edited("\"fp32_flops_per_second\": 1e13", "\"fp32_flops_per_second\": 1e-308")),
      "t.json: key \"fp32_flops_per_second\": must be between 1e+09 and 1e+18 (FLOP/s), got "
      "1e-308");
  EXPECT_EQ(error_of(edited("\"bytes\": 1024, \"bytes_per_second\": 1e9",
                            "\"bytes\": 1e-308, \"bytes_per_second\": 1e9")),
            "t.json: key \"bandwidth_curve\": point 0: \"bytes\" must be between 1 and 1e+15 "
            "(bytes moved by one kernel), got 1e-308");
  EXPECT_EQ(error_of(edited("\"bytes_per_second\": 1e9", "\"bytes_per_second\": 1e-308")),
            "t.json: key \"bandwidth_curve\": point 0: \"bytes_per_second\" must be between 1000 "
            "and 1e+15 (bytes per second), got 1e-308");
  EXPECT_EQ(error_of(edited("\"library_efficiency\": 0.6", "\"library_efficiency\": 1.5")),
            "t.json: key \"library_efficiency\": must be between 0.001 and 1 (a fraction of peak), "
            "got 1.5");
}

// Geometry no emitted kernel can run on (issue 36 R9, W8): zero co-resident blocks,
// or a warp size the kernels' shuffles do not have.
TEST(DeviceProfileTest, ImpossibleGeometry) {
  const std::string warp =
      "must be 32 (every NVIDIA GPU has 32-lane warps, and the emitted kernels' shuffles "
      "assume them), got ";
  for (const char* size : {"1", "7", "64", "2147483647"}) {
    EXPECT_EQ(error_of(edited("\"warp_size\": 32", std::string("\"warp_size\": ") + size)),
              "t.json: key \"warp_size\": " + warp + size);
  }
  EXPECT_EQ(error_of(edited("\"max_threads_per_block\": 1024", "\"max_threads_per_block\": 1")),
            "t.json: key \"max_threads_per_block\": must be between 1024 and 4096 (threads; every "
            "NVIDIA GPU allows 1024, and emitted kernels launch up to 512), got 1");
  EXPECT_EQ(error_of(edited("\"max_threads_per_sm\": 2048", "\"max_threads_per_sm\": 1")),
            "t.json: key \"max_threads_per_sm\": must be between 1024 and 65536 (threads), got 1");
  EXPECT_EQ(error_of(edited("\"registers_per_block\": 65536", "\"registers_per_block\": 1")),
            "t.json: key \"registers_per_block\": must be between 65536 and 1048576 (32-bit "
            "registers; every NVIDIA GPU since Kepler has 65536, enough for 1024 threads of 64), "
            "got 1");
  EXPECT_EQ(error_of(edited("\"registers_per_sm\": 65536", "\"registers_per_sm\": 1")),
            "t.json: key \"registers_per_sm\": must be between 65536 and 1048576 (32-bit "
            "registers), got 1");
  EXPECT_EQ(
      error_of(edited("\"shared_memory_per_block\": 49152", "\"shared_memory_per_block\": 65536")),
      "t.json: key \"shared_memory_per_block\": must be 49152 (bytes; the emitted kernels "
      "launch without the opt-in attribute, so CUDA's default 48 KiB per block applies on "
      "every GPU), got 65536");
  EXPECT_EQ(
      error_of(edited("\"max_blocks_per_sm\": 32", "\"max_blocks_per_sm\": 0")),
      "t.json: key \"max_blocks_per_sm\": must be between 1 and 1024 (resident blocks), got 0");
}

// Integers past int64 and int are refused before they are narrowed into the field.
TEST(DeviceProfileTest, IntegersTooLargeForTheirField) {
  EXPECT_EQ(error_of(edited("\"sm_count\": 80", "\"sm_count\": 18446744073709551615")),
            "t.json: key \"sm_count\": must be between 1 and 4096 (streaming multiprocessors), "
            "got 18446744073709551615");
  EXPECT_EQ(error_of(edited("\"sm_count\": 80", "\"sm_count\": 4294967376")),
            "t.json: key \"sm_count\": must be between 1 and 4096 (streaming multiprocessors), "
            "got 4294967376");
  EXPECT_EQ(error_of(edited("\"l2_bytes\": 6291456", "\"l2_bytes\": -6291456")),
            "t.json: key \"l2_bytes\": must be between 1048576 and 4294967296 (bytes), got "
            "-6291456");
}

// Every field at the low end of its range, then at the high end, is a valid profile:
// the ranges and the checks between fields agree with each other.
TEST(DeviceProfileTest, TheCornersOfTheRangesAreAccepted) {
  const std::string low = R"({
    "name": "low", "source": "calibrated", "date": "2024-01-01",
    "sm_count": 1, "max_threads_per_block": 1024, "max_threads_per_sm": 1024,
    "warp_size": 32, "registers_per_block": 65536, "registers_per_sm": 65536,
    "shared_memory_per_block": 49152, "shared_memory_per_block_optin": 49152,
    "shared_memory_per_sm": 49152, "l1_bytes_per_sm": 0, "l2_bytes": 1048576,
    "peak_dram_bytes_per_second": 1e9,
    "bandwidth_curve": [{"bytes": 1, "bytes_per_second": 1e3}],
    "launch_latency_us": 0, "fp32_flops_per_second": 1e9, "fp16_flops_per_second": 1e9,
    "sm_clock_hz": 1e8, "max_blocks_per_sm": 1, "l2_bytes_per_second": 1e9,
    "fp64_flops_per_second": 1e8, "block_barrier_cycles": 1, "grid_barrier_us": 1e-3,
    "atomic_same_address_ns": 1e-3, "global_load_latency_ns": 1, "library_efficiency": 1e-3,
    "calibration": {"sass_architecture": "sm_70", "warp_schedulers_per_sm": 1,
      "integer_lanes_per_sm_clock": 1, "special_lanes_per_sm_clock": 1,
      "memory_lanes_per_sm_clock": 1, "thread_gemm_instructions_per_mac": 0.1,
      "tiled_gemm_instructions_per_mac": 0.1, "attention_instructions_per_mac": 0.1,
      "recomputed_dot_load_share": 0, "gemm_load_share": 0, "stencil_load_share": 0,
      "recomputed_leaf_bytes": 1, "graph_launch_latency_us": 0, )" STITCH_TEST_PROVENANCE R"(}
  })";
  const std::string high = R"({
    "name": "high", "source": "calibrated", "date": "2024-01-01",
    "sm_count": 4096, "max_threads_per_block": 4096, "max_threads_per_sm": 65536,
    "warp_size": 32, "registers_per_block": 1048576, "registers_per_sm": 1048576,
    "shared_memory_per_block": 49152, "shared_memory_per_block_optin": 4194304,
    "shared_memory_per_sm": 4194304, "l1_bytes_per_sm": 4194304, "l2_bytes": 4294967296,
    "peak_dram_bytes_per_second": 1e15,
    "bandwidth_curve": [{"bytes": 1, "bytes_per_second": 1e15},
                        {"bytes": 1e15, "bytes_per_second": 1e15}],
    "launch_latency_us": 1e6, "fp32_flops_per_second": 1e18, "fp16_flops_per_second": 1e18,
    "sm_clock_hz": 1e11, "max_blocks_per_sm": 1024, "l2_bytes_per_second": 1e16,
    "fp64_flops_per_second": 1e18, "block_barrier_cycles": 1e5, "grid_barrier_us": 1e6,
    "atomic_same_address_ns": 1e6, "global_load_latency_ns": 1e6, "library_efficiency": 1,
    "calibration": {"sass_architecture": "sm_129", "warp_schedulers_per_sm": 8,
      "integer_lanes_per_sm_clock": 256, "special_lanes_per_sm_clock": 256,
      "memory_lanes_per_sm_clock": 256, "thread_gemm_instructions_per_mac": 1000,
      "tiled_gemm_instructions_per_mac": 1000, "attention_instructions_per_mac": 1000,
      "recomputed_dot_load_share": 1, "gemm_load_share": 1, "stencil_load_share": 1,
      "recomputed_leaf_bytes": 64, "graph_launch_latency_us": 1e6, )" STITCH_TEST_PROVENANCE R"(}
  })";
  for (const std::string& text : {low, high}) {
    Result<DeviceProfile> profile = parse_device_profile(text, "corner.json");
    ASSERT_TRUE(profile.is_ok()) << profile.status().message();
  }
}

// validate_device_profile on a profile changed after loading: a launch latency
// override, a calibrated measurement that came out wrong.
TEST(DeviceProfileTest, ValidatesAChangedProfile) {
  Result<DeviceProfile> builtin = builtin_device_profile("h100");
  ASSERT_TRUE(builtin.is_ok()) << builtin.status().message();
  EXPECT_TRUE(validate_device_profile(*builtin, "h100").is_ok());
  DeviceProfile overridden = *builtin;
  overridden.launch_latency_us = 0;  // what --launch-latency-us 0 gives
  EXPECT_TRUE(validate_device_profile(overridden, "h100").is_ok());
  overridden.launch_latency_us = 2e6;
  EXPECT_EQ(validate_device_profile(overridden, "--launch-latency-us").message(),
            "--launch-latency-us: key \"launch_latency_us\": must be between 0 and 1e+06 "
            "(microseconds, as --launch-latency-us accepts), got 2e+06");
  DeviceProfile measured = *builtin;
  measured.grid_barrier_us = std::nan("");
  EXPECT_EQ(validate_device_profile(measured, "calibrated.json").message(),
            "calibrated.json: key \"grid_barrier_us\": must be between 0.001 and 1e+06 "
            "(microseconds), got nan");
  measured = *builtin;
  std::swap(measured.bandwidth_curve[0], measured.bandwidth_curve[1]);
  EXPECT_EQ(validate_device_profile(measured, "calibrated.json").message(),
            "calibrated.json: key \"bandwidth_curve\": point 1: bytes 1024 must be greater than "
            "the previous point's 4096 (sort the curve by bytes, no duplicates)");
  measured = *builtin;
  measured.calibration.gemm_load_share = std::nan("");
  EXPECT_EQ(validate_device_profile(measured, "calibrated.json").message(),
            "calibrated.json: key \"calibration.gemm_load_share\": must be between 0 and 1 (a "
            "fraction of the load chain), got nan");
  measured = *builtin;
  measured.calibration.sass_architecture = "sm_61";
  EXPECT_EQ(validate_device_profile(measured, "calibrated.json").message(),
            "calibrated.json: key \"calibration.sass_architecture\": must be \"sm_\" and the "
            "compute capability's digits, from sm_70 to sm_129 (\"sm_90\" for H100), got "
            "\"sm_61\"");
  measured = *builtin;
  measured.calibration.provenance.pop_back();
  EXPECT_EQ(validate_device_profile(measured, "calibrated.json").message(),
            "calibrated.json: key \"calibration.provenance\": needs one entry per calibration "
            "key, in order; \"graph_launch_latency_us\" is missing");
  measured = *builtin;
  measured.calibration.provenance.emplace_back("extra", "x");
  EXPECT_EQ(validate_device_profile(measured, "calibrated.json").message(),
            "calibrated.json: key \"calibration.provenance\": has an entry \"extra\" that names "
            "no calibration key");
  measured = *builtin;
  measured.bandwidth_curve.clear();
  EXPECT_EQ(validate_device_profile(measured, "calibrated.json").message(),
            "calibrated.json: key \"bandwidth_curve\": needs at least one point");
}

// A profile path that is no regular file is refused without blocking or reading it.
TEST(DeviceProfileTest, ProfileFilesThatAreNoRegularFile) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("stitch_device_profile_test_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string fifo = (dir / "fifo.json").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string zero = (dir / "zero.json").string();
  std::filesystem::create_symlink("/dev/zero", zero);
  const std::string big = (dir / "big.json").string();
  std::ofstream(big) << std::string((1 << 20) + 1, ' ');
  const std::string hint = "; check the path, or use a builtin name (a100, h100, h200, v100)";
  EXPECT_EQ(resolve_device_profile(fifo).status().message(),
            fifo + ": the device profile is a FIFO, not a regular file" + hint);
  EXPECT_EQ(resolve_device_profile(zero).status().message(),
            zero + ": the device profile is a character device, not a regular file" + hint);
  EXPECT_EQ(resolve_device_profile(big).status().message(),
            big +
                ": the device profile is 1048577 bytes, more than the 1 MiB (1048576 bytes) a "
                "device profile may have" +
                hint);
  std::filesystem::remove_all(dir);
}

TEST(DeviceProfileTest, BadSource) {
  EXPECT_EQ(error_of(edited("\"estimate\"", "\"measured\"")),
            "t.json: key \"source\": expected \"estimate\" or \"calibrated\", got \"measured\"");
}

TEST(DeviceProfileTest, CurveErrors) {
  EXPECT_EQ(error_of(edited("\"bytes\": 1048576", "\"bytes\": 512")),
            "t.json: key \"bandwidth_curve\": point 1: bytes 512 must be greater than the "
            "previous point's 1024 (sort the curve by bytes, no duplicates)");
  EXPECT_EQ(error_of(edited("\"bytes\": 1048576", "\"bytes\": 1024")),
            "t.json: key \"bandwidth_curve\": point 1: bytes 1024 must be greater than the "
            "previous point's 1024 (sort the curve by bytes, no duplicates)");
  EXPECT_EQ(error_of(edited("\"bytes_per_second\": 1e9", "\"bytes_per_second\": -1")),
            "t.json: key \"bandwidth_curve\": point 0: \"bytes_per_second\" must be between 1000 "
            "and 1e+15 (bytes per second), got -1");
  EXPECT_EQ(error_of(edited("\"bytes_per_second\": 1e9", "\"bytes_per_second\": \"fast\"")),
            "t.json: key \"bandwidth_curve\": point 0: \"bytes_per_second\" expected a number, "
            "got a string");
  EXPECT_EQ(error_of(edited("\"bytes\": 1024, ", "")),
            "t.json: key \"bandwidth_curve\": point 0: \"bytes\" missing");
  EXPECT_EQ(error_of(edited("\"bytes\": 1024,", "\"bytes\": 1024, \"extra\": 1,")),
            "t.json: key \"bandwidth_curve\": point 0: only \"bytes\" and \"bytes_per_second\" "
            "are allowed");
}

TEST(DeviceProfileTest, EmptyAndNonListCurve) {
  std::string text = kValidProfile;
  size_t begin = text.find("[{");
  size_t end = text.find("}]") + 2;
  std::string empty = text;
  empty.replace(begin, end - begin, "[]");
  EXPECT_EQ(error_of(empty), "t.json: key \"bandwidth_curve\": needs at least one point");
  std::string object = text;
  object.replace(begin, end - begin, "{}");
  EXPECT_EQ(error_of(object),
            "t.json: key \"bandwidth_curve\": expected a list of {\"bytes\", "
            "\"bytes_per_second\"} objects, got an object");
}

TEST(DeviceProfileTest, UnknownKeyAndBadJson) {
  EXPECT_EQ(error_of(edited("\"l2_bytes\"", "\"l2_cache\": 1, \"l2_bytes\"")),
            "t.json: unknown key \"l2_cache\"; remove it or fix its spelling");
  EXPECT_EQ(error_of("{\"name\": "), "t.json: not valid JSON; check brackets, commas and quotes");
  EXPECT_EQ(error_of("[1, 2]"), "t.json: expected a JSON object at the top level, got a list");
}

// A per-block limit above the SM's: no block of that size could ever be resident.
TEST(DeviceProfileTest, CrossFieldChecks) {
  EXPECT_EQ(error_of(edited("\"max_threads_per_block\": 1024", "\"max_threads_per_block\": 4096")),
            "t.json: key \"max_threads_per_block\": must be at most max_threads_per_sm (2048)");
  EXPECT_EQ(error_of(edited("\"registers_per_block\": 65536", "\"registers_per_block\": 131072")),
            "t.json: key \"registers_per_block\": must be at most registers_per_sm (65536)");
  EXPECT_EQ(error_of(edited("\"shared_memory_per_block_optin\": 102400",
                            "\"shared_memory_per_block_optin\": 204800")),
            "t.json: key \"shared_memory_per_block_optin\": must be at most shared_memory_per_sm "
            "(102400)");
  EXPECT_EQ(error_of(edited("\"l1_bytes_per_sm\": 131072", "\"l1_bytes_per_sm\": 65536")),
            "t.json: key \"l1_bytes_per_sm\": must be 0 or at least shared_memory_per_sm "
            "(102400): the L1 and shared memory share one array");
}

// l1_bytes_per_sm is optional (profiles written before it): absent, the estimate has
// no L1; 0 says the same.
TEST(DeviceProfileTest, L1IsOptional) {
  Result<DeviceProfile> without =
      parse_device_profile(edited("\"l1_bytes_per_sm\": 131072, ", ""), "t.json");
  ASSERT_TRUE(without.is_ok()) << without.status().message();
  EXPECT_EQ(without->l1_bytes_per_sm, 0);
  Result<DeviceProfile> zero = parse_device_profile(
      edited("\"l1_bytes_per_sm\": 131072", "\"l1_bytes_per_sm\": 0"), "t.json");
  ASSERT_TRUE(zero.is_ok()) << zero.status().message();
  EXPECT_EQ(zero->l1_bytes_per_sm, 0);
}

TEST(DeviceProfileTest, MissingFile) {
  Result<DeviceProfile> profile = load_device_profile("/nonexistent/gpu.json");
  ASSERT_FALSE(profile.is_ok());
  EXPECT_EQ(profile.status().message(),
            "/nonexistent/gpu.json: cannot open the device profile: No such file or directory; "
            "check the path, or use a builtin name (a100, h100, h200, v100)");
}

TEST(DeviceProfileTest, UnknownBuiltin) {
  Result<DeviceProfile> profile = builtin_device_profile("h300");
  ASSERT_FALSE(profile.is_ok());
  EXPECT_EQ(profile.status().message(),
            "unknown device \"h300\"; known devices: a100, h100, h200, v100 (or pass a profile "
            "JSON file)");
}

struct ShippedExpectation {
  const char* name;
  int sm_count;
  int64_t optin;
  int64_t l2;
  double peak;
  const char* sass_architecture;
};

TEST(DeviceProfileTest, ShippedProfilesLoadAndMatchTheDatasheets) {
  EXPECT_EQ(builtin_device_profile_names(),
            (std::vector<std::string>{"a100", "h100", "h200", "v100"}));
  const ShippedExpectation expectations[] = {
      {"v100", 80, 96 * 1024, 6 * 1024 * 1024, 900e9, "sm_70"},
      {"a100", 108, 163 * 1024, 40 * 1024 * 1024, 1555e9, "sm_80"},
      {"h100", 132, 227 * 1024, 50 * 1024 * 1024, 3.35e12, "sm_90"},
      {"h200", 132, 227 * 1024, 50 * 1024 * 1024, 4.8e12, "sm_90"},
  };
  for (const ShippedExpectation& expected : expectations) {
    SCOPED_TRACE(expected.name);
    Result<DeviceProfile> builtin = builtin_device_profile(expected.name);
    ASSERT_TRUE(builtin.is_ok()) << builtin.status().message();
    std::string path =
        std::string(STITCH_SOURCE_DIR) + "/cost_model/profiles/" + expected.name + ".json";
    Result<DeviceProfile> file = load_device_profile(path);
    ASSERT_TRUE(file.is_ok()) << file.status().message();
    EXPECT_EQ(builtin->name, expected.name);
    EXPECT_EQ(file->name, expected.name);
    EXPECT_EQ(builtin->source, "estimate");
    EXPECT_EQ(builtin->sm_count, expected.sm_count);
    EXPECT_EQ(builtin->shared_memory_per_block, 48 * 1024);
    EXPECT_EQ(builtin->shared_memory_per_block_optin, expected.optin);
    EXPECT_EQ(builtin->l2_bytes, expected.l2);
    EXPECT_EQ(builtin->peak_dram_bytes_per_second, expected.peak);
    EXPECT_EQ(builtin->warp_size, 32);
    // The compiled-in text is the file's text.
    EXPECT_EQ(builtin->bandwidth_curve.size(), file->bandwidth_curve.size());
    EXPECT_EQ(builtin->launch_latency_us, file->launch_latency_us);
    // The curve spans 1 KiB to 1 GiB, rises, and saturates below the peak.
    ASSERT_EQ(builtin->bandwidth_curve.size(), 12u);
    EXPECT_EQ(builtin->bandwidth_curve.front().bytes, 1024.0);
    EXPECT_EQ(builtin->bandwidth_curve.back().bytes, 1024.0 * 1024 * 1024);
    for (size_t i = 1; i < builtin->bandwidth_curve.size(); ++i) {
      EXPECT_GT(builtin->bandwidth_curve[i].bytes_per_second,
                builtin->bandwidth_curve[i - 1].bytes_per_second);
    }
    // The calibration: the GPU's own SASS, and the H100's fits (no other GPU has
    // fitted its own yet; the provenance says so).
    EXPECT_EQ(sass_architecture(*builtin), expected.sass_architecture);
    Result<DeviceProfile> h100 = builtin_device_profile("h100");
    ASSERT_TRUE(h100.is_ok());
    EXPECT_EQ(builtin->calibration.attention_instructions_per_mac,
              h100->calibration.attention_instructions_per_mac);
    EXPECT_EQ(builtin->calibration.gemm_load_share, h100->calibration.gemm_load_share);
    EXPECT_EQ(builtin->calibration.thread_gemm_instructions_per_mac, 60);
    EXPECT_EQ(builtin->calibration.tiled_gemm_instructions_per_mac, 10);
    EXPECT_EQ(builtin->calibration.attention_instructions_per_mac, 7.5);
    EXPECT_EQ(builtin->calibration.recomputed_dot_load_share, 0.17);
    EXPECT_EQ(builtin->calibration.gemm_load_share, 0.5);
    EXPECT_EQ(builtin->calibration.stencil_load_share, 0.17);
    EXPECT_EQ(builtin->calibration.warp_schedulers_per_sm, 4);
    EXPECT_EQ(builtin->calibration.recomputed_leaf_bytes, 4);
    for (const auto& [key, provenance] : builtin->calibration.provenance) {
      // Every fit was made on an H100: the other profiles say that it is borrowed.
      if (expected.name != std::string("h100") && provenance.rfind("Fitted", 0) == 0) {
        EXPECT_NE(provenance.find("not fitted on this GPU"), std::string::npos) << key;
      }
    }
    double last = builtin->bandwidth_curve.back().bytes_per_second;
    EXPECT_GT(last, 0.85 * expected.peak);
    EXPECT_LT(last, 0.9 * expected.peak * 1.001);
  }
}

// What `stitchopt calibrate` writes reads back as the same profile, every field.
TEST(DeviceProfileTest, JsonRoundTripsEveryShippedProfile) {
  for (const std::string& name : builtin_device_profile_names()) {
    Result<DeviceProfile> builtin = builtin_device_profile(name);
    ASSERT_TRUE(builtin.is_ok()) << builtin.status().message();
    DeviceProfile original = *builtin;
    original.source = "calibrated";
    original.launch_latency_us = 4.25;
    original.bandwidth_curve.back().bytes_per_second = 1.2345678901234e12;
    std::string json = device_profile_json(original);
    Result<DeviceProfile> parsed = parse_device_profile(json, "calibrated.json");
    ASSERT_TRUE(parsed.is_ok()) << parsed.status().message() << "\n" << json;
    EXPECT_EQ(device_profile_json(*parsed), json);
    EXPECT_EQ(parsed->sku, builtin->sku);
    EXPECT_FALSE(parsed->sku.empty());
    EXPECT_EQ(parsed->note, builtin->note);
    EXPECT_EQ(parsed->source, "calibrated");
    EXPECT_EQ(parsed->launch_latency_us, 4.25);
    EXPECT_EQ(parsed->bandwidth_curve.back().bytes_per_second, 1.2345678901234e12);
    EXPECT_EQ(parsed->sm_count, builtin->sm_count);
    EXPECT_EQ(parsed->shared_memory_per_sm, builtin->shared_memory_per_sm);
    EXPECT_EQ(parsed->l1_bytes_per_sm, builtin->l1_bytes_per_sm);
    EXPECT_GT(parsed->l1_bytes_per_sm, 0);
    EXPECT_EQ(parsed->fp16_flops_per_second, builtin->fp16_flops_per_second);
    EXPECT_EQ(parsed->calibration.sass_architecture, builtin->calibration.sass_architecture);
    EXPECT_EQ(parsed->calibration.attention_instructions_per_mac,
              builtin->calibration.attention_instructions_per_mac);
    EXPECT_EQ(parsed->calibration.graph_launch_latency_us,
              builtin->calibration.graph_launch_latency_us);
    EXPECT_EQ(parsed->calibration.provenance, builtin->calibration.provenance);
  }
}

}  // namespace
}  // namespace stitch::cost_model
