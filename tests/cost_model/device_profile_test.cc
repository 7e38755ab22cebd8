// DeviceProfile parsing: valid profiles, exact error messages, shipped profiles.
#include "cost_model/device_profile.h"

#include <gtest/gtest.h>

#include <string>

namespace stitch::cost_model {
namespace {

const char* kValidProfile = R"({
  "name": "test", "source": "estimate", "date": "2024-01-01", "note": "for tests",
  "sm_count": 80, "max_threads_per_block": 1024, "max_threads_per_sm": 2048,
  "warp_size": 32, "registers_per_block": 65536, "registers_per_sm": 65536,
  "shared_memory_per_block": 49152, "shared_memory_per_block_optin": 102400,
  "shared_memory_per_sm": 102400, "l2_bytes": 6291456,
  "peak_dram_bytes_per_second": 1.2e12,
  "bandwidth_curve": [{"bytes": 1024, "bytes_per_second": 1e9},
                      {"bytes": 1048576, "bytes_per_second": 1e11}],
  "launch_latency_us": 5.0,
  "fp32_flops_per_second": 1e13, "fp16_flops_per_second": 1e14,
  "sm_clock_hz": 1.5e9, "max_blocks_per_sm": 32, "l2_bytes_per_second": 4e12,
  "fp64_flops_per_second": 5e12, "block_barrier_cycles": 24, "grid_barrier_us": 1.5,
  "atomic_same_address_ns": 1, "global_load_latency_ns": 130, "library_efficiency": 0.6
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
  EXPECT_EQ(profile->l2_bytes, 6291456);
  EXPECT_EQ(profile->peak_dram_bytes_per_second, 1.2e12);
  ASSERT_EQ(profile->bandwidth_curve.size(), 2u);
  EXPECT_EQ(profile->bandwidth_curve[1].bytes, 1048576.0);
  EXPECT_EQ(profile->bandwidth_curve[1].bytes_per_second, 1e11);
  EXPECT_EQ(profile->launch_latency_us, 5.0);
  EXPECT_EQ(profile->fp32_flops_per_second, 1e13);
  EXPECT_EQ(profile->fp16_flops_per_second, 1e14);
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
  EXPECT_EQ(error_of(edited("\"warp_size\": 32", "\"warp_size\": 0")),
            "t.json: key \"warp_size\": must be positive, got 0");
  EXPECT_EQ(error_of(edited("\"launch_latency_us\": 5.0", "\"launch_latency_us\": -5")),
            "t.json: key \"launch_latency_us\": must be positive, got -5");
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
            "t.json: key \"bandwidth_curve\": point 0: \"bytes_per_second\" must be positive, "
            "got -1");
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

TEST(DeviceProfileTest, CrossFieldChecks) {
  EXPECT_EQ(error_of(edited("\"shared_memory_per_block_optin\": 102400",
                            "\"shared_memory_per_block_optin\": 1024")),
            "t.json: key \"shared_memory_per_block_optin\": must be at least "
            "shared_memory_per_block (49152)");
}

TEST(DeviceProfileTest, MissingFile) {
  Result<DeviceProfile> profile = load_device_profile("/nonexistent/gpu.json");
  ASSERT_FALSE(profile.is_ok());
  EXPECT_EQ(profile.status().message(),
            "/nonexistent/gpu.json: cannot open the device profile; check the path, or use a "
            "builtin name (v100, a100, h100, h200)");
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
};

TEST(DeviceProfileTest, ShippedProfilesLoadAndMatchTheDatasheets) {
  EXPECT_EQ(builtin_device_profile_names(),
            (std::vector<std::string>{"a100", "h100", "h200", "v100"}));
  const ShippedExpectation expectations[] = {
      {"v100", 80, 96 * 1024, 6 * 1024 * 1024, 900e9},
      {"a100", 108, 163 * 1024, 40 * 1024 * 1024, 1555e9},
      {"h100", 132, 227 * 1024, 50 * 1024 * 1024, 3.35e12},
      {"h200", 132, 227 * 1024, 50 * 1024 * 1024, 4.8e12},
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
    EXPECT_EQ(parsed->fp16_flops_per_second, builtin->fp16_flops_per_second);
  }
}

}  // namespace
}  // namespace stitch::cost_model
