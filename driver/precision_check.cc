#include "driver/precision_check.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "ir/reference/interpreter.h"

namespace stitch::driver {
namespace {

// The dim a Gather indexes with `id` (followed through Cast and the views), or 0.
int64_t gather_bound(const ir::Graph& graph, ir::ValueId id) {
  int64_t bound = 0;
  std::vector<ir::ValueId> work = {id};
  while (!work.empty()) {
    const ir::ValueId current = work.back();
    work.pop_back();
    for (const ir::Use& use : graph.value(current).users) {
      const ir::Node& user = graph.node(use.node);
      if (user.op_type == "Gather" && use.slot == 1) {
        const ir::TensorType& data = graph.value(user.inputs[0]).type;
        int64_t axis = user.int_attribute("axis", 0);
        if (axis < 0) axis += data.rank();
        if (axis >= 0 && axis < data.rank()) {
          const int64_t dim = data.dims[static_cast<size_t>(axis)];
          if (dim > 0) bound = bound == 0 ? dim : std::min(bound, dim);
        }
      } else if (user.op_type == "Cast" || user.op_type == "Reshape" ||
                 user.op_type == "Unsqueeze" || user.op_type == "Squeeze" ||
                 user.op_type == "Flatten" || user.op_type == "Identity") {
        for (ir::ValueId output : user.outputs) {
          if (output != ir::kNoId) work.push_back(output);
        }
      }
    }
  }
  return bound;
}

std::map<std::string, ir::Tensor> seeded_inputs(const ir::Graph& graph) {
  std::map<std::string, ir::Tensor> inputs;
  std::mt19937_64 generator(kPrecisionSeed);
  for (ir::ValueId id : graph.graph_inputs()) {
    const ir::Value& value = graph.value(id);
    if (value.constant != nullptr) continue;
    const ir::TensorType& type = value.type;
    const int64_t count = type.num_elements();
    if (ir::dtype_is_float(type.dtype)) {
      std::uniform_real_distribution<double> uniform(-1.0, 1.0);
      std::vector<double> values(static_cast<size_t>(count));
      for (double& v : values) v = uniform(generator);
      inputs[value.name] = ir::Tensor::from_doubles(type.dtype, type.dims, values);
      continue;
    }
    int64_t bound = gather_bound(graph, id);
    if (bound == 0 || type.dtype == ir::DType::kBool) bound = 2;
    std::uniform_int_distribution<int64_t> uniform(0, bound - 1);
    ir::Tensor tensor;
    tensor.dtype = type.dtype;
    tensor.dims = type.dims;
    const int64_t size = ir::dtype_size(type.dtype);
    tensor.bytes.resize(static_cast<size_t>(count * size));
    for (int64_t i = 0; i < count; ++i) {
      const int64_t v = uniform(generator);
      std::memcpy(tensor.bytes.data() + i * size, &v, static_cast<size_t>(size));  // little-endian
    }
    inputs[value.name] = std::move(tensor);
  }
  return inputs;
}

emit::PrecisionOutput compare(const std::string& name, const ir::Tensor& reference,
                              const ir::Tensor& result) {
  emit::PrecisionOutput output;
  output.name = name;
  const bool floats = ir::dtype_is_float(reference.dtype);
  double max_abs = 0, max_ref = 0, dot = 0, ref_norm = 0, result_norm = 0;
  int64_t nonfinite = 0;
  const int64_t count = reference.num_elements();
  for (int64_t i = 0; i < count; ++i) {
    const double a = floats ? reference.float_at(i) : static_cast<double>(reference.int_at(i));
    const double b = floats ? result.float_at(i) : static_cast<double>(result.int_at(i));
    if (!std::isfinite(a)) continue;
    if (!std::isfinite(b)) {
      ++nonfinite;
      continue;
    }
    max_abs = std::max(max_abs, std::abs(a - b));
    max_ref = std::max(max_ref, std::abs(a));
    dot += a * b;
    ref_norm += a * a;
    result_norm += b * b;
  }
  output.max_abs_error = max_abs;
  output.max_rel_error = max_ref > 0 ? max_abs / max_ref : max_abs;
  output.cosine = ref_norm > 0 && result_norm > 0 ? dot / std::sqrt(ref_norm * result_norm)
                  : ref_norm == result_norm       ? 1.0
                                                  : 0.0;
  output.nonfinite = nonfinite;
  return output;
}

}  // namespace

double default_max_rel_error(ir::Precision precision) {
  return precision == ir::Precision::kFloat32 ? 0 : ir::precision_tolerance(precision);
}

Result<emit::ReportPrecision> check_precision(const ir::Model& model, ir::Precision precision,
                                              double max_rel_error) {
  emit::ReportPrecision report;
  report.mode = precision;
  report.max_rel_error_gate = max_rel_error < 0 ? default_max_rel_error(precision) : max_rel_error;
  const ir::Graph& graph = model.graph;
  if (precision == ir::Precision::kFloat32) {
    for (ir::ValueId id : graph.graph_outputs()) {
      emit::PrecisionOutput output;
      output.name = graph.value(id).name;
      report.outputs.push_back(std::move(output));
    }
    return report;
  }
  const std::map<std::string, ir::Tensor> inputs = seeded_inputs(graph);
  Result<std::map<std::string, ir::Tensor>> reference = ir::evaluate_graph(model, inputs);
  if (!reference.is_ok()) {
    return reference.status().with_prefix(
        "--precision: evaluating the float32 reference to measure the error: ");
  }
  ir::EvaluationOptions options;
  options.products = precision;
  Result<std::map<std::string, ir::Tensor>> reduced = ir::evaluate_graph(model, inputs, options);
  if (!reduced.is_ok()) {
    return reduced.status().with_prefix("--precision: evaluating the model at " +
                                        std::string(ir::precision_name(precision)) + ": ");
  }
  report.measured = true;
  report.inputs = "seeded (seed " + std::to_string(kPrecisionSeed) +
                  "): floats uniform in [-1, 1), integers below the dim a Gather indexes";
  for (ir::ValueId id : graph.graph_outputs()) {
    const std::string& name = graph.value(id).name;
    report.outputs.push_back(compare(name, reference->at(name), reduced->at(name)));
  }
  return report;
}

}  // namespace stitch::driver
