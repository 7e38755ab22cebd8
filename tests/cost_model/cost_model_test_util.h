// The fixed device profile the cost-model tests compute their expected numbers
// with (no GPU, no shipped file). Header-only.
#pragma once

#include <string>
#include <utility>

#include "cost_model/device_profile.h"
#include "ir/core/status.h"
#include "ir/text/text.h"

namespace stitch::cost_model::test_util {

// Curve (1 KiB, 1 GB/s), (1 MiB, 100 GB/s), (1 GiB, 1000 GB/s); phi = 5 us; opt-in
// shared memory 100 KiB; fp32 10 TFLOP/s.
inline DeviceProfile test_profile() {
  DeviceProfile profile{};
  profile.name = "test";
  profile.source = "estimate";
  profile.date = "2024-01-01";
  profile.sm_count = 80;
  profile.max_threads_per_block = 1024;
  profile.max_threads_per_sm = 2048;
  profile.warp_size = 32;
  profile.registers_per_block = 65536;
  profile.registers_per_sm = 65536;
  profile.shared_memory_per_block = 48 * 1024;
  profile.shared_memory_per_block_optin = 100 * 1024;
  profile.shared_memory_per_sm = 100 * 1024;
  profile.l2_bytes = 6 * 1024 * 1024;
  profile.peak_dram_bytes_per_second = 1.2e12;
  profile.bandwidth_curve = {{1024, 1e9}, {1048576, 100e9}, {1073741824, 1000e9}};
  profile.launch_latency_us = 5.0;
  profile.fp32_flops_per_second = 10e12;
  profile.fp16_flops_per_second = 100e12;
  profile.sm_clock_hz = 1.5e9;
  profile.max_blocks_per_sm = 32;
  profile.l2_bytes_per_second = 4e12;
  profile.fp64_flops_per_second = 5e12;
  profile.block_barrier_cycles = 24;
  profile.grid_barrier_us = 1.5;
  profile.atomic_same_address_ns = 1;
  profile.global_load_latency_ns = 130;
  profile.library_efficiency = 0.6;
  // The shipped profiles' calibration (cost_model/profiles/h100.json), so that the
  // charges' expected numbers below follow from these values by hand.
  Calibration& calibration = profile.calibration;
  calibration.sass_architecture = "sm_90";
  calibration.warp_schedulers_per_sm = 4;
  calibration.integer_lanes_per_sm_clock = 64;
  calibration.special_lanes_per_sm_clock = 16;
  calibration.memory_lanes_per_sm_clock = 32;
  calibration.thread_gemm_instructions_per_mac = 60;
  calibration.tiled_gemm_instructions_per_mac = 10;
  calibration.attention_instructions_per_mac = 7.5;
  calibration.recomputed_dot_load_share = 0.17;
  calibration.gemm_load_share = 0.5;
  calibration.stencil_load_share = 0.17;
  calibration.recomputed_leaf_bytes = 4;
  calibration.graph_launch_latency_us = 2.7;
  for (const char* key :
       {"sass_architecture", "warp_schedulers_per_sm", "integer_lanes_per_sm_clock",
        "special_lanes_per_sm_clock", "memory_lanes_per_sm_clock",
        "thread_gemm_instructions_per_mac", "tiled_gemm_instructions_per_mac",
        "attention_instructions_per_mac", "recomputed_dot_load_share", "gemm_load_share",
        "stencil_load_share", "recomputed_leaf_bytes", "graph_launch_latency_us"}) {
    calibration.provenance.emplace_back(key, "the test profile");
  }
  return profile;
}

// A model of one graph "g" in stitchopt's IR text: `inputs` its parameter list,
// `body` its nodes and return line (opset 11).
inline ir::Model parse(const std::string& body, const std::string& inputs) {
  std::string text = "stitchopt.ir 1\nmodel ir_version=7 opsets={\"\":11}\ngraph \"g\" (" + inputs +
                     ") {\n" + body + "}\n";
  Result<ir::Model> model = ir::parse_model(text, "test.ir");
  STITCH_CHECK(model.is_ok()) << model.status().message();
  return std::move(model).value();
}

}  // namespace stitch::cost_model::test_util
