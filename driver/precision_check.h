// What `--precision` costs in accuracy, measured at compile time (docs/precision.md,
// "Measured, reported, gated"): the simplified model is evaluated by the reference
// interpreter twice on the same seeded inputs, once with float32 products (the ground
// truth) and once with the products the precision makes the GPU compute
// (ir::EvaluationOptions::products), and each graph output's error is reported:
// max |a - b|, that over max |reference| (the relative error the gate reads), the
// cosine similarity, and the values that became inf or NaN where the reference is
// finite. The kernels are checked against the same precision-aware reference in
// tests (tests/codegen/precision_models.py), so the figure is the compiled model's.
//
// Example: bert_tiny at tf32 reports max_rel_error about 4e-4 per output; the gate
// (5e-3 by default) passes.
#pragma once

#include <cstdint>

#include "emit/report.h"
#include "ir/core/graph.h"
#include "ir/core/precision.h"
#include "ir/core/status.h"

namespace stitch::driver {

// The gate when --max-rel-error is not given: ir::precision_tolerance; fp32 has none (0).
double default_max_rel_error(ir::Precision precision);

// The inputs the check draws: floats uniform in [-1, 1), integers in [0, bound) where
// bound is the dim a Gather indexes with them (through Cast, views), else 2; bools 0/1.
inline constexpr uint64_t kPrecisionSeed = 0;

// The report's precision section for `model` (simplified, static shapes) at
// `precision`, gated at `max_rel_error` (the default when negative). fp32 measures
// nothing (its outputs are listed without figures). Errors: the reference
// interpreter failing on the model (an op it cannot evaluate: the check needs every
// op), prefixed with what was being done.
Result<emit::ReportPrecision> check_precision(const ir::Model& model, ir::Precision precision,
                                              double max_rel_error);

}  // namespace stitch::driver
