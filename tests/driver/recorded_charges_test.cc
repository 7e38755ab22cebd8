// The artifact carries the emitted schedule's charges to the runtime: a model compiled
// with --no-stencil-tiles (ScheduleOptions::stencil_tiles = false) writes the untiled
// stencil's charges to kernels.json, the runtime reads them onto the kernel step, and
// the profile's analytic estimate costs them, not the tiled schedule a default
// build_schedule would give (which was never emitted). The predicted time is one
// number: report.json's group, kernels.json's kernel and the profile's estimate agree.
#include <unistd.h>

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "driver/compile.h"
#include "emit/cuda_emitter.h"
#include "emit/kernel_directory.h"
#include "emit/onnx_writer.h"
#include "emit/schedule.h"
#include "ir/text/text.h"
#include "profiling/profile.h"
#include "runtime_stub/program.h"
#include "support/sha256.h"

namespace stitch::driver {
namespace {
namespace fs = std::filesystem;

// A ReLU6 feeding a 7x7 depthwise conv (ConvNeXt's): the stencil composition stages
// its input in shared-memory tiles by default (emit/schedule.h 3c.), and without them
// reads it tap by tap from global memory, a load chain long enough that it, not the
// bytes, sets the predicted time.
constexpr const char* kDepthwise = R"(stitchopt.ir 1
model ir_version=8 opsets={"":17}
graph "dw" (%x: f32[1,64,112,112], %w: f32[64,1,7,7]) {
  %zero: f32[] = dense<f32[]>[0]
  %six: f32[] = dense<f32[]>[6]
  %a: f32[1,64,112,112] = Clip(%x, %zero, %six) {name="relu6"}
  %y: f32[1,64,112,112] = Conv(%a, %w) {name="dw", group=64, kernel_shape=[7,7], pads=[3,3,3,3]}
  return %y
}
)";

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class RecordedChargesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    out_ =
        fs::temp_directory_path() / ("stitch_recorded_charges_test_" + std::to_string(::getpid()));
    fs::remove_all(out_);
  }
  void TearDown() override { fs::remove_all(out_); }

  // Compiles kDepthwise with `options` and writes OUT as the CLI does (kernels/,
  // model.fused.onnx, kernels.json with the model's sha256).
  CompiledModel compile_into_out(const emit::ScheduleOptions& schedule) {
    Result<ir::Model> model = ir::parse_model(kDepthwise, "dw.ir");
    EXPECT_TRUE(model.is_ok()) << model.status().message();
    CompileOptions options;
    options.model_path = "dw.onnx";
    options.profile = device_;
    options.schedule = schedule;
    Result<CompiledModel> compiled = compile(std::move(model).value(), options);
    EXPECT_TRUE(compiled.is_ok()) << compiled.status().message();
    const fs::path kernels = out_ / "kernels";
    EXPECT_TRUE(emit::write_kernel_directory(compiled->kernels, kernels).is_ok());
    const fs::path model_file = out_ / "model.fused.onnx";
    EXPECT_TRUE(emit::write_onnx(compiled->rewritten, model_file.string()).is_ok());
    EXPECT_TRUE(
        emit::write_kernels_json(emit::kernels_artifact(compiled->kernels, compiled->predictions,
                                                        support::sha256_hex(read_text(model_file))),
                                 kernels)
            .is_ok());
    return std::move(compiled).value();
  }

  cost_model::DeviceProfile device_ = cost_model::builtin_device_profile("h100").value();
  fs::path out_;
};

TEST_F(RecordedChargesTest, ProfileCostsTheUntiledStencilThatWasEmitted) {
  emit::ScheduleOptions untiled;
  untiled.stencil_tiles = false;
  const CompiledModel compiled = compile_into_out(untiled);
  ASSERT_EQ(compiled.kernels.size(), 1u);
  ASSERT_EQ(compiled.predictions.size(), 1u);
  const emit::KernelPrediction& prediction = compiled.predictions[0];

  // What the tiled schedule of the same group would charge: more than nothing, and
  // not what was emitted.
  const ir::Graph& graph = compiled.simplified.graph;
  ASSERT_NE(compiled.plan(), nullptr);
  ASSERT_EQ(compiled.plan()->groups.size(), 1u);
  const std::vector<ir::NodeId>& nodes = compiled.plan()->groups[0].nodes;
  Result<emit::EmittedKernel> tiled_kernel =
      emit::emit_kernel(graph, emit::group_boundary(graph, nodes), "tiled", device_);
  ASSERT_TRUE(tiled_kernel.is_ok()) << tiled_kernel.status().message();
  const emit::KernelPrediction tiled = emit::predict_kernel(graph, nodes, *tiled_kernel, device_);
  ASSERT_NE(tiled.charges, prediction.charges);
  ASSERT_NE(tiled.predicted_time_us, prediction.predicted_time_us);

  Result<runtime::Program> program = runtime::load_program(out_.string());
  ASSERT_TRUE(program.is_ok()) << program.status().message();
  const runtime::Step* kernel_step = nullptr;
  for (const runtime::Step& step : program->steps) {
    if (step.kind == runtime::StepKind::kKernel) kernel_step = &step;
  }
  ASSERT_NE(kernel_step, nullptr);
  EXPECT_EQ(kernel_step->charges, prediction.charges);

  // One predicted time: the report's group, kernels.json's kernel and the profile's
  // analytic estimate (on the device compiled for) are the same figure.
  EXPECT_EQ(compiled.plan()->groups[0].predicted_time_us, prediction.predicted_time_us);
  const double analytic = profiling::analytic_estimate(*kernel_step, device_).time.total_us;
  EXPECT_NEAR(analytic, prediction.predicted_time_us, 1e-9 * prediction.predicted_time_us);
  EXPECT_GT(std::abs(analytic - tiled.predicted_time_us), 1e-6 * tiled.predicted_time_us);
}

}  // namespace
}  // namespace stitch::driver
