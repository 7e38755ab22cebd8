// import_bench: import + verify + write time and peak memory on synthetic graphs.
//
// Builds a transformer-like ONNX model (pre-norm encoder blocks with the layer norm,
// attention softmax and GELU written out in primitive ops, as exporters emit them)
// repeated until the graph has at least N nodes, writes it to a temporary file and
// times the three phases a stitchopt run starts with (total_s), then the
// simplification pipeline and the fusion planner on their own. Prints one line per size:
//
//   nodes=10047 import_s=0.056 verify_s=0.015 write_s=0.034 total_s=0.105
//   simplify_s=0.053 simplified_nodes=7486 plan_s=0.9 candidates=... solver="optimal"
//   kernels_fused=... peak_rss_mb=...
//
// Usage: import_bench [--window N] [--patterns-per-seed N] [--keep-models DIR] [N ...]
//        (default sizes: 10000 100000; the options set the planner's knobs). Each
// size runs in its own process so peak_rss_mb is that size's peak.
#include <onnx/onnx_pb.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cost_model/device_profile.h"
#include "emit/onnx_writer.h"
#include "fusion/planner.h"
#include "ir/core/verifier.h"
#include "ir/passes/pipeline.h"
#include "onnx_import/importer.h"

namespace {

struct BenchOptions {
  // Planner knobs from the command line (--window N, --patterns-per-seed N), for
  // measuring their effect; defaults are the CLI's.
  stitch::fusion::PlannerOptions planner;
  // --keep-models DIR: copy each synthetic model there (synthetic_N.onnx), e.g. to
  // time the stitchopt command line on it.
  std::filesystem::path keep_directory;
};

constexpr int64_t kSequence = 16;
constexpr int64_t kHidden = 32;
constexpr int64_t kHeads = 2;

class SyntheticModelBuilder {
 public:
  explicit SyntheticModelBuilder(onnx::ModelProto& model) : graph_(*model.mutable_graph()) {}

  std::string node(const std::string& op, const std::vector<std::string>& inputs,
                   const std::vector<std::pair<std::string, std::vector<int64_t>>>& ints = {}) {
    onnx::NodeProto* node = graph_.add_node();
    std::string output = "t" + std::to_string(counter_++);
    node->set_op_type(op);
    node->set_name(op + "_" + std::to_string(counter_));
    for (const std::string& input : inputs) node->add_input(input);
    node->add_output(output);
    for (const auto& [name, values] : ints) {
      onnx::AttributeProto* attribute = node->add_attribute();
      attribute->set_name(name);
      if (name == "axes" || name == "perm") {
        attribute->set_type(onnx::AttributeProto::INTS);
        for (int64_t value : values) attribute->add_ints(value);
      } else {
        attribute->set_type(onnx::AttributeProto::INT);
        attribute->set_i(values.at(0));
      }
    }
    return output;
  }

  std::string initializer(const std::vector<int64_t>& dims, float fill,
                          onnx::TensorProto_DataType type = onnx::TensorProto::FLOAT) {
    onnx::TensorProto* tensor = graph_.add_initializer();
    std::string name = "w" + std::to_string(counter_++);
    tensor->set_name(name);
    tensor->set_data_type(type);
    int64_t count = 1;
    for (int64_t dim : dims) {
      tensor->add_dims(dim);
      count *= dim;
    }
    if (type == onnx::TensorProto::INT64) {
      for (int64_t i = 0; i < count; ++i) tensor->add_int64_data(static_cast<int64_t>(fill));
    } else {
      std::vector<float> values(static_cast<size_t>(count), fill);
      tensor->set_raw_data(values.data(), values.size() * sizeof(float));
    }
    return name;
  }

  std::string layer_norm(const std::string& x) {
    std::string mean = node("ReduceMean", {x}, {{"axes", {-1}}});
    std::string centered = node("Sub", {x, mean});
    std::string square = node("Mul", {centered, centered});
    std::string variance = node("ReduceMean", {square}, {{"axes", {-1}}});
    std::string shifted = node("Add", {variance, initializer({}, 1e-5f)});
    std::string deviation = node("Sqrt", {shifted});
    std::string normalized = node("Div", {centered, deviation});
    std::string scaled = node("Mul", {normalized, initializer({kHidden}, 1.0f)});
    return node("Add", {scaled, initializer({kHidden}, 0.0f)});
  }

  std::string block(const std::string& x) {
    std::string normed = layer_norm(x);
    std::vector<int64_t> heads_shape = {kSequence, kHeads, kHidden / kHeads};
    auto project = [&](const std::string& input) {
      std::string product = node("MatMul", {input, initializer({kHidden, kHidden}, 0.01f)});
      std::string biased = node("Add", {product, initializer({kHidden}, 0.0f)});
      std::string split = node("Reshape", {biased, initializer({3}, 0, onnx::TensorProto::INT64)});
      return node("Transpose", {split}, {{"perm", {1, 0, 2}}});
    };
    // Reshape targets are filled in by set_reshape_targets once the graph is built.
    std::string q = project(normed);
    std::string k = project(normed);
    std::string v = project(normed);
    std::string k_t = node("Transpose", {k}, {{"perm", {0, 2, 1}}});
    std::string scores = node("MatMul", {q, k_t});
    std::string scaled = node("Mul", {scores, initializer({}, 0.25f)});
    std::string max = node("ReduceMax", {scaled}, {{"axes", {-1}}});
    std::string shifted = node("Sub", {scaled, max});
    std::string exp = node("Exp", {shifted});
    std::string sum = node("ReduceSum", {exp, initializer({1}, -1, onnx::TensorProto::INT64)});
    std::string probabilities = node("Div", {exp, sum});
    std::string context = node("MatMul", {probabilities, v});
    std::string merged = node("Transpose", {context}, {{"perm", {1, 0, 2}}});
    std::string flat = node("Reshape", {merged, initializer({2}, 0, onnx::TensorProto::INT64)});
    std::string attention = node("MatMul", {flat, initializer({kHidden, kHidden}, 0.01f)});
    std::string residual = node("Add", {x, attention});
    std::string normed2 = layer_norm(residual);
    std::string up = node("MatMul", {normed2, initializer({kHidden, 2 * kHidden}, 0.01f)});
    std::string half = node("Mul", {up, initializer({}, 0.5f)});
    std::string scaled_up = node("Div", {up, initializer({}, 1.41421356f)});
    std::string erf = node("Erf", {scaled_up});
    std::string one_plus = node("Add", {erf, initializer({}, 1.0f)});
    std::string gelu = node("Mul", {half, one_plus});
    std::string down = node("MatMul", {gelu, initializer({2 * kHidden, kHidden}, 0.01f)});
    return node("Add", {residual, down});
  }

  onnx::GraphProto& graph() { return graph_; }

 private:
  onnx::GraphProto& graph_;
  int64_t counter_ = 0;
};

// Reshape targets need real values; fix every 3- and 2-element int64 initializer.
void set_reshape_targets(onnx::GraphProto& graph) {
  for (onnx::TensorProto& tensor : *graph.mutable_initializer()) {
    if (tensor.data_type() != onnx::TensorProto::INT64 || tensor.dims_size() != 1) continue;
    if (tensor.dims(0) == 3) {
      tensor.clear_int64_data();
      for (int64_t dim : {kSequence, kHeads, kHidden / kHeads}) tensor.add_int64_data(dim);
    } else if (tensor.dims(0) == 2) {
      tensor.clear_int64_data();
      for (int64_t dim : {kSequence, kHidden}) tensor.add_int64_data(dim);
    }
  }
}

onnx::ModelProto build_model(int64_t min_nodes) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("stitchopt-bench");
  onnx::OperatorSetIdProto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  SyntheticModelBuilder builder(model);
  onnx::ValueInfoProto* input = builder.graph().add_input();
  input->set_name("x");
  auto* tensor_type = input->mutable_type()->mutable_tensor_type();
  tensor_type->set_elem_type(onnx::TensorProto::FLOAT);
  tensor_type->mutable_shape()->add_dim()->set_dim_value(kSequence);
  tensor_type->mutable_shape()->add_dim()->set_dim_value(kHidden);
  std::string current = "x";
  while (builder.graph().node_size() < min_nodes) current = builder.block(current);
  set_reshape_targets(builder.graph());
  onnx::ValueInfoProto* output = builder.graph().add_output();
  output->set_name(current);
  output->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  builder.graph().set_name("synthetic");
  return model;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int run_size(int64_t min_nodes, const std::filesystem::path& directory,
             const BenchOptions& options) {
  std::filesystem::path model_path =
      directory / ("synthetic_" + std::to_string(min_nodes) + ".onnx");
  int64_t node_count = 0;
  {
    onnx::ModelProto model = build_model(min_nodes);
    node_count = model.graph().node_size();
    std::ofstream out(model_path, std::ios::binary);
    model.SerializeToOstream(&out);
  }
  if (!options.keep_directory.empty()) {
    std::filesystem::create_directories(options.keep_directory);
    std::filesystem::copy_file(model_path, options.keep_directory / model_path.filename(),
                               std::filesystem::copy_options::overwrite_existing);
  }

  auto start = std::chrono::steady_clock::now();
  auto imported = stitch::onnx_import::import_model(model_path.string(), {});
  double import_seconds = seconds_since(start);
  if (!imported.is_ok()) {
    std::fprintf(stderr, "import failed: %s\n", imported.status().message().c_str());
    return 1;
  }
  start = std::chrono::steady_clock::now();
  stitch::Status verified = stitch::ir::verify(imported.value());
  double verify_seconds = seconds_since(start);
  if (!verified.is_ok()) {
    std::fprintf(stderr, "verify failed: %s\n", verified.message().c_str());
    return 1;
  }
  start = std::chrono::steady_clock::now();
  stitch::Status written =
      stitch::emit::write_onnx(imported.value(), (directory / "written.onnx").string());
  double write_seconds = seconds_since(start);
  if (!written.is_ok()) {
    std::fprintf(stderr, "write failed: %s\n", written.message().c_str());
    return 1;
  }
  // The simplification pipeline on the same graph, timed on its own so the
  // import + verify + write figures stay comparable.
  start = std::chrono::steady_clock::now();
  auto simplified = stitch::ir::run_passes(imported.value(), stitch::ir::PipelineOptions{});
  double simplify_seconds = seconds_since(start);
  if (!simplified.is_ok()) {
    std::fprintf(stderr, "simplify failed: %s\n", simplified.status().message().c_str());
    return 1;
  }
  // Fusion planning on the simplified graph: partition, candidates, GLPK.
  start = std::chrono::steady_clock::now();
  auto profile = stitch::cost_model::builtin_device_profile("h100");
  if (!profile.is_ok()) return 1;
  auto planned = stitch::fusion::plan_fusion(imported->graph, *profile, options.planner);
  double plan_seconds = seconds_since(start);
  if (!planned.is_ok()) {
    std::fprintf(stderr, "plan failed: %s\n", planned.status().message().c_str());
    return 1;
  }
  int64_t candidates = planned->candidate_statistics.substitution +
                       planned->candidate_statistics.exploratory +
                       planned->candidate_statistics.packing;
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf(
      "nodes=%lld import_s=%.3f verify_s=%.3f write_s=%.3f total_s=%.3f simplify_s=%.3f "
      "simplified_nodes=%lld plan_s=%.3f candidates=%lld (substitution=%lld exploratory=%lld "
      "packing=%lld) candidates_s=%.3f solve_s=%.3f components=%d solver=\"%s\" "
      "kernels_fused=%lld peak_rss_mb=%ld\n",
      static_cast<long long>(node_count), import_seconds, verify_seconds, write_seconds,
      import_seconds + verify_seconds + write_seconds, simplify_seconds,
      static_cast<long long>(simplified->nodes_after), plan_seconds,
      static_cast<long long>(candidates),
      static_cast<long long>(planned->candidate_statistics.substitution),
      static_cast<long long>(planned->candidate_statistics.exploratory),
      static_cast<long long>(planned->candidate_statistics.packing),
      planned->candidate_statistics.seconds, planned->solver_statistics.seconds,
      planned->solver_statistics.components, planned->solver_statistics.status.c_str(),
      static_cast<long long>(planned->kernels_fused), usage.ru_maxrss / 1024);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> sizes;
  BenchOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string argument = argv[i];
    if (argument == "--window" && i + 1 < argc) {
      options.planner.plan.window_variables = std::atoi(argv[++i]);
    } else if (argument == "--keep-models" && i + 1 < argc) {
      options.keep_directory = argv[++i];
    } else if (argument == "--patterns-per-seed" && i + 1 < argc) {
      options.planner.candidates.max_patterns_per_seed = std::atoi(argv[++i]);
    } else {
      sizes.push_back(std::atoll(argument.c_str()));
    }
  }
  if (sizes.empty()) sizes = {10000, 100000};
  std::filesystem::path directory =
      std::filesystem::temp_directory_path() / ("stitchopt_bench_" + std::to_string(getpid()));
  std::filesystem::create_directories(directory);
  int status = 0;
  for (int64_t size : sizes) {
    std::fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
      int child_result = run_size(size, directory, options);
      std::fflush(stdout);
      std::_Exit(child_result);
    }
    int child_status = 0;
    waitpid(child, &child_status, 0);
    if (!WIFEXITED(child_status) || WEXITSTATUS(child_status) != 0) status = 1;
  }
  std::filesystem::remove_all(directory);
  return status;
}
