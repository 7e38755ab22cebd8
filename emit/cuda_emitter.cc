// The CUDA emitter (see cuda_emitter.h): the kernel skeleton around the body the
// kernel writer (kernel_writer.h) writes: the header comment (fused nodes, template,
// composition, launch), the kernel's parameters and the extern "C" launchers; and the
// per-op FusionStitching template entries of the kernel's record.
#include "emit/cuda_emitter.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "cost_model/cost_model.h"
#include "emit/compositions/group_facts.h"
#include "emit/cuda_text.h"
#include "emit/kernel_writer.h"
#include "emit/schedule.h"
#include "ir/core/op_registry.h"
#include "ir/core/reduction_axes.h"
#include "support/escape.h"

namespace stitch::emit {

TemplateAttrs stage_template_attrs(const TemplateContext& context) {
  const ir::Graph& graph = context.graph;
  const GroupSchedule& schedule = context.schedule;
  const ir::Node& node = context.node;
  const ValueSchedule& value = context.value;
  const std::vector<int64_t>& dims = context.dims;
  TemplateAttrs attrs;
  const bool reduction = ir::op_kind(node) == ir::OpKind::kReduction;
  bool noop = false;
  std::vector<int64_t> axes;
  if (reduction) {
    Result<std::vector<int64_t>> given = ir::reduction_axes(graph, node, &noop);
    if (given.is_ok()) axes = given.value();
  }
  const std::string split = value.slices >= 2 ? "GRID-SPLIT_" + num(value.slices) + "-" : "";
  for (size_t d = 0; d < dims.size(); ++d) {
    bool reduced =
        reduction && std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(d));
    if (value.mapping == ReductionMapping::kWarp) {
      attrs.push_back(reduced ? split + "WARP" : "GRID");
    } else if (value.mapping == ReductionMapping::kColumn) {
      bool trailing = static_cast<int64_t>(d) > axes.back();
      attrs.push_back(reduced    ? split + "CTA-ROWS_" + num(schedule.block / value.columns)
                      : trailing ? "WARP-COL_" + num(value.columns)
                                 : "GRID");
    } else if (reduced) {
      attrs.push_back("THREAD");
    } else {
      attrs.push_back(d + 1 == dims.size() ? "CTA" : "GRID");
    }
  }
  return attrs;
}

namespace {

// One value's template entry: its op, the composition's attributes per dim, "S" when
// staged in shared memory.
std::string template_entry(const ir::Graph& graph, const GroupSchedule& schedule, ir::ValueId id,
                           const std::string& op_name) {
  const ValueSchedule& value = schedule.values.at(id);
  const ir::Node& node = graph.node(graph.value(id).producer);
  std::vector<int64_t> dims = graph.value(id).type.dims;
  if (ir::op_kind(node) == ir::OpKind::kReduction || ir::op_kind(node) == ir::OpKind::kGemm)
    dims = graph.value(node.inputs[0]).type.dims;
  const TemplateContext context{graph, schedule, node, value, dims};
  TemplateAttrs attrs = visit_composition(
      schedule.plan, [&](auto c, const auto& plan) { return c.template_attrs(context, plan); });
  if (attrs.empty()) attrs.push_back("THREAD");
  std::string text = op_name + "[";
  for (size_t a = 0; a < attrs.size(); ++a) text += (a ? "," : "") + attrs[a];
  text += "]";
  if (value.materialized && value.storage == Storage::kShared) text += "S";
  return text;
}

// The kernel's template (FusionStitching grammar) and per-op schedules.
void record_template(const ir::Graph& graph, const GroupSchedule& schedule, EmittedKernel* kernel) {
  std::set<ir::ValueId> outputs(schedule.boundary.outputs.begin(), schedule.boundary.outputs.end());
  std::map<std::string, int> op_counter;
  for (ir::NodeId id : schedule.boundary.ordered_nodes) {
    const ir::Node& node = graph.node(id);
    kernel->fused_nodes.push_back(node_label(node));
    OpSchedule op{node.name, node.op_type, kernel->composition, ""};
    std::string lower;
    for (char c : node.op_type) {
      lower += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    }
    std::string op_name = lower + "_" + num(++op_counter[lower]);
    for (ir::ValueId output : node.outputs) {
      if (output == ir::kNoId) continue;
      const ValueSchedule& value = schedule.values.at(output);
      if (!value.materialized && !outputs.count(output)) {
        op.composition = "thread";
        continue;
      }
      if (value.mapping != ReductionMapping::kThread) {
        op.composition = value.mapping == ReductionMapping::kColumn ? "block" : "warp";
      }
      std::string entry = template_entry(graph, schedule, output, op_name);
      op.template_entry += (op.template_entry.empty() ? "" : " ") + entry;
      kernel->template_text += (kernel->template_text.empty() ? "" : " ") + entry + ";";
    }
    kernel->ops.push_back(op);
  }
}

// The composition line's explanation: rows, tiles or stages.
std::string composition_detail(const ir::Graph& graph, const GroupSchedule& schedule) {
  return visit_composition(
      schedule.plan, [&](auto c, const auto& plan) { return c.detail(graph, schedule, plan); });
}

// The .cu's header comment: what the kernel computes, from which nodes, how and why.
std::string header_comment(const ir::Graph& graph, const EmittedKernel& kernel,
                           const GroupSchedule& schedule) {
  std::ostringstream cu;
  cu << "// " << kernel.file << ": generated by stitchopt (docs/codegen.md). Do not edit.\n//\n";
  cu << "// Fused ONNX nodes:\n";
  for (const std::string& name : kernel.fused_nodes) {
    cu << "//   " << support::source_text(name) << "\n";
  }
  cu << "// Template: " << support::source_text(kernel.template_text, 4096) << "\n";
  cu << "// Composition: " << kernel.composition << composition_detail(graph, schedule);
  if (!kernel.why.empty()) {
    cu << "\n// Why this schedule: " << support::source_text(kernel.why, 4096);
  }
  cu << "\n// Inputs:\n";
  for (const KernelTensor& t : kernel.inputs) {
    cu << "//   " << support::source_text(t.value_name) << ": " << ir::dtype_onnx_name(t.dtype)
       << dims_text(t.shape) << "\n";
  }
  cu << "// Outputs:\n";
  for (const KernelTensor& t : kernel.outputs) {
    cu << "//   " << support::source_text(t.value_name) << ": " << ir::dtype_onnx_name(t.dtype)
       << dims_text(t.shape) << "\n";
  }
  cu << "// Launch: grid " << kernel.launch.grid << ", block " << kernel.launch.block << ", shared "
     << kernel.launch.shared_bytes << " bytes (requested " << kernel.shared_bytes_requested << ")"
     << (kernel.launch.cooperative ? ", cooperative" : "") << ", workspace "
     << kernel.workspace_bytes << " bytes\n";
  if (!kernel.shared_memory_fallback.empty()) {
    cu << "// Shared-memory fallback: " << support::source_text(kernel.shared_memory_fallback, 4096)
       << "\n";
  }
  char predicted[64];
  std::snprintf(predicted, sizeof(predicted), "%.3f", kernel.predicted_time_us);
  cu << "// Predicted time: " << predicted << " us\n";
  if (!kernel.estimate.empty()) cu << "// " << kernel.estimate << "\n";
  return cu.str();
}

// The kernel with `body` and its extern "C" launchers. Kernel parameters: the inputs
// the body reads, the outputs, the workspace; the launcher passes its locals as the
// arguments.
std::string kernel_and_launchers(const ir::Graph& graph, const GroupSchedule& schedule,
                                 const KernelWriter& writer, const EmittedKernel& kernel,
                                 const std::string& body) {
  std::string params;
  std::string args;
  std::ostringstream launcher_locals;
  auto add_tensor = [&](ir::ValueId id, bool input, size_t k) {
    const std::string type =
        (input ? "const " : "") + storage_type(graph.value(id).type.dtype).value();
    const std::string name = writer.pointer_name(id);
    params += (params.empty() ? "" : ",\n    ") + type + "* __restrict__ " + name;
    launcher_locals << "  " << type << "* " << name << " = static_cast<" << type << "*>("
                    << (input ? "inputs[" : "outputs[") << k << "]);\n";
    args += ", " + name;
  };
  std::vector<size_t> used = writer.used_inputs();
  std::sort(used.begin(), used.end());
  for (size_t k : used) add_tensor(schedule.boundary.inputs[k], true, k);
  for (size_t k = 0; k < schedule.boundary.outputs.size(); ++k) {
    add_tensor(schedule.boundary.outputs[k], false, k);
  }
  if (schedule.workspace_bytes > 0) {
    params +=
        (params.empty() ? "" : ",\n    ") + std::string("unsigned char* __restrict__ workspace");
    launcher_locals
        << "  unsigned char* workspace_bytes = static_cast<unsigned char*>(workspace);\n";
    args += ", workspace_bytes";
  }
  const std::string& name = kernel.name;
  std::ostringstream cu;
  cu << "STITCH_KERNEL void " << name << "_kernel(\n    " << params << ") {\n" << body << "}\n\n";
  cu << "#ifndef __CUDACC_RTC__\n";
  cu << "extern \"C\" size_t " << name << "_workspace_bytes(void) { return "
     << kernel.workspace_bytes << "; }\n\n";
  cu << "extern \"C\" cudaError_t " << name
     << "_launch(const void* const* inputs, void* const* outputs, void* workspace, "
        "cudaStream_t stream) {\n";
  cu << "  (void)inputs;\n";
  if (schedule.workspace_bytes == 0) cu << "  (void)workspace;\n";
  cu << launcher_locals.str();
  if (schedule.cooperative) {
    cu << "  long long grid = " << kernel.launch.grid << ";\n";
    cu << "  const long long resident = stitch_max_coresident_blocks(" << name << "_kernel, "
       << kernel.launch.block << ", 0);\n";
    cu << "  if (resident > 0 && grid > resident) grid = resident;\n";
    cu << "  return STITCH_LAUNCH_COOPERATIVE(" << name
       << "_kernel, static_cast<unsigned int>(grid), " << kernel.launch.block << ", 0, stream"
       << args << ");\n";
  } else {
    cu << "  return STITCH_LAUNCH(" << name << "_kernel, " << kernel.launch.grid << ", "
       << kernel.launch.block << ", 0, stream" << args << ");\n";
  }
  cu << "}\n#endif  // __CUDACC_RTC__\n";
  return cu.str();
}

}  // namespace

void list_call_sites(EmittedKernel& kernel, const std::vector<std::string>& sites) {
  if (sites.empty()) return;
  const size_t at = kernel.source.find("// Template: ");
  if (at == std::string::npos) return;
  std::string block = "// Also launched for " + std::to_string(sites.size()) +
                      (sites.size() == 1 ? " more call site" : " more call sites") +
                      " (the same computation on other tensors):\n";
  for (const std::string& site : sites) block += "//   " + support::source_text(site) + "\n";
  kernel.source.insert(at, block);
}

Result<EmittedKernel> emit_kernel(const ir::Graph& graph, const std::vector<ir::NodeId>& nodes,
                                  const std::string& kernel_name,
                                  const cost_model::DeviceProfile& profile,
                                  const ScheduleOptions& options) {
  return emit_kernel(graph, group_boundary(graph, nodes), kernel_name, profile, options);
}

namespace {

// The profile's analytic figures for the schedule (issue 16 part 4): what the
// planner weighs, term by term, so a reader of the .cu sees why it is fast or slow.
std::string estimate_line(const cost_model::GroupCost& cost,
                          const cost_model::DeviceProfile& profile) {
  char text[512];
  std::snprintf(text, sizeof(text),
                "Estimate on %s (analytic): %lld bytes moved (%.2f us at the bandwidth curve), "
                "%.3g flops, launch %.2f us, schedule charge %.2f us: %.2f us; `stitchopt "
                "profile OUT --emulate` gives the emulated figures (profile.json)",
                support::source_text(profile.name, 40).c_str(), static_cast<long long>(cost.bytes),
                cost_model::memory_time_us(profile, static_cast<double>(cost.bytes)), cost.flops,
                cost_model::launch_phi(profile), cost.time.charge_us(), cost.time.total_us);
  return text;
}

}  // namespace

Result<EmittedKernel> emit_kernel(const ir::Graph& graph, const GroupBoundary& boundary,
                                  const std::string& kernel_name,
                                  const cost_model::DeviceProfile& profile,
                                  const ScheduleOptions& options) {
  STITCH_ASSIGN_OR_RETURN(GroupSchedule schedule,
                          build_schedule(graph, boundary, profile, options));
  EmittedKernel kernel;
  kernel.name = kernel_name;
  kernel.file = kernel_name + ".cu";
  for (ir::ValueId id : schedule.boundary.inputs) {
    const ir::Value& value = graph.value(id);
    STITCH_RETURN_IF_ERROR(
        storage_type(value.type.dtype).status().with_prefix("input \"" + value.name + "\": "));
    kernel.inputs.push_back(KernelTensor{value.name, value.type.dtype, value.type.dims});
  }
  for (ir::ValueId id : schedule.boundary.outputs) {
    const ir::Value& value = graph.value(id);
    kernel.outputs.push_back(KernelTensor{value.name, value.type.dtype, value.type.dims});
  }
  KernelWriter writer(graph, schedule);
  STITCH_ASSIGN_OR_RETURN(std::string body, writer.write_body());

  kernel.composition = std::string(composition_name(schedule.plan));
  kernel.why = schedule.why;
  const VectorAccess* vector = vector_access(schedule);
  kernel.vector_width = vector ? vector->width : 1;
  kernel.workspace_bytes = schedule.workspace_bytes;
  kernel.launch =
      LaunchConfig{schedule.grid, schedule.block, schedule.shared_bytes, schedule.cooperative};
  kernel.shared_bytes_requested = schedule.shared_bytes_requested;
  kernel.shared_bytes_allocated = schedule.shared_bytes;
  kernel.shared_memory_fallback = schedule.shared_memory_fallback;
  // One estimate with one meaning everywhere (docs/report-schema.md, "Predicted
  // time"): one launch of the kernel as emitted, the schedule's charges included.
  const cost_model::KernelShape shape = kernel_shape(graph, schedule);
  const cost_model::GroupCost cost =
      cost_model::estimate_group(graph, schedule.boundary.ordered_nodes, profile, &shape);
  kernel.predicted_time_us = cost.time.total_us;
  kernel.charges = shape;
  kernel.estimate = estimate_line(cost, profile);
  record_template(graph, schedule, &kernel);

  kernel.source = header_comment(graph, kernel, schedule) + "#include \"stitch_prelude.cuh\"\n\n" +
                  kernel_and_launchers(graph, schedule, writer, kernel, body);
  // Model strings pass support::source_text on their way in; this keeps it that way.
  auto stray = std::find_if(kernel.source.begin(), kernel.source.end(),
                            [](char c) { return c != '\n' && (c < 0x20 || c > 0x7e); });
  STITCH_CHECK(stray == kernel.source.end())
      << kernel.file << ": byte " << static_cast<int>(static_cast<unsigned char>(*stray))
      << " at offset " << (stray - kernel.source.begin()) << " is not printable ASCII";
  return kernel;
}

}  // namespace stitch::emit
