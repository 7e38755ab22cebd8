// The estimates at --precision (DeviceProfile::products, docs/cost-model.md,
// "Precision"): a float32 GEMM's peak under tf32, a library call's, the tiled MatMul's
// instructions on tensor cores and the operand roundings of CUDA-core GEMMs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "cost_model/cost_model.h"
#include "cost_model/perf_model.h"
#include "ir/text/text.h"
#include "tests/cost_model/cost_model_test_util.h"

namespace stitch::cost_model {
namespace {

using test_util::test_profile;

ir::Model gemm_model() {
  Result<ir::Model> model = ir::parse_model(
      "stitchopt.ir 1\nmodel ir_version=7 opsets={\"\":11}\n"
      "graph \"g\" (%a: f32[16,64,64], %b: f32[16,64,64]) {\n"
      "  %t: f32[16,64,64] = MatMul(%a, %b) {name=\"mm\"}\n  return %t\n}\n",
      "test.ir");
  STITCH_CHECK(model.is_ok()) << model.status().message();
  return std::move(model).value();
}

// 8388608 flops, compute bound at 1 GFLOP/s float32 (8388.608 us); at tf32 the TF32
// peak counts, and without one (V100: 0) float32's.
TEST(PrecisionEstimateTest, Tf32GemmRunsAtTheTf32Peak) {
  const ir::Model model = gemm_model();
  DeviceProfile profile = test_profile();
  profile.fp32_flops_per_second = 1e9;
  profile.tf32_flops_per_second = 8e9;
  EXPECT_NEAR(estimate_group(model.graph, {0}, profile).time.total_us, 8388.608 + 5, 1e-6);
  profile.products = ir::Precision::kTf32;
  EXPECT_NEAR(estimate_group(model.graph, {0}, profile).time.total_us, 8388.608 / 8 + 5, 1e-6);
  profile.products = ir::Precision::kFloat32x3;  // library calls stay strict float32
  EXPECT_NEAR(estimate_group(model.graph, {0}, profile).time.total_us, 8388.608 + 5, 1e-6);
  profile.products = ir::Precision::kTf32;
  profile.tf32_flops_per_second = 0;
  EXPECT_NEAR(estimate_group(model.graph, {0}, profile).time.total_us, 8388.608 + 5, 1e-6);
}

TEST(PrecisionEstimateTest, LibraryCallsAtTheirPeak) {
  DeviceProfile profile = test_profile();  // fp32 10, fp16 100 TFLOP/s, efficiency 0.6
  profile.tf32_flops_per_second = 50e12;
  const double flops = 6e9;
  EXPECT_NEAR(estimate_library_call(flops, 0, false, std::nullopt, profile).compute_us, 1000, 1e-6);
  EXPECT_NEAR(estimate_library_call(flops, 0, true, std::nullopt, profile).compute_us, 100, 1e-6);
  profile.products = ir::Precision::kTf32;
  EXPECT_NEAR(estimate_library_call(flops, 0, false, std::nullopt, profile).compute_us, 200, 1e-6);
  EXPECT_NEAR(estimate_library_call(flops, 0, true, std::nullopt, profile).compute_us, 100, 1e-6);
}

TEST(PrecisionEstimateTest, TiledMatMulOnTensorCoresAndRoundedCudaCoreOperands) {
  DeviceProfile profile = test_profile();
  KernelShape tiled;
  tiled.tiled_gemm_macs = 1e9;
  KernelShape thread;
  thread.thread_gemm_macs = 1e9;
  const double fp32_tiled = cuda_core_gemm_us(tiled, profile);
  const double fp32_thread = cuda_core_gemm_us(thread, profile);
  profile.products = ir::Precision::kTf32;
  EXPECT_NEAR(cuda_core_gemm_us(tiled, profile) / fp32_tiled,
              kTf32TiledInstructionsPerMac / profile.calibration.tiled_gemm_instructions_per_mac,
              1e-12);
  EXPECT_NEAR(cuda_core_gemm_us(thread, profile) / fp32_thread,
              (profile.calibration.thread_gemm_instructions_per_mac + 2) /
                  profile.calibration.thread_gemm_instructions_per_mac,
              1e-12);
  profile.products = ir::Precision::kFloat32x3;
  EXPECT_NEAR(cuda_core_gemm_us(thread, profile), fp32_thread, 1e-9);
  EXPECT_GT(cuda_core_gemm_us(tiled, profile), cuda_core_gemm_us(tiled, [&] {
              DeviceProfile tf32 = profile;
              tf32.products = ir::Precision::kTf32;
              return tf32;
            }()));
  EXPECT_LT(cuda_core_gemm_us(tiled, profile), fp32_tiled);
}

}  // namespace
}  // namespace stitch::cost_model
