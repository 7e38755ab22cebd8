// What `--precision` costs in accuracy, measured at compile time (docs/precision.md,
// "Measured, reported, gated"), and the bf16/fp16 rewrite it measures.
//
// The check evaluates two models with the reference interpreter on the same seeded
// inputs: the float32 model with float32 products (the ground truth), and the model
// as compiled: under tf32 and fp32x3 the same model with the precision's products
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
#include "ir/passes/reduced_precision.h"

namespace stitch::driver {

// The gate when --max-rel-error is not given: ir::precision_tolerance; fp32 has none (0).
double default_max_rel_error(ir::Precision precision);

// The inputs the check and the calibration draw, reproducible: floats uniform in
// [-1, 1), integers in [0, bound) where bound is the dim a Gather indexes with them
// (through Cast and views), else 2; bools 0/1.
inline constexpr uint64_t kPrecisionSeed = 0;
std::map<std::string, ir::Tensor> seeded_inputs(const ir::Graph& graph);

// bf16 / fp16: rewrites `model` to the reduced type (ir::reduce_precision); the range
// rule reads max |x| of every value of the model evaluated on the seeded inputs. `float32` receives
// the model as it was (the check's reference). Errors: the reference interpreter failing on the
// model (fp16's calibration needs every op).
Result<ir::ReducedPrecisionResult> lower_precision(ir::Model& model, ir::Precision precision,
                                                   ir::Model* float32);

// The report's precision section for `model` (simplified, static shapes; under bf16 and
// fp16 the rewritten one, with `reference` the float32 model and `rewrite` what
// lower_precision did; otherwise `reference` is `model`) at `precision`, gated at
// `max_rel_error` (the default when negative). fp32 measures nothing (its outputs are
// listed without figures). Errors: the reference interpreter failing on a model,
// prefixed with what was being done.
Result<emit::ReportPrecision> check_precision(const ir::Model& reference, const ir::Model& model,
                                              ir::Precision precision, double max_rel_error,
                                              const ir::ReducedPrecisionResult* rewrite = nullptr);

}  // namespace stitch::driver
