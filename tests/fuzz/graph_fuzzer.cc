// libFuzzer target for the whole compile pipeline on random valid models. The input
// bytes are the decisions of the structure-aware generator (random_model.h), so
// every input is a model: registry ops, zero and one dims, constants with integer
// extremes, hostile names.
//
// The stages are chained as driver/compile.cc and cli/compile.cc chain them, one by
// one so each stage's failure is named: import -> verify -> simplify (verifying
// after every pass) -> verify -> plan -> codegen of every group and every single-op
// kernel -> rewrite -> write and re-import the fused model -> report JSON, plan DOT,
// kernels.json and kernels.h. The reference interpreter evaluates the imported and
// the simplified graph on the same inputs.
//
// Asserts (each failure prints the stage and aborts, so libFuzzer keeps the input):
//  - every stage returns ok or invalid_input, never internal; nothing crashes,
//    throws or trips ASan/UBSan;
//  - the simplified graph computes what the imported graph computes, when the
//    imported graph evaluates at all;
//  - the fused model stitchopt writes is one it can read back, every value typed
//    statically (what `stitchopt run` needs);
//  - every generated source (.cu, kernels.h) is printable ASCII plus newlines, has no
//    line splice ("??/", a // comment ending in a backslash) and carries none of the
//    model's hostile names raw.
//
// Flags (libFuzzer ignores flags that start with "--"): the generator's
// (random_model.h: --no-zero-dims, --no-int-div, --plain-names, --no-wide,
// --no-special-floats, --exclude-ops=A,B); --write-model=PATH, which writes each
// input's model to PATH first (turns a crash input into a .onnx reproducer); and
// --check-model=PATH, which runs the checks once on a model file instead of fuzzing
// (exit 0 when they pass; a model from model_fuzzer.py, a reproducer).
//
//   graph_fuzzer -max_total_time=600 tests/fuzz/corpus/graph
//   graph_fuzzer --write-model=repro.onnx crash-<sha1>
//   graph_fuzzer --check-model=repro.onnx
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "cost_model/device_profile.h"
#include "emit/cuda_emitter.h"
#include "emit/fused_model.h"
#include "emit/group_boundary.h"
#include "emit/kernel_directory.h"
#include "emit/onnx_writer.h"
#include "emit/plan_dot.h"
#include "emit/report.h"
#include "fusion/planner.h"
#include "ir/core/analysis.h"
#include "ir/core/verifier.h"
#include "ir/passes/pipeline.h"
#include "ir/reference/interpreter.h"
#include "onnx_import/importer.h"
#include "support/sha256.h"
#include "tests/fuzz/random_model.h"

#include <onnx/onnx_pb.h>

namespace {

using namespace stitch;

struct FuzzerState {
  fuzz::GeneratorOptions generator;
  std::string write_model;        // --write-model=PATH
  std::filesystem::path scratch;  // where the fused model is written and re-read
  std::optional<cost_model::DeviceProfile> profile;
};
FuzzerState* state = nullptr;

// Text from the model made printable for a message: other bytes as \xNN.
std::string escaped(std::string_view text, size_t limit = 160) {
  std::string out;
  for (unsigned char c : text.substr(0, limit)) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\x%02x", c);
      out += hex;
    }
  }
  return text.size() > limit ? out + "..." : out;
}

[[noreturn]] void fail(std::string_view stage, std::string_view message) {
  std::fprintf(stderr, "graph_fuzzer: %.*s: %s\n", static_cast<int>(stage.size()), stage.data(),
               escaped(message, 4000).c_str());
  std::abort();
}

// ok or a bad-input status; anything else is our bug.
void expect_not_internal(std::string_view stage, const Status& status) {
  if (!status.is_ok() && status.code() != StatusCode::kInvalidInput) fail(stage, status.message());
}

void check_source(const std::string& what, const std::string& text,
                  const std::vector<std::string>& hostile_names) {
  size_t line_start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      std::string_view line(text.data() + line_start, i - line_start);
      if (line.find("//") != std::string_view::npos && line.ends_with('\\')) {
        fail(what,
             "a // comment ends in a backslash (splices the next line): " + std::string(line));
      }
      line_start = i + 1;
      continue;
    }
    if (c < 0x20 || c > 0x7e) {
      fail(what, "byte " + escaped(text.substr(i, 1)) + " is not printable ASCII, in the line: " +
                     text.substr(line_start, text.find('\n', i) - line_start));
    }
  }
  if (text.find("?\?/") != std::string::npos) fail(what, "has the trigraph ?\?/ (a line splice)");
  for (const std::string& name : hostile_names) {
    // A printable name may show as it is (a trailing backslash is the start of its
    // escape \134): only names that would break a comment or a line must not.
    const bool breaks = std::any_of(name.begin(), name.end(),
                                    [](char c) {
                                      return static_cast<unsigned char>(c) < 0x20 ||
                                             static_cast<unsigned char>(c) > 0x7e;
                                    }) ||
                        name.find("*/") != std::string::npos ||
                        name.find("??") != std::string::npos;
    if (breaks && text.find(name) != std::string::npos) {
      fail(what, "carries the model's name \"" + escaped(name) + "\" raw");
    }
  }
}

// Random inputs for every graph input without a default, seeded by the fuzz input.
std::map<std::string, ir::Tensor> random_inputs(const ir::Model& model, uint64_t seed) {
  std::mt19937_64 random(seed);
  std::map<std::string, ir::Tensor> inputs;
  for (ir::ValueId id : model.graph.graph_inputs()) {
    const ir::Value& value = model.graph.value(id);
    if (value.is_initializer()) continue;
    ir::Tensor tensor;
    tensor.dtype = value.type.dtype;
    tensor.dims = value.type.dims;
    const int64_t count = tensor.num_elements();
    if (ir::dtype_is_float(tensor.dtype)) {
      std::uniform_real_distribution<double> uniform(-3.0, 3.0);
      std::vector<double> values(static_cast<size_t>(count));
      for (double& element : values) element = uniform(random);
      tensor = ir::Tensor::from_doubles(tensor.dtype, tensor.dims, values);
    } else {
      std::uniform_int_distribution<int> uniform(ir::dtype_is_signed(tensor.dtype) ? -4 : 0, 4);
      const int64_t size = ir::dtype_size(tensor.dtype);
      for (int64_t i = 0; i < count; ++i) {
        int64_t element = tensor.dtype == ir::DType::kBool ? uniform(random) & 1 : uniform(random);
        tensor.bytes.append(reinterpret_cast<const char*>(&element), static_cast<size_t>(size));
      }
    }
    inputs[value.name] = std::move(tensor);
  }
  return inputs;
}

// True when some value of the graph is float16 or bfloat16.
bool computes_in_half(const ir::Graph& graph) {
  for (ir::ValueId id = 0; id < graph.value_capacity(); ++id) {
    const ir::DType dtype = graph.value(id).type.dtype;
    if (!graph.value(id).dead && (dtype == ir::DType::kFloat16 || dtype == ir::DType::kBFloat16)) {
      return true;
    }
  }
  return false;
}

// True when the graph normalizes (BatchNormalization, InstanceNormalization,
// GroupNormalization, LayerNormalization) and holds a float constant beyond
// sqrt(FLT_MAX) ~ 1.8e19 or infinite: then the float32 decomposition's (x - mean)^2 or
// mean * a may leave the float32 range where the compound op, evaluated in double by
// the reference, does not (docs/semantics.md, "Decompositions on extreme inputs"). The generator
// draws 1e30 and inf constants on purpose, so this documented difference would otherwise fail the
// smoke run whenever a mutation reaches it.
bool normalizes_out_of_float32_range(const ir::Graph& graph) {
  static const std::set<std::string> kNormalizations = {
      "BatchNormalization", "InstanceNormalization", "GroupNormalization", "LayerNormalization"};
  bool normalizes = false;
  for (ir::NodeId id : graph.node_ids()) {
    normalizes = normalizes || kNormalizations.count(graph.node(id).op_type) > 0;
  }
  if (!normalizes) return false;
  auto extreme = [](const ir::Tensor& tensor) {
    if (!ir::dtype_is_float(tensor.dtype)) return false;
    for (int64_t i = 0; i < tensor.num_elements(); ++i) {
      const double v = tensor.float_at(i);
      if (std::isinf(v) || std::fabs(v) > 1.8e19) return true;
    }
    return false;
  };
  for (ir::ValueId id = 0; id < graph.value_capacity(); ++id) {
    const ir::Value& value = graph.value(id);
    if (!value.dead && value.constant != nullptr && extreme(*value.constant)) return true;
  }
  for (ir::NodeId id : graph.node_ids()) {
    if (std::optional<ir::Tensor> constant = ir::constant_node_value(graph.node(id))) {
      if (extreme(*constant)) return true;
    }
  }
  return false;
}

// Evaluates the imported graph on `inputs` and fills `conditioning`: for each graph
// output that a float Mod, Sin, Cos or Tan feeds, the largest finite |dividend| (the
// argument of the periodic functions) of those ops (at least 1). fmod(a, b) and
// sin(a) carry the absolute rounding error of a, not one relative to their result:
// the float32 decompositions may change a by the relative tolerance the comparison
// accepts, and when |a| is far beyond the period (Pow of a Softplus to the 100th,
// ~1e27, then fmod 100 or Sin) the result is any value of the op's range. The
// comparison scales its tolerance by this instead of |result| for such outputs. The
// dividends are read in the same evaluation, as extra graph outputs left out of what
// it returns.
//
// Pow(x, c) multiplies a relative error of x by |c|: after a Pow with an exponent of
// 6e4 (Softplus(x)^65504) the last-ulp difference of a decomposition is percents. So
// each output also gets the product of max(1, |c|) over the Pows it depends on (its
// gain), which multiplies its tolerance.
//
// Sums near the top of the float range: the reference interpreter accumulates a
// Mean, a ReduceMean or a LayerNormalization's variance in double, while the
// decompositions (as ONNX Runtime's and PyTorch's kernels: docs/semantics.md,
// "Sums near the float range") accumulate in the tensor's type, so a sum of terms
// near FLT_MAX is infinite after simplification and finite before. An output fed by
// a summing op whose largest finite term times its number of terms (squared terms
// for ReduceSumSquare, ReduceL2, Lp pools and norms) passes the largest finite value
// of its type is marked near_range_limit: there a finite value may become infinite
// or NaN, or the reverse (the documented ill-conditioned class); finite values are
// still compared, and a finite-to-inf change of an output not so marked still fails.
struct Conditioning {
  double dividend = 0.0;          // the largest |dividend| of the float Mods it depends on
  double gain = 1.0;              // the product of the Pows' max(1, |exponent|)
  bool near_range_limit = false;  // depends on a sum that may leave the float range
};

// Summing ops (terms of the first kind), and those that sum squares.
const std::set<std::string> kSummingOps = {"Sum",
                                           "Mean",
                                           "ReduceSum",
                                           "ReduceMean",
                                           "ReduceL1",
                                           "ReduceL2",
                                           "ReduceLogSum",
                                           "ReduceLogSumExp",
                                           "ReduceSumSquare",
                                           "GlobalAveragePool",
                                           "AveragePool",
                                           "LpPool",
                                           "GlobalLpPool",
                                           "LpNormalization",
                                           "MeanVarianceNormalization",
                                           "Softmax",
                                           "LogSoftmax"};
const std::set<std::string> kSquaringOps = {"ReduceL2",        "ReduceSumSquare",
                                            "LpPool",          "GlobalLpPool",
                                            "LpNormalization", "MeanVarianceNormalization"};

double largest_finite(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::kFloat16:
      return 65504.0;
    case ir::DType::kBFloat16:
      return 3.3895313892515355e38;
    case ir::DType::kFloat64:
      return 1.7976931348623157e308;
    default:
      return 3.4028234663852886e38;
  }
}

Result<std::map<std::string, ir::Tensor>> evaluate_imported(
    const ir::Model& model, const std::map<std::string, ir::Tensor>& inputs,
    std::map<std::string, Conditioning>* conditioning) {
  const ir::Graph& graph = model.graph;
  auto power = [&](const ir::Node& node) {
    return node.op_type == "Pow" && node.domain.empty() && node.inputs.size() == 2 &&
           node.inputs[1] != ir::kNoId &&
           ir::dtype_is_float(graph.value(node.inputs[1]).type.dtype);
  };
  auto float_mod = [&](const ir::Node& node) {
    const bool periodic = node.op_type == "Mod" || node.op_type == "Sin" || node.op_type == "Cos" ||
                          node.op_type == "Tan";
    return periodic && node.domain.empty() && !node.inputs.empty() && node.inputs[0] != ir::kNoId &&
           ir::dtype_is_float(graph.value(node.inputs[0]).type.dtype);
  };
  auto summing = [&](const ir::Node& node) {
    return node.domain.empty() && kSummingOps.count(node.op_type) > 0;
  };
  std::vector<ir::ValueId> dividends;
  for (ir::NodeId id : graph.node_ids()) {
    const ir::Node& node = graph.node(id);
    if (float_mod(node)) dividends.push_back(node.inputs[0]);
    if (power(node)) dividends.push_back(node.inputs[1]);
    if (summing(node)) {
      for (ir::ValueId input : node.inputs) {
        if (input != ir::kNoId && ir::dtype_is_float(graph.value(input).type.dtype)) {
          dividends.push_back(input);
        }
      }
    }
  }
  if (dividends.empty()) return ir::evaluate_graph(model, inputs);
  ir::Model probed = model;
  std::set<std::string> probes;
  for (ir::ValueId dividend : dividends) {
    if (!probed.graph.value(dividend).is_graph_output) {
      probed.graph.add_graph_output(dividend);
      probes.insert(graph.value(dividend).name);
    }
  }
  Result<std::map<std::string, ir::Tensor>> values = ir::evaluate_graph(probed, inputs);
  Result<std::vector<ir::NodeId>> order = ir::topological_order(graph);
  if (!values.is_ok() || !order.is_ok()) return values;
  // Per value, the conditioning of the float Mods and Pows it depends on.
  std::map<ir::ValueId, Conditioning> scale;
  for (ir::NodeId id : *order) {
    const ir::Node& node = graph.node(id);
    double largest = 0.0;
    double gain = 1.0;
    bool near_range_limit = false;
    for (const std::vector<ir::ValueId>* reads : {&node.inputs, &node.implicit_inputs}) {
      for (ir::ValueId input : *reads) {
        if (auto found = scale.find(input); found != scale.end()) {
          largest = std::max(largest, found->second.dividend);
          gain = std::max(gain, found->second.gain);
          near_range_limit = near_range_limit || found->second.near_range_limit;
        }
      }
    }
    if (summing(node)) {
      // Each output element sums at most (inputs x elements of the largest input)
      // terms: a bound, loose only for values near the range limit.
      double terms = 0.0, term = 0.0;
      for (ir::ValueId input : node.inputs) {
        auto value = input == ir::kNoId ? values->end() : values->find(graph.value(input).name);
        if (value == values->end() || !ir::dtype_is_float(value->second.dtype)) continue;
        terms = std::max(terms, static_cast<double>(value->second.num_elements()));
        for (int64_t i = 0; i < value->second.num_elements(); ++i) {
          const double v = std::fabs(value->second.float_at(i));
          if (std::isfinite(v)) term = std::max(term, v);
        }
      }
      terms *= static_cast<double>(node.inputs.size());
      if (kSquaringOps.count(node.op_type)) term *= term;
      const ir::DType dtype = node.outputs.empty() || node.outputs[0] == ir::kNoId
                                  ? ir::DType::kFloat32
                                  : graph.value(node.outputs[0]).type.dtype;
      near_range_limit = near_range_limit || term * terms > largest_finite(dtype);
    }
    if (power(node)) {
      double exponent_gain = 1.0;
      auto exponent = values->find(graph.value(node.inputs[1]).name);
      for (int64_t i = 0; exponent != values->end() && i < exponent->second.num_elements(); ++i) {
        const double c = std::fabs(exponent->second.float_at(i));
        if (std::isfinite(c)) exponent_gain = std::max(exponent_gain, c);
      }
      gain *= exponent_gain;
    }
    if (float_mod(node)) {
      largest = std::max(largest, 1.0);
      auto dividend = values->find(graph.value(node.inputs[0]).name);
      for (int64_t i = 0; dividend != values->end() && i < dividend->second.num_elements(); ++i) {
        const double v = std::fabs(dividend->second.float_at(i));
        if (std::isfinite(v)) largest = std::max(largest, v);
      }
    }
    if (largest == 0.0 && gain == 1.0 && !near_range_limit) continue;
    for (ir::ValueId output : node.outputs) {
      if (output != ir::kNoId) scale[output] = Conditioning{largest, gain, near_range_limit};
    }
  }
  for (ir::ValueId output : graph.graph_outputs()) {
    if (auto found = scale.find(output); found != scale.end()) {
      (*conditioning)[graph.value(output).name] = found->second;
    }
  }
  for (const std::string& probe : probes) values->erase(probe);
  return values;
}

// The simplified graph must compute what the imported one does. Floats: |a - b| <=
// tol * g * max(|b|, 1, d), NaN where NaN, infinities equal, where d is the output's
// evaluate_imported dividend scale (0 when no float Mod feeds it) and g its Pow gain
// (1 when no Pow feeds it); integers and bools exactly. An output marked
// near_range_limit accepts a non-finite value against anything, and its integers and
// bools are not compared.
// tol is 1e-4, or 5e-2 when the graph computes in float16/bfloat16 anywhere: the
// decompositions round their intermediates to the half type, which the original op
// does not. Such a rounding difference can flip an integer or bool result (Cast,
// comparisons, ArgMax), so in those graphs only float outputs are compared.
void check_agreement(const std::map<std::string, ir::Tensor>& before,
                     const std::map<std::string, ir::Tensor>& after, bool half,
                     const std::map<std::string, Conditioning>& conditioning) {
  for (const auto& [name, want] : before) {
    auto found_conditioning = conditioning.find(name);
    const Conditioning scale =
        found_conditioning == conditioning.end() ? Conditioning{} : found_conditioning->second;
    const double dividend = scale.dividend;
    auto found = after.find(name);
    if (found == after.end()) fail("simplify", "output \"" + name + "\" is gone");
    const ir::Tensor& got = found->second;
    if (got.dtype != want.dtype || got.dims != want.dims) {
      fail("simplify", "output \"" + name + "\" changed type: " + ir::to_string(want.type()) +
                           " -> " + ir::to_string(got.type()));
    }
    // An integer or bool computed from a sum past the float range (a comparison, a
    // Cast) may differ with it.
    if ((half || scale.near_range_limit) && !ir::dtype_is_float(want.dtype)) continue;
    const double tolerance = (half ? 5e-2 : 1e-4) * scale.gain;
    for (int64_t i = 0; i < want.num_elements(); ++i) {
      bool same = true;
      if (ir::dtype_is_float(want.dtype)) {
        const double a = got.float_at(i);
        const double b = want.float_at(i);
        const bool finite = std::isfinite(a) && std::isfinite(b);
        same = !finite && scale.near_range_limit ? true
               : std::isnan(a) || std::isnan(b)  ? std::isnan(a) && std::isnan(b)
               : std::isinf(a) || std::isinf(b)
                   ? a == b
                   : std::fabs(a - b) <= tolerance * std::max({std::fabs(b), 1.0, dividend});
        if (!same) {
          fail("simplify", "output \"" + name + "\" element " + std::to_string(i) + ": " +
                               std::to_string(a) + " after simplification, " + std::to_string(b) +
                               " before");
        }
      } else if (got.int_at(i) != want.int_at(i)) {
        fail("simplify", "output \"" + name + "\" element " + std::to_string(i) + ": " +
                             std::to_string(got.int_at(i)) + " after simplification, " +
                             std::to_string(want.int_at(i)) + " before");
      }
    }
  }
}

std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Codegen as driver/compile.cc does it: one kernel per distinct non-library group, one
// per unfused node that launches a kernel. Emitter refusals are fine (the CLI warns);
// internal errors are not.
std::vector<emit::EmittedKernel> generate_kernels(const ir::Model& model,
                                                  const fusion::PlannerResult& plan,
                                                  const emit::KernelSharing& sharing,
                                                  const cost_model::DeviceProfile& profile) {
  std::vector<emit::EmittedKernel> kernels;
  for (size_t index = 0; index < plan.groups.size(); ++index) {
    if (plan.groups[index].category == artifact::GroupCategory::kLibrary ||
        sharing.owner[index] != index) {
      continue;
    }
    Result<emit::EmittedKernel> kernel = emit::emit_kernel(model.graph, sharing.boundaries[index],
                                                           sharing.kernel_names[index], profile);
    expect_not_internal("codegen", kernel.status());
    if (kernel.is_ok()) kernels.push_back(std::move(kernel).value());
  }
  Result<std::vector<int32_t>> positions = emit::topological_positions(model.graph);
  expect_not_internal("codegen", positions.status());
  if (!positions.is_ok()) return kernels;
  int single = 0;
  for (const fusion::UnfusedNode& node : plan.unfused) {
    if (node.kind != fusion::UnfusedKind::kKernel) continue;
    Result<emit::EmittedKernel> kernel =
        emit::emit_kernel(model.graph, emit::group_boundary(model.graph, {node.node}, *positions),
                          "stitch_s" + std::to_string(single), profile);
    expect_not_internal("codegen", kernel.status());
    if (!kernel.is_ok()) continue;
    ++single;
    kernels.push_back(std::move(kernel).value());
  }
  return kernels;
}

void run_pipeline(const fuzz::GeneratedModel& generated, uint64_t seed) {
  Result<ir::Model> imported = onnx_import::import_model_from_bytes(
      generated.bytes, "fuzz.onnx", "/nonexistent-stitch-fuzz-dir", onnx_import::ImportOptions{});
  expect_not_internal("import", imported.status());
  if (!imported.is_ok()) return;
  ir::Model& model = imported.value();
  Status verified = ir::verify(model);
  expect_not_internal("verify", verified);
  if (!verified.is_ok()) return;
  const int64_t original_kernels = emit::count_original_kernels(model.graph);
  const int64_t original_nodes = model.graph.num_nodes();

  const std::map<std::string, ir::Tensor> inputs = random_inputs(model, seed);
  const bool half = computes_in_half(model.graph);
  const bool out_of_range = normalizes_out_of_float32_range(model.graph);
  std::map<std::string, Conditioning> conditioning;
  Result<std::map<std::string, ir::Tensor>> before =
      evaluate_imported(model, inputs, &conditioning);
  expect_not_internal("reference (imported)", before.status());

  ir::PipelineOptions pipeline;
  pipeline.verify_each = true;
  pipeline.model_path = "fuzz.onnx";
  Result<ir::SimplifyStatistics> simplified = ir::run_passes(model, pipeline);
  expect_not_internal("simplify", simplified.status());
  if (!simplified.is_ok()) return;
  Status still_valid = ir::verify(model);
  if (!still_valid.is_ok()) {
    fail("simplify", "the IR is invalid after simplification: " + still_valid.message());
  }
  if (before.is_ok()) {
    Result<std::map<std::string, ir::Tensor>> after = ir::evaluate_graph(model, inputs);
    if (!after.is_ok()) {
      fail("reference (simplified)", "the imported graph evaluates but the simplified one fails: " +
                                         after.status().message());
    }
    if (!out_of_range) check_agreement(*before, *after, half, conditioning);
  }

  fusion::PlannerOptions planner;
  planner.plan.time_limit_s = 2;
  Result<fusion::PlannerResult> plan = fusion::plan_fusion(model.graph, *state->profile, planner);
  expect_not_internal("plan", plan.status());
  if (!plan.is_ok()) return;
  std::vector<emit::FusedGroup> groups;
  for (size_t index = 0; index < plan->groups.size(); ++index) {
    groups.push_back(
        emit::FusedGroup{plan->groups[index].nodes, "stitch_k" + std::to_string(index), {}});
  }
  Result<emit::KernelSharing> sharing = emit::share_kernels(model, groups);
  expect_not_internal("share kernels", sharing.status());
  if (!sharing.is_ok()) return;
  std::vector<emit::EmittedKernel> kernels =
      generate_kernels(model, *plan, *sharing, *state->profile);
  for (const emit::EmittedKernel& kernel : kernels) {
    check_source("kernels/" + kernel.file, kernel.source, generated.hostile_names);
  }
  check_source("kernels/kernels.h", emit::render_kernels_header(kernels), generated.hostile_names);
  // Hostile names must render (the predictions' values do not matter here).
  artifact::render_kernels_json(
      emit::kernels_artifact(kernels, std::vector<emit::KernelPrediction>(kernels.size()),
                             support::sha256_hex(generated.bytes)));

  Result<emit::FusedModel> fused = emit::build_fused_model(model, groups, *sharing);
  expect_not_internal("rewrite", fused.status());
  if (!fused.is_ok()) return;
  const std::filesystem::path written = state->scratch / "model.fused.onnx";
  Status wrote = emit::write_onnx(fused->model, written.string());
  expect_not_internal("write", wrote);
  if (wrote.is_ok()) {
    onnx_import::ImportOptions fused_model_options;
    fused_model_options.allow_stitchopt_domain = true;  // as `stitchopt run` reads it
    Result<ir::Model> reread = onnx_import::import_model_from_bytes(
        read_bytes(written), written.string(), state->scratch.string(), fused_model_options);
    if (!reread.is_ok()) {
      fail("re-import", "the fused model does not import: " + reread.status().message());
    }
    // `stitchopt run` plans memory by the written types: every one must be static.
    for (ir::NodeId id : reread->graph.node_ids()) {
      for (ir::ValueId output : reread->graph.node(id).outputs) {
        if (output == ir::kNoId || reread->graph.value(output).type.is_static()) continue;
        fail("re-import", "value \"" + reread->graph.value(output).name +
                              "\" of the fused model has no static type: " +
                              ir::to_string(reread->graph.value(output).type));
      }
    }
  }

  emit::Report report;
  report.model = emit::ReportModel{"fuzz.onnx", support::sha256_hex(generated.bytes),
                                   model.default_opset(), original_nodes};
  const cost_model::DeviceProfile& profile = *state->profile;
  report.device = emit::ReportDevice{profile.name,
                                     profile.source,
                                     std::string(cost_model::launch_mode_name(profile.launch_mode)),
                                     cost_model::launch_phi(profile),
                                     profile.calibration.graph_launch_latency_us,
                                     profile.launch_latency_us};
  report.options.planner = planner;
  report.simplify = *simplified;
  report.kernels.original = original_kernels;
  report.kernels.after_simplify = emit::count_original_kernels(model.graph);
  std::vector<std::optional<emit::ReportCodegen>> group_codegen(plan->groups.size());
  std::vector<std::optional<emit::ReportCodegen>> unfused_codegen(plan->unfused.size());
  report.plan = emit::ReportPlan{*plan, fused->kernel_names, fused->distinct_kernels,
                                 std::move(group_codegen), std::move(unfused_codegen)};
  emit::render_report(report, model.graph);
  emit::render_plan_dot(model.graph, *plan, fused->kernel_names);
}

// --check-model: the file's bytes, and its hostile names (graph, values, nodes, doc
// strings) as the generator would have listed them.
fuzz::GeneratedModel read_model(const std::string& path) {
  fuzz::GeneratedModel model{read_bytes(path), {}};
  onnx::ModelProto proto;
  if (!proto.ParseFromString(model.bytes)) return model;  // the importer says why
  std::vector<std::string> names = {proto.doc_string(), proto.graph().name(),
                                    proto.graph().doc_string()};
  for (const auto* list :
       {&proto.graph().input(), &proto.graph().output(), &proto.graph().value_info()}) {
    for (const onnx::ValueInfoProto& info : *list) names.push_back(info.name());
  }
  for (const onnx::TensorProto& initializer : proto.graph().initializer()) {
    names.push_back(initializer.name());
  }
  for (const onnx::NodeProto& node : proto.graph().node()) {
    names.insert(names.end(), {node.name(), node.doc_string()});
    names.insert(names.end(), node.input().begin(), node.input().end());
    names.insert(names.end(), node.output().begin(), node.output().end());
  }
  for (const std::string& name : names) {
    if (fuzz::is_hostile_name(name)) model.hostile_names.push_back(name);
  }
  return model;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  state = new FuzzerState;
  std::string check_model;
  for (int i = 1; i < *argc; ++i) {
    std::string_view flag = (*argv)[i];
    if (flag.starts_with("--write-model=")) {
      state->write_model = flag.substr(std::string_view("--write-model=").size());
    } else if (flag.starts_with("--check-model=")) {
      check_model = flag.substr(std::string_view("--check-model=").size());
    } else if (flag.starts_with("--") && !fuzz::parse_generator_flag(flag, &state->generator)) {
      std::fprintf(stderr, "graph_fuzzer: unknown flag %s; the generator's flags are\n%s",
                   (*argv)[i], std::string(fuzz::generator_flags_help()).c_str());
      std::exit(2);
    }
  }
  char scratch[] = "/tmp/graph_fuzzer.XXXXXX";
  if (mkdtemp(scratch) == nullptr) {
    std::perror("graph_fuzzer: mkdtemp");
    std::exit(2);
  }
  state->scratch = scratch;
  std::atexit([] { std::filesystem::remove_all(state->scratch); });
  Result<cost_model::DeviceProfile> profile = cost_model::builtin_device_profile("h100");
  if (!profile.is_ok()) {
    std::fprintf(stderr, "graph_fuzzer: %s\n", profile.status().message().c_str());
    std::exit(2);
  }
  state->profile = std::move(profile).value();
  if (!check_model.empty()) {
    run_pipeline(read_model(check_model), 0);
    std::printf("graph_fuzzer: %s passes every check\n", check_model.c_str());
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The interpreter's inputs are seeded by the bytes too (FNV-1a), so a run is a
  // function of the input.
  uint64_t seed = 14695981039346656037ull;
  for (size_t i = 0; i < size; ++i) seed = (seed ^ data[i]) * 1099511628211ull;
  FuzzedDataProvider provider(data, size);
  fuzz::GeneratedModel generated = fuzz::generate_model(provider, state->generator);
  if (!state->write_model.empty()) {
    std::ofstream(state->write_model, std::ios::binary) << generated.bytes;
  }
  run_pipeline(generated, seed);
  return 0;
}
