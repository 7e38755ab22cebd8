#include "driver/precision_check.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ir/core/verifier.h"
#include "ir/reference/interpreter.h"
#include "runtime_stub/program.h"

namespace stitch::driver {
namespace {

// One output's error, summed over the samples.
struct ErrorSums {
  double max_abs = 0, max_ref = 0, dot = 0, ref_norm = 0, result_norm = 0;
  int64_t nonfinite = 0;

  void add(const ir::Tensor& reference, const ir::Tensor& result) {
    const bool floats = ir::dtype_is_float(reference.dtype);
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
  }

  emit::PrecisionOutput output(const std::string& name) const {
    emit::PrecisionOutput output;
    output.name = name;
    output.max_abs_error = max_abs;
    output.max_rel_error = max_ref > 0 ? max_abs / max_ref : max_abs;
    output.cosine = ref_norm > 0 && result_norm > 0 ? dot / std::sqrt(ref_norm * result_norm)
                    : ref_norm == result_norm       ? 1.0
                                                    : 0.0;
    output.nonfinite = nonfinite;
    return output;
  }
};

// The model's inputs for each sample (the ones simplification kept), or one seeded draw.
std::vector<std::map<std::string, ir::Tensor>> feeds_of(const ir::Graph& graph,
                                                        const PrecisionSamples& samples) {
  if (samples.empty()) return {runtime::random_graph_inputs(graph, kPrecisionSeed)};
  const std::vector<runtime::StepTensor> inputs = runtime::graph_input_tensors(graph);
  std::vector<std::map<std::string, ir::Tensor>> feeds;
  for (const PrecisionSample& sample : samples) {
    std::map<std::string, ir::Tensor>& feed = feeds.emplace_back();
    for (const runtime::StepTensor& input : inputs) {
      feed.emplace(input.name, sample.inputs.at(input.name));
    }
  }
  return feeds;
}

// "(sample FILE) " when the samples are the user's.
std::string sample_prefix(const PrecisionSamples& samples, size_t index) {
  return samples.empty() ? "" : "(" + samples[index].source + ") ";
}

// Per float32 value, over the calibration runs: max |x| (NaN counts as out of range)
// and the largest value.
struct Ranges {
  std::map<ir::ValueId, double> max_abs, max_value;

  void observe(ir::ValueId id, const ir::Tensor& tensor) {
    if (tensor.dtype != ir::DType::kFloat32) return;
    double& largest = max_abs[id];  // 0 when first seen; the largest over samples
    double& top = max_value.try_emplace(id, -HUGE_VAL).first->second;
    for (int64_t i = 0; i < tensor.num_elements(); ++i) {
      const double x = tensor.float_at(i);
      if (!(std::fabs(x) <= largest)) largest = std::fabs(x);
      if (!(x <= top)) top = x;
    }
  }
};

// `model` (float32) evaluated on each of `feeds`, its graph inputs' and node outputs'
// ranges into `ranges`, its outputs appended to `outputs` when given.
Status calibrate(const ir::Model& model,
                 const std::vector<std::map<std::string, ir::Tensor>>& feeds,
                 ir::Precision precision, const PrecisionSamples& samples, Ranges& ranges,
                 std::vector<std::map<std::string, ir::Tensor>>* outputs) {
  ir::EvaluationOptions calibration;
  calibration.observe = [&](ir::ValueId id, const ir::Tensor& tensor) {
    ranges.observe(id, tensor);
  };
  const std::vector<runtime::StepTensor> inputs = runtime::graph_input_tensors(model.graph);
  for (size_t i = 0; i < feeds.size(); ++i) {
    for (const runtime::StepTensor& input : inputs) {
      ranges.observe(input.value, feeds[i].at(input.name));
    }
    Result<std::map<std::string, ir::Tensor>> float32 =
        ir::evaluate_graph(model, feeds[i], calibration);
    if (!float32.is_ok()) {
      return float32.status().with_prefix(
          "--precision " + std::string(ir::precision_name(precision)) +
          ": measuring the value ranges " + sample_prefix(samples, i) + "on " +
          (samples.empty() ? "seeded inputs: " : "your inputs: "));
    }
    if (outputs != nullptr) outputs->push_back(std::move(float32).value());
  }
  return Status::ok();
}

// `feeds` (float32 inputs by name) converted to the types of `graph`'s inputs.
std::vector<std::map<std::string, ir::Tensor>> as_input_types(
    const ir::Graph& graph, const std::vector<std::map<std::string, ir::Tensor>>& feeds) {
  std::vector<std::map<std::string, ir::Tensor>> converted = feeds;
  for (const runtime::StepTensor& input : runtime::graph_input_tensors(graph)) {
    for (std::map<std::string, ir::Tensor>& feed : converted) {
      ir::Tensor& tensor = feed.at(input.name);
      if (tensor.dtype == input.type.dtype) continue;
      std::vector<double> values(static_cast<size_t>(tensor.num_elements()));
      for (int64_t i = 0; i < tensor.num_elements(); ++i) {
        values[static_cast<size_t>(i)] = tensor.float_at(i);
      }
      tensor = ir::Tensor::from_doubles(input.type.dtype, tensor.dims, values);
    }
  }
  return converted;
}

// The report's words for the inputs measured on.
std::string inputs_text(const PrecisionSamples& samples) {
  if (samples.empty()) {
    return "seeded (seed " + std::to_string(kPrecisionSeed) +
           "): floats uniform in [-1, 1), integers below the dim a Gather indexes";
  }
  std::string text = "--inputs (" + std::to_string(samples.size()) +
                     (samples.size() == 1 ? " sample): " : " samples): ");
  for (size_t i = 0; i < samples.size(); ++i) text += (i ? ", " : "") + samples[i].source;
  return text;
}

// What the mode computes, in words.
std::string products_text(ir::Precision mode, bool reduced_io) {
  switch (mode) {
    case ir::Precision::kFloat32:
      return "float32 products on CUDA cores (cuBLASLt CUBLAS_COMPUTE_32F, cuDNN FMA math, "
             "generated FMA loops)";
    case ir::Precision::kTf32:
      return "float32 GEMM and dense Conv operands rounded to TF32 (10-bit mantissa, ties "
             "away), float32 accumulation: TF32 tensor cores in cuBLASLt "
             "(CUBLAS_COMPUTE_32F_FAST_TF32), cuDNN (tensor-op math), the tiled MatMul "
             "composition and large stage GEMMs (mma.sync m16n8k8); generated CUDA-core "
             "GEMMs multiply the same rounded operands";
    case ir::Precision::kFloat32x3:
      return "float32 accuracy on TF32 tensor cores in the tiled MatMul composition and "
             "large stage GEMMs (each operand split into two TF32 parts, three mma.sync per "
             "step); cuBLASLt, cuDNN and generated CUDA-core GEMMs compute strict float32";
    case ir::Precision::kBFloat16:
    case ir::Precision::kFloat16:
      return std::string("activations and weights stored as ") +
             (mode == ir::Precision::kFloat16 ? "float16" : "bfloat16") +
             " except the values kept float32 (below); GEMMs and convolutions on the reduced "
             "operands with float32 accumulation; every op computed in float32 registers "
             "inside a kernel; graph inputs and outputs " +
             (reduced_io ? "in the reduced type too (--io-precision reduced)" : "keep their types");
  }
  return "";
}

// What keeps float32, and why: the mode's rules, then (bf16/fp16) each kept value.
constexpr size_t kMaxKeptValues = 200;
std::vector<emit::KeptFloat32> kept_text(ir::Precision mode,
                                         const ir::ReducedPrecisionResult* rewrite,
                                         bool reduced_io) {
  if (mode == ir::Precision::kFloat32) {
    return {{"every product", "--precision fp32 (the default): strict float32"}};
  }
  if (!ir::reduces_storage(mode)) {
    std::vector<emit::KeptFloat32> kept = {
        {"every stored tensor, every elementwise op, every reduction's running value",
         "tensors stay float32 in this mode; only the operands of GEMM and dense Conv "
         "products change"},
        {"grouped and depthwise Conv products",
         "memory-bound stencils: tensor cores would not make them faster"},
        {"float16, bfloat16 and float64 GEMMs", "their products are their dtype's, not float32's"}};
    if (mode == ir::Precision::kFloat32x3) {
      kept.push_back({"GEMMs outside the tiled MatMul composition",
                      "strict float32 is as accurate as three TF32 products"});
    }
    return kept;
  }
  std::vector<emit::KeptFloat32> kept;
  if (!reduced_io) {
    kept.push_back({"graph inputs and outputs",
                    "they keep their declared types (a Cast fused into the first kernel that "
                    "reads an input and the last that writes an output); --io-precision "
                    "reduced changes them"});
  }
  kept.push_back({"every reduction's running value and every op inside a kernel",
                  "generated kernels compute in float32 registers; only stored values round"});
  if (rewrite == nullptr) return kept;
  for (size_t i = 0; i < rewrite->kept.size() && i < kMaxKeptValues; ++i) {
    kept.push_back({rewrite->kept[i].value, rewrite->kept[i].rule});
  }
  if (rewrite->kept.size() > kMaxKeptValues) {
    kept.push_back({std::to_string(rewrite->kept.size() - kMaxKeptValues) + " more values",
                    "not listed (the first " + std::to_string(kMaxKeptValues) + " are)"});
  }
  return kept;
}

}  // namespace

double default_max_rel_error(ir::Precision precision) {
  return precision == ir::Precision::kFloat32 ? 0 : ir::precision_tolerance(precision);
}

Result<LoweredPrecision> lower_precision(ir::Model& model, ir::Precision precision,
                                         const PrecisionSamples& samples, bool reduced_io) {
  ir::ReducedPrecisionOptions options;
  options.reduced =
      precision == ir::Precision::kFloat16 ? ir::DType::kFloat16 : ir::DType::kBFloat16;
  options.reduced_io = reduced_io;
  LoweredPrecision lowered;
  lowered.reduced_io = reduced_io;
  lowered.float32_inputs = feeds_of(model.graph, samples);
  Ranges ranges;
  STITCH_RETURN_IF_ERROR(calibrate(model, lowered.float32_inputs, precision, samples, ranges,
                                   &lowered.float32_outputs));
  ir::MaskClampOptions clamp;
  clamp.reduced = options.reduced;
  clamp.max_abs = ranges.max_abs;
  clamp.max_value = ranges.max_value;
  STITCH_ASSIGN_OR_RETURN(lowered.clamped_masks, ir::clamp_attention_masks(model, clamp));
  if (!lowered.clamped_masks.empty()) {  // the clamped values' ranges, and what they feed
    ranges = Ranges();
    STITCH_RETURN_IF_ERROR(
        calibrate(model, lowered.float32_inputs, precision, samples, ranges, nullptr));
  }
  options.max_abs = std::move(ranges.max_abs);
  STITCH_ASSIGN_OR_RETURN(lowered.rewrite, ir::reduce_precision(model, options));
  if (Status verified = ir::verify(model); !verified.is_ok()) {
    return Status::internal("--precision " + std::string(ir::precision_name(precision)) +
                            ": the rewritten model does not verify: " + verified.message());
  }
  return lowered;
}

Result<emit::ReportPrecision> check_precision(const ir::Model& model, ir::Precision precision,
                                              double max_rel_error, const PrecisionSamples& samples,
                                              const LoweredPrecision* lowered) {
  emit::ReportPrecision report;
  report.mode = precision;
  report.products = products_text(precision, lowered != nullptr && lowered->reduced_io);
  report.kept = kept_text(precision, lowered != nullptr ? &lowered->rewrite : nullptr,
                          lowered != nullptr && lowered->reduced_io);
  if (lowered != nullptr) {
    for (const ir::ClampedMask& mask : lowered->clamped_masks) {
      report.clamped_masks.push_back({mask.value, mask.lowest, mask.clamped_to, mask.readers});
    }
  }
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
  // The inputs lower_precision's float32 outputs were computed on, in the types the
  // model takes (--io-precision reduced rounds them to the reduced type).
  const std::vector<std::map<std::string, ir::Tensor>> feeds =
      lowered != nullptr ? as_input_types(graph, lowered->float32_inputs)
                         : feeds_of(graph, samples);
  std::map<std::string, ErrorSums> sums;
  for (size_t i = 0; i < feeds.size(); ++i) {
    std::map<std::string, ir::Tensor> expected;
    if (lowered != nullptr) {
      expected = lowered->float32_outputs.at(i);
    } else {
      Result<std::map<std::string, ir::Tensor>> evaluated = ir::evaluate_graph(model, feeds[i]);
      if (!evaluated.is_ok()) {
        return evaluated.status().with_prefix(
            "--precision: evaluating the float32 reference to measure the error " +
            sample_prefix(samples, i) + ": ");
      }
      expected = std::move(evaluated).value();
    }
    ir::EvaluationOptions options;
    options.products = ir::uses_tensor_cores(precision) ? precision : ir::Precision::kFloat32;
    Result<std::map<std::string, ir::Tensor>> computed =
        ir::evaluate_graph(model, feeds[i], options);
    if (!computed.is_ok()) {
      return computed.status().with_prefix("--precision: evaluating the model at " +
                                           std::string(ir::precision_name(precision)) + " " +
                                           sample_prefix(samples, i) + ": ");
    }
    for (ir::ValueId id : graph.graph_outputs()) {
      const std::string& name = graph.value(id).name;
      sums[name].add(expected.at(name), computed->at(name));
    }
  }
  report.measured = true;
  report.inputs = inputs_text(samples);
  for (ir::ValueId id : graph.graph_outputs()) {
    const std::string& name = graph.value(id).name;
    report.outputs.push_back(sums.at(name).output(name));
  }
  return report;
}

}  // namespace stitch::driver
