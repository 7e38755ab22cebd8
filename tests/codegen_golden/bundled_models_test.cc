// Every group the planner makes on every bundled model (models/manifest.json shapes,
// simplified as the CLI does) and every unfused node that runs as a kernel of its own
// emits a CUDA kernel without error. Also writes them all to
// <build>/codegen_models/<model>/ so the emulated comparison and nvcc can use them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "cost_model/device_profile.h"
#include "emit/cuda_emitter.h"
#include "emit/kernel_directory.h"
#include "fusion/planner.h"
#include "ir/core/op_registry.h"
#include "ir/passes/pipeline.h"
#include "onnx_import/importer.h"

namespace stitch::emit {
namespace {

namespace fs = std::filesystem;

struct BundledModel {
  std::string name;
  std::string file;
  std::map<std::string, std::vector<int64_t>> shapes;
};

std::vector<BundledModel> bundled_models() {
  std::ifstream in(fs::path(STITCH_SOURCE_DIR) / "models" / "manifest.json");
  nlohmann::json manifest = nlohmann::json::parse(in);
  std::vector<BundledModel> models;
  for (const nlohmann::json& entry : manifest["models"]) {
    BundledModel model{entry["name"], entry["file"], {}};
    for (const nlohmann::json& input : entry["inputs"]) {
      model.shapes[input["name"]] = input["shape"].get<std::vector<int64_t>>();
    }
    models.push_back(std::move(model));
  }
  return models;
}

class BundledModelKernels : public ::testing::TestWithParam<BundledModel> {};

TEST_P(BundledModelKernels, EveryGroupEmits) {
  const BundledModel& bundled = GetParam();
  onnx_import::ImportOptions options;
  options.input_shapes = bundled.shapes;
  std::string path = (fs::path(STITCH_SOURCE_DIR) / "models" / bundled.file).string();
  Result<ir::Model> model = onnx_import::import_model(path, options);
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  ir::PipelineOptions pipeline;
  pipeline.model_path = path;
  Result<ir::SimplifyStatistics> simplified = ir::run_passes(*model, pipeline);
  ASSERT_TRUE(simplified.is_ok()) << simplified.status().message();
  Result<cost_model::DeviceProfile> profile = cost_model::builtin_device_profile("h100");
  ASSERT_TRUE(profile.is_ok());
  Result<fusion::PlannerResult> plan =
      fusion::plan_fusion(model->graph, *profile, fusion::PlannerOptions{});
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();

  std::vector<EmittedKernel> kernels;
  std::vector<KernelPrediction> predictions;
  std::vector<std::string> failures;
  auto emit = [&](const std::vector<ir::NodeId>& nodes, const std::string& name) {
    Result<EmittedKernel> kernel = emit_kernel(model->graph, nodes, name, *profile);
    if (kernel.is_ok()) {
      predictions.push_back(predict_kernel(model->graph, nodes, *kernel, *profile));
      kernels.push_back(std::move(kernel).value());
    } else {
      failures.push_back(name + ": " + kernel.status().message());
    }
  };
  int64_t library_groups = 0;
  for (size_t g = 0; g < plan->groups.size(); ++g) {
    // Library calls with a fused epilogue (cuBLAS/cuDNN) are not generated kernels.
    if (plan->groups[g].category == artifact::GroupCategory::kLibrary) {
      ++library_groups;
      continue;
    }
    emit(plan->groups[g].nodes, "stitch_k" + std::to_string(g));
  }
  for (const fusion::UnfusedNode& unfused : plan->unfused) {
    if (unfused.kind != fusion::UnfusedKind::kKernel) continue;
    const ir::Node& node = model->graph.node(unfused.node);
    if (ir::op_kind(node) == ir::OpKind::kOpaque || ir::op_kind(node) == ir::OpKind::kConv) {
      continue;
    }
    emit({unfused.node}, "stitch_single_" + std::to_string(unfused.node));
  }
  std::string all;
  for (const std::string& failure : failures) all += failure + "\n";
  EXPECT_TRUE(failures.empty()) << all;
  fs::path out = fs::path(STITCH_BINARY_DIR) / "codegen_models" / bundled.name;
  fs::remove_all(out);
  Status written = write_kernel_directory(kernels, out);
  if (written.is_ok())
    written = write_kernels_json(kernels_artifact(kernels, predictions, ""), out);
  EXPECT_TRUE(written.is_ok()) << written.message();
}

INSTANTIATE_TEST_SUITE_P(Models, BundledModelKernels, ::testing::ValuesIn(bundled_models()),
                         [](const ::testing::TestParamInfo<BundledModel>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace stitch::emit
