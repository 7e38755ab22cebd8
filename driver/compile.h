// The compile driver: an imported model in, everything stitchopt produces out, in
// memory. The CLI (cli/compile.cc) imports the model, calls compile(), and stages
// the result on disk; tests and tools call compile() directly.
//
// Phases, in order, each timed (CompileObserver::phase_done):
//  1. simplify  ir/passes' pipeline to a fixed point, then ir::verify (a pass that
//               breaks an invariant is our bug: an internal error);
//  2. plan      fusion::plan_fusion (with PlannerOptions::timer, candidates scored
//               by their emulated time: driver/candidate_timer.h);
//  3. codegen   one kernel per distinct group that is not a library call, and a
//               single-op kernel per unfused node that launches a generated one,
//               each with its prediction (emit::predict_kernel) for kernels.json;
//               a group the emitter cannot express gets a warning and no kernel.
//               Which groups share one kernel is decided first (emit::share_kernels,
//               before any code exists, so each distinct kernel is emitted once
//               under its final name), with or without codegen;
//  4. rewrite   each group's fused-node attributes (artifact/fused_node_attributes.h),
//               built once from the plan and the codegen, and the rewritten model.
// Without a device profile (--no-fusion) only phase 1 runs; without codegen
// (--no-codegen) phase 3 is skipped.
//
// Example: the Mul -> Add chains of two identical layers give two groups, one
// kernel (stitch_k0) in `kernels`, and a rewritten model whose two "stitchopt"
// nodes both call stitch_k0.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cost_model/device_profile.h"
#include "driver/precision_check.h"
#include "emit/cuda_emitter.h"
#include "emit/kernel_directory.h"
#include "emit/report.h"
#include "fusion/planner.h"
#include "ir/core/graph.h"
#include "ir/core/status.h"
#include "ir/passes/pipeline.h"

namespace stitch::driver {

struct CompileOptions {
  std::string model_path;  // names the model in messages and the report
  bool simplify = true;
  ir::PipelineOptions pipeline;  // complete: model_path and dump_directory included
  // The device the plan and the kernels are made for; nullopt: no fusion.
  std::optional<cost_model::DeviceProfile> profile;
  fusion::PlannerOptions planner;
  emit::ScheduleOptions schedule;  // --no-stencil-tiles, --precision
  bool codegen = true;
  // --max-rel-error: the precision check's gate (driver/precision_check.h); negative:
  // the precision's documented default.
  double max_rel_error = -1;
  // --inputs: the samples the precision check and the bf16/fp16 calibration run on,
  // checked against the model's inputs by the caller; empty: one seeded draw.
  PrecisionSamples precision_inputs;
  // --io-precision reduced (bf16/fp16): float32 graph inputs and outputs take the
  // reduced type (driver/precision_check.h).
  bool reduced_io = false;
};

// What the caller hears while compile() works, as it happens.
struct CompileObserver {
  std::function<void(const emit::PhaseTiming&)> phase_done;
  std::function<void(const ir::SimplifyStatistics&)> simplified;
  std::function<void(const std::string&)> warning;  // raw text from the model: escape it
};

struct CompiledModel {
  ir::Model simplified;  // the model the plan was made on (its node ids)
  // Each distinct kernel once (shared groups' owner, then single-op kernels), with
  // its source, schedule (ops, template, composition) and launch configuration; the
  // order OUT/kernels/ lists them in.
  std::vector<emit::EmittedKernel> kernels;
  // kernels[i]'s charges and predicted time, for kernels.json (emit::kernels_artifact).
  std::vector<emit::KernelPrediction> predictions;
  // model.fused.onnx: groups as "stitchopt" nodes; the simplified model without
  // fusion. Metadata "stitchopt.kernels" is set when it has kernels.
  ir::Model rewritten;
  // Everything report.json holds that compile() knows: the model's opset and node
  // count, the device, the planner options, this call's phases, the simplification,
  // the kernel counts and the plan (report.plan: the groups, unfused nodes, kernel
  // names and codegen). The caller adds the model's path and sha256 (path is
  // options.model_path already), input shapes and its own phases.
  emit::Report report;

  // The plan; nullptr without fusion.
  const fusion::PlannerResult* plan() const { return report.plan ? &report.plan->result : nullptr; }
  // kernels.json for the model.fused.onnx whose sha256 is `model_sha256`.
  artifact::KernelsArtifact kernels_artifact(const std::string& model_sha256) const {
    return emit::kernels_artifact(kernels, predictions, model_sha256);
  }
};

// Phases 3 and 4 for a plan made on `model`: which groups share a kernel
// (emit::share_kernels), codegen (when `codegen`) and the rewrite. compile() calls it
// after planning; the emulated candidate timer (driver/candidate_timer.h) on
// its probe models. `timer`, when given, times the phases "codegen" and "rewrite".
struct EmittedPlan {
  emit::ReportPlan plan;                            // the plan with kernel names and codegen
  std::vector<emit::EmittedKernel> kernels;         // as CompiledModel::kernels
  std::vector<emit::KernelPrediction> predictions;  // as CompiledModel::predictions
  ir::Model rewritten;                              // as CompiledModel::rewritten
};
Result<EmittedPlan> emit_plan(const ir::Model& model, fusion::PlannerResult planned,
                              const cost_model::DeviceProfile& profile, bool codegen,
                              const CompileObserver& observer = {},
                              emit::PhaseTimer* timer = nullptr,
                              const emit::ScheduleOptions& schedule = {});

// Precondition: ir::verify(model) holds. Errors: a pass or the planner failing on
// the model (prefixed with options.model_path), or an internal error.
Result<CompiledModel> compile(ir::Model model, const CompileOptions& options,
                              const CompileObserver& observer = {});

}  // namespace stitch::driver
