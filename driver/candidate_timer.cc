#include "driver/candidate_timer.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "cost_model/cost_model.h"
#include "driver/compile.h"
#include "emit/canonical_group.h"
#include "emit/group_boundary.h"
#include "emit/kernel_directory.h"
#include "emit/onnx_writer.h"
#include "emit/schedule.h"
#include "fusion/fusion_policy.h"
#include "ir/core/dtype.h"
#include "ir/core/op_registry.h"
#include "ir/core/window.h"
#include "support/escape.h"
#include "support/sha256.h"

namespace stitch::driver {
namespace {

namespace fs = std::filesystem;

constexpr const char* kProbeKernel = "stitch_probe";

// How one launching node of a candidate runs alone.
struct NodeCost {
  enum class Kind { kLibrary, kProbe, kUntimable } kind = Kind::kUntimable;
  double library_us = 0;  // kLibrary
  std::string text;       // kProbe: its canonical group text
};

// A distinct subgraph copied into the probe model: a candidate's nodes (one group)
// or one node alone.
struct Probe {
  std::vector<ir::NodeId> nodes;  // in the planner's graph
  bool fused = false;
  std::string text;       // its canonical group text (the cache key)
  std::string step_name;  // the probe model's node (fused node or copied node) name
  double estimated_us = -1;
  std::string composition;
  std::string bound;
};

bool half_precision(const ir::Graph& graph, ir::NodeId id) {
  for (ir::ValueId output : graph.node(id).outputs) {
    if (output == ir::kNoId) continue;
    ir::DType dtype = graph.value(output).type.dtype;
    if (dtype == ir::DType::kFloat16 || dtype == ir::DType::kBFloat16) return true;
  }
  return false;
}

// Copies the probes' nodes into one model, each probe a disjoint subgraph over its
// group boundary (emit/group_boundary.h): its inputs become graph inputs (constants
// stay constants), its outputs graph outputs. Returns the copied node ids per probe.
ir::Model probe_model(const ir::Graph& graph, const std::vector<int32_t>& positions,
                      std::vector<Probe>& probes, std::vector<std::vector<ir::NodeId>>& copied) {
  ir::Model model;
  model.ir_version = 8;
  model.producer_name = "stitchopt";
  std::map<std::string, int64_t> opsets;
  ir::Graph& out = model.graph;
  out.name = "stitchopt_probes";
  copied.assign(probes.size(), {});
  for (size_t p = 0; p < probes.size(); ++p) {
    const std::string prefix = "p" + std::to_string(p) + "_";
    const emit::GroupBoundary boundary = emit::group_boundary(graph, probes[p].nodes, positions);
    std::map<ir::ValueId, ir::ValueId> value_of;
    for (ir::ValueId v : boundary.inputs) {
      const ir::Value& value = graph.value(v);
      std::optional<ir::Tensor> constant;
      if (value.constant != nullptr) {
        constant = *value.constant;
      } else if (value.producer != ir::kNoId && graph.node(value.producer).op_type == "Constant") {
        constant = ir::constant_node_value(graph.node(value.producer));
      }
      if (constant) {
        value_of[v] = out.add_initializer(prefix + value.name, std::move(*constant));
      } else {
        value_of[v] = out.add_value(prefix + value.name, value.type);
        out.add_graph_input(value_of[v]);
      }
    }
    for (ir::NodeId id : boundary.ordered_nodes) {
      const ir::Node& node = graph.node(id);
      std::vector<ir::ValueId> inputs;
      for (ir::ValueId v : node.inputs) inputs.push_back(v == ir::kNoId ? v : value_of.at(v));
      std::vector<ir::ValueId> outputs;
      for (ir::ValueId v : node.outputs) {
        if (v != ir::kNoId) {
          value_of[v] = out.add_value(prefix + graph.value(v).name, graph.value(v).type);
        }
        outputs.push_back(v == ir::kNoId ? v : value_of.at(v));
      }
      ir::NodeId made = out.add_node(node.op_type, inputs, outputs, node.domain,
                                     prefix + "n" + std::to_string(id));
      ir::Node& made_node = out.node(made);
      made_node.attributes = node.attributes;
      made_node.opset = node.opset;
      opsets[node.domain] = std::max(opsets[node.domain], node.opset);
      copied[p].push_back(made);
      if (!probes[p].fused) probes[p].step_name = made_node.name;
    }
    for (ir::ValueId v : boundary.outputs) out.add_graph_output(value_of.at(v));
  }
  for (const auto& [domain, version] : opsets) {
    // Nodes made by a pass may carry no version: the opset the ONNX 1.12 tools know.
    model.opset_imports.push_back(ir::OpsetImport{domain, version > 0 ? version : 17});
  }
  return model;
}

Result<std::string> read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::internal("cannot read " + path.string());
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

class EmulatedTimer : public fusion::CandidateTimer {
 public:
  explicit EmulatedTimer(EmulatedTimerOptions options) : options_(std::move(options)) {}

  std::string_view method() const override { return "emulated"; }
  Result<std::vector<std::optional<fusion::CandidateTiming>>> time(
      const ir::Graph& graph, const std::vector<fusion::Pattern>& candidates,
      const std::vector<size_t>& which) override;

 private:
  // What makes two groups the same kernel (emit/canonical_group.h): node names and
  // constant values aside, the same ops on the same shapes. The probe cache's key.
  std::string canonical_text(const ir::Graph& graph, const std::vector<ir::NodeId>& nodes) {
    if (!model_) {
      model_.emplace();
      model_->graph = graph;
    }
    return emit::canonical_group_text(*model_, emit::group_boundary(graph, nodes, positions_));
  }
  // Profiles the probes (fills estimated_us, composition, bound).
  Status run_probes(const ir::Graph& graph, std::vector<Probe>& probes);
  // How `id` runs alone: a library estimate, or a single-node probe (added to
  // `probes` unless its kernel text was profiled before).
  NodeCost node_cost(const ir::Graph& graph, ir::NodeId id, std::vector<Probe>& probes);

  EmulatedTimerOptions options_;
  std::vector<int32_t> positions_;
  std::optional<ir::Model> model_;  // the planner's graph, for canonical_group_text
  // Per canonical group text: its probe's figures, once profiled.
  std::map<std::string, Probe> profiled_;
  std::map<ir::NodeId, std::string> node_text_;  // single-node probes' kernel text
  int distinct_kernels_ = 0;                     // fused probes profiled, for the budget
  int rounds_ = 0;                               // probe outputs written
  bool warned_partial_ = false;                  // the partial-estimate warning printed
};

NodeCost EmulatedTimer::node_cost(const ir::Graph& graph, ir::NodeId id,
                                  std::vector<Probe>& probes) {
  const cost_model::DeviceProfile& device = options_.profile.device;
  NodeCost cost;
  const ir::Node& node = graph.node(id);
  ir::OpKind kind = ir::op_kind(node);
  if (kind == ir::OpKind::kGemm || kind == ir::OpKind::kConv ||
      (kind == ir::OpKind::kStencil && fusion::stencil_refusal(graph, node))) {
    const cost_model::GroupCost analytic = cost_model::estimate_group(graph, {id}, device);
    cost.kind = NodeCost::Kind::kLibrary;
    cost.library_us =
        cost_model::estimate_library_call(analytic.flops, analytic.bytes, half_precision(graph, id),
                                          cost_model::library_gemm(graph, node), device)
            .total_us;
    return cost;
  }
  auto text = node_text_.find(id);
  if (text == node_text_.end()) {
    Result<emit::EmittedKernel> kernel =
        emit::emit_kernel(graph, emit::group_boundary(graph, {id}, positions_), kProbeKernel,
                          device, options_.schedule);
    if (!kernel.is_ok()) return cost;  // untimable
    text = node_text_.emplace(id, canonical_text(graph, {id})).first;
  }
  cost.kind = NodeCost::Kind::kProbe;
  cost.text = text->second;
  if (!profiled_.count(text->second)) {
    auto pending = std::find_if(probes.begin(), probes.end(),
                                [&](const Probe& probe) { return probe.text == text->second; });
    if (pending == probes.end()) probes.push_back(Probe{{id}, false, text->second, "", -1, "", ""});
  }
  return cost;
}

Result<std::vector<std::optional<fusion::CandidateTiming>>> EmulatedTimer::time(
    const ir::Graph& graph, const std::vector<fusion::Pattern>& candidates,
    const std::vector<size_t>& which) {
  const cost_model::DeviceProfile& device = options_.profile.device;
  if (positions_.empty()) {
    STITCH_ASSIGN_OR_RETURN(positions_, emit::topological_positions(graph));
  }
  // The kernel text of each candidate asked for (one probe per distinct text: the
  // same candidate in identical layers is profiled once), and the probes this round
  // needs: new fused kernels within the budget and the single nodes they hold.
  std::vector<std::string> texts(which.size());
  std::vector<Probe> probes;
  for (size_t k = 0; k < which.size(); ++k) {
    const fusion::Pattern& pattern = candidates[which[k]];
    Result<emit::EmittedKernel> kernel =
        emit::emit_kernel(graph, emit::group_boundary(graph, pattern.nodes, positions_),
                          kProbeKernel, device, options_.schedule);
    if (!kernel.is_ok()) continue;
    std::string key = canonical_text(graph, pattern.nodes);
    bool known = profiled_.count(key) > 0 ||
                 std::any_of(probes.begin(), probes.end(),
                             [&](const Probe& probe) { return probe.text == key; });
    if (!known && distinct_kernels_ >= options_.max_candidates) continue;
    bool untimable = false;
    for (ir::NodeId id : pattern.nodes) {
      if (cost_model::launches_work(graph.node(id)) &&
          node_cost(graph, id, probes).kind == NodeCost::Kind::kUntimable) {
        untimable = true;
      }
    }
    if (untimable) continue;
    texts[k] = key;
    if (!known) {
      ++distinct_kernels_;
      probes.push_back(Probe{pattern.nodes, true, std::move(key), "", -1, "", ""});
    }
  }
  if (options_.profile.verbose) {
    std::fprintf(stderr, "stitchopt: --score emulated: timing %zu candidates (%zu new probes)\n",
                 which.size(), probes.size());
  }
  if (!probes.empty()) {
    STITCH_RETURN_IF_ERROR(run_probes(graph, probes));
    for (Probe& probe : probes) profiled_[probe.text] = probe;
  }

  std::vector<std::optional<fusion::CandidateTiming>> timings(which.size());
  for (size_t k = 0; k < which.size(); ++k) {
    if (texts[k].empty()) continue;
    const Probe& fused = profiled_.at(texts[k]);
    if (fused.estimated_us < 0) continue;
    const fusion::Pattern& pattern = candidates[which[k]];
    fusion::CandidateTiming timing;
    timing.method = "emulated";
    timing.fused_us = fused.estimated_us;
    timing.composition = fused.composition;
    timing.bound = fused.bound;
    bool complete = true;
    for (ir::NodeId id : pattern.nodes) {
      if (!cost_model::launches_work(graph.node(id))) continue;
      NodeCost cost = node_cost(graph, id, probes);
      if (cost.kind == NodeCost::Kind::kLibrary) {
        timing.unfused_us += cost.library_us;
      } else if (auto part = profiled_.find(cost.text); cost.kind == NodeCost::Kind::kProbe &&
                                                        part != profiled_.end() &&
                                                        part->second.estimated_us >= 0) {
        timing.unfused_us += part->second.estimated_us;
      } else {
        complete = false;
      }
    }
    if (!complete) continue;
    timings[k] = timing;
    if (options_.profile.verbose) {
      std::fprintf(stderr,
                   "stitchopt: timed candidate %zu (%zu nodes from %s, %s): fused %.2f us "
                   "(%s-bound), unfused %.2f us\n",
                   which[k], pattern.nodes.size(),
                   support::printable(graph.node(pattern.nodes.front()).name).c_str(),
                   timing.composition.c_str(), timing.fused_us, timing.bound.c_str(),
                   timing.unfused_us);
    }
  }
  return timings;
}

Status EmulatedTimer::run_probes(const ir::Graph& graph, std::vector<Probe>& probes) {
  std::vector<std::vector<ir::NodeId>> copied;
  ir::Model model = probe_model(graph, positions_, probes, copied);
  fusion::PlannerResult plan;
  for (size_t p = 0; p < probes.size(); ++p) {
    if (probes[p].fused) {
      fusion::PlannedGroup group;
      group.nodes = copied[p];
      std::sort(group.nodes.begin(), group.nodes.end());
      group.category = fusion::group_category(model.graph, group.nodes);
      probes[p].step_name = "stitch_k" + std::to_string(plan.groups.size()) + "_" +
                            std::to_string(plan.groups.size());
      plan.groups.push_back(std::move(group));
    } else {
      for (ir::NodeId id : copied[p]) {
        plan.unfused.push_back(
            fusion::UnfusedNode{id, fusion::UnfusedKind::kKernel, "a probe of one node"});
      }
    }
  }
  STITCH_ASSIGN_OR_RETURN(EmittedPlan emitted,
                          emit_plan(model, std::move(plan), options_.profile.device,
                                    /*codegen=*/true, {}, nullptr, options_.schedule));
  // One directory per round: dlopen keeps a loaded library by path, so a later round
  // must not reuse an earlier round's library path.
  const fs::path dir = fs::path(options_.work_dir) / std::to_string(rounds_++);
  std::error_code error;
  fs::remove_all(dir, error);
  fs::create_directories(dir / "kernels", error);
  if (error) return Status::internal("cannot create " + dir.string() + ": " + error.message());
  STITCH_RETURN_IF_ERROR(emit::write_kernel_directory(emitted.kernels, dir / "kernels"));
  const fs::path model_file = dir / "model.fused.onnx";
  STITCH_RETURN_IF_ERROR(emit::write_onnx(emitted.rewritten, model_file.string()));
  STITCH_ASSIGN_OR_RETURN(std::string bytes, read_bytes(model_file));
  STITCH_RETURN_IF_ERROR(emit::write_kernels_json(
      emit::kernels_artifact(emitted.kernels, emitted.predictions, support::sha256_hex(bytes)),
      dir / "kernels"));
  STITCH_ASSIGN_OR_RETURN(runtime::Program program, runtime::load_program(dir.string()));
  STITCH_ASSIGN_OR_RETURN(profiling::ProgramProfile profile,
                          profiling::profile_program(program, options_.profile));
  if (profile.partial && !warned_partial_) {
    warned_partial_ = true;
    std::fprintf(stderr,
                 "stitchopt: warning: --score emulated: the candidates' timings are partial, "
                 "lower bounds: instructions %s\n",
                 profile.instructions_method.c_str());
  }
  std::map<std::string, const profiling::StepProfile*> by_name;
  for (const profiling::StepProfile& step : profile.steps) by_name[step.node] = &step;
  for (Probe& probe : probes) {
    auto found = by_name.find(probe.step_name);
    if (found == by_name.end() || found->second->kind != "kernel") continue;
    probe.estimated_us = found->second->estimate.total_us;
    probe.composition = found->second->composition;
    probe.bound = std::string(cost_model::bound_name(found->second->estimate.bound));
  }
  return Status::ok();
}

}  // namespace

std::unique_ptr<fusion::CandidateTimer> make_emulated_timer(EmulatedTimerOptions options) {
  return std::make_unique<EmulatedTimer>(std::move(options));
}

}  // namespace stitch::driver
