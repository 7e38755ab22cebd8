// What `--precision` costs in accuracy, measured at compile time (docs/precision.md,
// "Measured, reported, gated"), and the bf16/fp16 rewrite it measures.
//
// The check compares two evaluations by the reference interpreter on the same seeded
// inputs: the float32 model with float32 products (the ground truth; under bf16/fp16
// the calibration run of the model before the rewrite, not evaluated again), and the
// model as compiled: under tf32 and fp32x3 the same model with the precision's products
// (ir::EvaluationOptions::products), under bf16 and fp16 the rewritten model
// (lower_precision; the interpreter rounds every bfloat16/float16 result on store, as
// the generated kernels do). Each graph output's error is reported: max |a - b|, that
// over max |reference| (the relative error the gate reads), the cosine similarity, and
// the values that became inf or NaN where the reference is finite. The kernels are
// checked against float32 within the same tolerance in tests
// (tests/codegen/precision_models.py), so the figure describes the compiled model.
//
// Example: vit at tf32 reports max_rel_error 1.96e-3 for its logits; the gate (5e-3 by
// default) passes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "emit/report.h"
#include "ir/core/graph.h"
#include "ir/core/precision.h"
#include "ir/core/status.h"
#include "ir/core/tensor.h"
#include "ir/passes/attention_mask_clamp.h"
#include "ir/passes/reduced_precision.h"

namespace stitch::driver {

// The gate when --max-rel-error is not given: ir::precision_tolerance; fp32 has none (0).
double default_max_rel_error(ir::Precision precision);

// The seed of the inputs the check and the calibration draw when the user gives none
// (runtime::random_graph_inputs: floats uniform in [-1, 1), integers below the dim a
// Gather indexes with them, bools 0/1), the same in every compile.
inline constexpr uint64_t kPrecisionSeed = 0;

// One set of the model's inputs from the user (`stitchopt --inputs FILE.npz`), checked
// against the imported model's graph inputs (runtime::bind_feeds: every input, its
// exact dtype and shape). Inputs that simplification removes are dropped when fed.
struct PrecisionSample {
  std::string source;  // the file, for messages and the report
  std::map<std::string, ir::Tensor> inputs;
};

// The calibration and the check run on every sample of `samples`, or on one seeded
// draw when it is empty.
using PrecisionSamples = std::vector<PrecisionSample>;

// What lower_precision did: the rewrite, and the float32 model's outputs on each
// sample (its calibration runs), which the check compares against.
struct LoweredPrecision {
  std::vector<ir::ClampedMask> clamped_masks;  // clamped before the rewrite
  ir::ReducedPrecisionResult rewrite;
  bool reduced_io = false;  // --io-precision reduced
  // Per sample: the float32 model's inputs (the rewritten model reads them converted to
  // its input types) and outputs.
  std::vector<std::map<std::string, ir::Tensor>> float32_inputs;
  std::vector<std::map<std::string, ir::Tensor>> float32_outputs;
};

// bf16 / fp16: rewrites `model` to the reduced type (ir::reduce_precision); the range
// rules read max |x| of every value of the model evaluated on the samples (the largest
// over all of them). Attention masks beyond the type's range are clamped first
// (ir::clamp_attention_masks) and the ranges measured again on the clamped model; the
// float32 outputs stay the unclamped model's. Errors: the reference interpreter failing on the
// model (the calibration needs every op), prefixed with the sample's file. `reduced_io`
// (--io-precision reduced): the float32 graph inputs and outputs take the reduced type
// (ir::ReducedPrecisionOptions::reduced_io; the inputs' ranges come from the samples).
Result<LoweredPrecision> lower_precision(ir::Model& model, ir::Precision precision,
                                         const PrecisionSamples& samples = {},
                                         bool reduced_io = false);

// The report's precision section for `model` (simplified, static shapes; under bf16 and
// fp16 the rewritten one, with `lowered` what lower_precision did on the same
// `samples`) at `precision`, gated at `max_rel_error` (the default when negative). Each
// output's figures are over all samples: max |a - b| over max |reference|, the cosine of
// the outputs concatenated, the inf/NaN summed. fp32 measures nothing (its outputs are
// listed without figures). Errors: the reference interpreter failing on the model,
// prefixed with what was being done.
Result<emit::ReportPrecision> check_precision(const ir::Model& model, ir::Precision precision,
                                              double max_rel_error,
                                              const PrecisionSamples& samples = {},
                                              const LoweredPrecision* lowered = nullptr);

}  // namespace stitch::driver
