// The fusion report, out/report.json (schema "stitchopt.report/2", docs/report-schema.md).
//
// Keys come in a fixed order (nlohmann::ordered_json) so the same run gives the same
// bytes; the only fields that differ between two runs are the phase timings.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "emit/cuda_emitter.h"
#include "emit/ptxas_stats.h"
#include "fusion/planner.h"
#include "ir/core/graph.h"
#include "ir/core/precision.h"
#include "ir/passes/pipeline.h"

namespace stitch::emit {

inline constexpr const char* kReportSchema = "stitchopt.report/2";

struct PhaseTiming {
  std::string name;
  double seconds = 0.0;
};

// Times phases into `phases` and calls `done` (when set) as each one ends.
class PhaseTimer {
 public:
  PhaseTimer(std::vector<PhaseTiming>& phases, std::function<void(const PhaseTiming&)> done)
      : phases_(phases), done_(std::move(done)) {}

  template <typename Function>
  auto time(const std::string& name, Function&& function) {
    auto start = std::chrono::steady_clock::now();
    auto result = function();
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    phases_.push_back(PhaseTiming{name, seconds});
    if (done_) done_(phases_.back());
    return result;
  }

 private:
  std::vector<PhaseTiming>& phases_;
  std::function<void(const PhaseTiming&)> done_;
};

struct ReportModel {
  std::string path;    // as given on the command line
  std::string sha256;  // of the model file's bytes
  int64_t opset = 0;   // default-domain opset
  int64_t node_count = 0;
};

struct ReportOptions {
  std::map<std::string, std::vector<int64_t>> input_shapes;
  fusion::PlannerOptions planner;
  bool stencil_tiles = true;  // ScheduleOptions::stencil_tiles (--no-stencil-tiles)
  ir::Precision precision = ir::Precision::kFloat32;  // ScheduleOptions::precision
};

struct ReportDevice {
  std::string name;
  std::string source;            // "estimate" or "calibrated"
  std::string launch_mode;       // "graph" or "host" (cost_model::LaunchMode, --launch-mode)
  double launch_latency_us = 0;  // the phi the planner used (after --launch-latency-us)
  // Both modes' phi, whichever was used (the other mode's is what --launch-mode would
  // have charged).
  double graph_launch_latency_us = 0, host_launch_latency_us = 0;
};

// The generated kernel of a group or a single-op kernel: what the report
// shows under groups[].codegen and unfused[].codegen.
struct ReportCodegen {
  // The kernel as emitted (its source text is not rendered), shared by every group
  // and unfused node that launches it: a copy per launch site carried the sites
  // listed so far, so the copies grew quadratically (a 20k-node chain left unfused
  // took 10.5 GB).
  std::shared_ptr<const EmittedKernel> kernel;
  std::optional<PtxasStats> ptxas;  // with --ptxas (nvcc found)
};

struct ReportPlan {
  fusion::PlannerResult result;
  std::vector<std::string> kernel_names;  // per group: its kernel (identical groups share)
  int64_t distinct_kernels = 0;
  // Per group / per unfused node: the generated kernel; nullopt for library calls,
  // nodes that launch nothing, ops the emitter has no kernel for, and --no-codegen.
  std::vector<std::optional<ReportCodegen>> group_codegen;
  std::vector<std::optional<ReportCodegen>> unfused_codegen;
};

struct ReportKernels {
  int64_t original = 0;        // see count_original_kernels
  int64_t host_shape_ops = 0;  // see count_host_shape_ops, on the input model
  int64_t after_simplify = 0;  // count_original_kernels on the simplified graph
};

// The precision section (--precision, driver/precision_check.h): per graph output
// the error of the compiled precision against float32; the figures are nullopt when
// nothing was measured (fp32).
struct PrecisionOutput {
  std::string name;
  std::optional<double> max_abs_error, max_rel_error, cosine;
  std::optional<int64_t> nonfinite;  // inf/NaN where the float32 reference is finite
};
struct KeptFloat32 {
  std::string values, why;
};
// An attention mask clamped into the reduced type's range (ir/passes/attention_mask_clamp.h).
struct ClampedMaskEntry {
  std::string value;
  double lowest = 0, clamped_to = 0;
  int64_t readers = 0;
};
struct ReportPrecision {
  ir::Precision mode = ir::Precision::kFloat32;
  std::string products;  // what the mode computes, in words
  bool measured = false;
  std::string inputs;             // what the measurement ran on
  double max_rel_error_gate = 0;  // --max-rel-error or the mode's default; 0: none
  std::vector<PrecisionOutput> outputs;
  std::vector<KeptFloat32> kept;                // what keeps float32, and why (docs/precision.md)
  std::vector<ClampedMaskEntry> clamped_masks;  // bf16/fp16
  // False when an output's max_rel_error exceeds the gate or it has nonfinite values.
  bool passed() const {
    for (const PrecisionOutput& output : outputs) {
      if (output.nonfinite.value_or(0) > 0) return false;
      if (max_rel_error_gate > 0 && output.max_rel_error.value_or(0) > max_rel_error_gate) {
        return false;
      }
    }
    return true;
  }
};

struct Report {
  ReportModel model;
  ReportDevice device;
  ReportOptions options;
  std::vector<PhaseTiming> phases;
  std::optional<ir::SimplifyStatistics> simplify;  // absent with --no-simplify
  ReportKernels kernels;
  std::optional<ReportPlan> plan;  // absent with --no-fusion
  ReportPrecision precision;
};

// Shape arithmetic a GPU runtime keeps on the host: Shape and Size (they read a
// tensor's shape, not its data), and nodes whose every input and output is an int32
// or int64 tensor of at most kMaxShapeTensorElements elements (Gather of a dim,
// Concat of dims, Div of a dim by the window size...). Exporters emit them wherever a
// model computes sizes from x.size(); ONNX Runtime runs them on the CPU.
inline constexpr int64_t kMaxShapeTensorElements = 64;
bool is_host_shape_op(const ir::Graph& graph, const ir::Node& node);

// Nodes of the input model that launch work on a device: every live node except
// View ops (Reshape, Flatten, Squeeze, Unsqueeze, Identity: no data movement),
// Constant nodes and host shape ops (is_host_shape_op). Opaque ops count: they are
// somebody's kernel.
int64_t count_original_kernels(const ir::Graph& graph);
// The host shape ops among the nodes that are not views or constants.
int64_t count_host_shape_ops(const ir::Graph& graph);

// The report as JSON text (2-space indent, trailing newline). `graph` is the graph
// the plan was made on (the simplified one), for node names.
std::string render_report(const Report& report, const ir::Graph& graph);

}  // namespace stitch::emit
