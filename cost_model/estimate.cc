// Kernel and plan estimates (cost_model.h, "Kernel and plan estimates").
#include <algorithm>
#include <optional>
#include <vector>

#include "cost_model/cost_model.h"
#include "cost_model/graph_facts.h"
#include "ir/core/gemm_shape.h"
#include "ir/core/window.h"

namespace stitch::cost_model {

using namespace detail;  // NOLINT(google-build-using-namespace): this library's own helpers

namespace {

// A set of nodes (a pattern or a group) with View nodes inside it transparent.
class NodeSet {
 public:
  NodeSet(const Graph& graph, std::vector<NodeId> nodes) : graph_(graph), nodes_(std::move(nodes)) {
    sort_and_check_nodes(graph, nodes_);
  }

  const std::vector<NodeId>& nodes() const { return nodes_; }
  bool contains(NodeId node) const {
    return node != kNoId && std::binary_search(nodes_.begin(), nodes_.end(), node);
  }

  // The tensor `value` aliases: through View nodes of the set to their data input.
  ValueId alias_root(ValueId value) const {
    while (true) {
      NodeId producer = graph_.value(value).producer;
      if (!contains(producer)) return value;
      const Node& node = graph_.node(producer);
      if (!is_view(node) || node.inputs.empty() || node.inputs[0] == kNoId) return value;
      value = node.inputs[0];
    }
  }

  // Produced by a launching node of the set (after alias resolution).
  bool produced_inside(ValueId root) const {
    NodeId producer = graph_.value(root).producer;
    return contains(producer) && launches_work(graph_.node(producer));
  }

  // Whether the tensor `root` is read outside the set or is a graph output,
  // following View nodes of the set.
  bool read_outside(ValueId root) const {
    std::vector<ValueId> stack = {root};
    while (!stack.empty()) {
      const Value& value = graph_.value(stack.back());
      stack.pop_back();
      if (value.is_graph_output) return true;
      for (const ir::Use& use : value.users) {
        if (!contains(use.node)) return true;
        const Node& reader = graph_.node(use.node);
        if (!is_view(reader) || use.slot != 0) continue;  // slot != 0: a compile-time shape
        for (ValueId output : reader.outputs) {
          if (output != kNoId) stack.push_back(output);
        }
      }
    }
    return false;
  }

  // Tensors from outside the set read by its launching nodes, sorted, distinct.
  std::vector<ValueId> external_inputs() const {
    std::vector<ValueId> inputs;
    for (NodeId id : nodes_) {
      const Node& node = graph_.node(id);
      if (!launches_work(node)) continue;
      for_each_read(node, [&](ValueId value) {
        ValueId root = alias_root(value);
        if (!produced_inside(root)) inputs.push_back(root);
      });
    }
    std::sort(inputs.begin(), inputs.end());
    inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
    return inputs;
  }

 private:
  const Graph& graph_;
  std::vector<NodeId> nodes_;
};

double node_flops(const Graph& graph, const Node& node) {
  if (!unknown_shape_reason(graph, node).empty()) return 0;
  switch (ir::op_kind(node)) {
    case OpKind::kElementwise:
      return static_cast<double>(max_output_elements(graph, node)) *
             (is_transcendental(node) ? kTranscendentalCost : 1.0);
    case OpKind::kReduction: {
      double input = static_cast<double>(value_elements(graph, node.inputs[0]));
      return is_primitive_reduction(node) ? input : input * kCompoundReductionFlops;
    }
    case OpKind::kGemm: {
      std::optional<ir::GemmShape> shape = ir::gemm_shape(graph, node);
      if (!shape) return 0;
      double flops = 2.0 * static_cast<double>(shape->m) * static_cast<double>(shape->n) *
                     static_cast<double>(shape->k) * static_cast<double>(shape->batch);
      if (node.op_type == "Gemm" && node.inputs.size() > 2 && node.inputs[2] != kNoId) {
        flops += static_cast<double>(shape->m) * static_cast<double>(shape->n);
      }
      return flops;
    }
    case OpKind::kStencil: {
      // A grouped Conv multiplies and adds per tap; a pool compares or adds.
      std::optional<ir::Stencil> stencil = ir::stencil_of(graph, node);
      if (!stencil) return 0;
      return (node.op_type == "Conv" ? 2.0 : 1.0) *
             static_cast<double>(max_output_elements(graph, node)) *
             static_cast<double>(stencil->taps);
    }
    case OpKind::kConv: {
      const ir::TensorType& weight = graph.value(node.inputs[1]).type;
      if (weight.dims.empty() || weight.dims[0] <= 0) return 0;
      double per_output =
          static_cast<double>(weight.num_elements()) / static_cast<double>(weight.dims[0]);
      return 2.0 * static_cast<double>(max_output_elements(graph, node)) * per_output;
    }
    default:
      return 0;
  }
}

double node_peak_flops(const Graph& graph, const Node& node, const DeviceProfile& profile) {
  for (ValueId output : node.outputs) {
    if (output == kNoId) continue;
    ir::DType dtype = graph.value(output).type.dtype;
    if (dtype == ir::DType::kFloat16 || dtype == ir::DType::kBFloat16) {
      return profile.fp16_flops_per_second;
    }
  }
  // --precision tf32: float32 GEMMs and dense convolutions on TF32 tensor cores.
  const OpKind kind = op_kind(node);
  if ((kind == OpKind::kGemm || kind == OpKind::kConv) &&
      profile.products == ir::Precision::kTf32 && profile.tf32_flops_per_second > 0) {
    return profile.tf32_flops_per_second;
  }
  return profile.fp32_flops_per_second;
}

}  // namespace

GroupCost estimate_group(const Graph& graph, const std::vector<NodeId>& nodes,
                         const DeviceProfile& profile, const KernelShape* shape) {
  NodeSet set(graph, nodes);
  GroupCost cost;
  bool any_launch = false;
  double compute_seconds = 0;
  int64_t bytes = 0;
  // A gather reads each of its elements from L2 however small the table it gathers
  // from (an embedding table stays in L2 and moves once from DRAM).
  double gathered_bytes = 0;
  for (NodeId id : set.nodes()) {
    const Node& node = graph.node(id);
    if (!launches_work(node)) continue;
    any_launch = true;
    if ((node.op_type == "Gather" || node.op_type == "GatherElements") && node.domain.empty() &&
        !node.outputs.empty() && node.outputs[0] != kNoId) {
      gathered_bytes += static_cast<double>(value_bytes(graph, node.outputs[0]));
    }
    double flops = node_flops(graph, node);
    cost.flops += flops;
    compute_seconds += flops / node_peak_flops(graph, node, profile);
    for (ValueId output : node.outputs) {
      if (output != kNoId && set.read_outside(output)) bytes += value_bytes(graph, output);
    }
  }
  for (ValueId root : set.external_inputs()) bytes += value_bytes(graph, root);
  cost.bytes = bytes;
  if (!any_launch) return cost;
  cost.time = analytic_kernel_time(bytes, gathered_bytes, compute_seconds * 1e6, shape, profile);
  return cost;
}

PlanEstimate estimate_plan(const Graph& graph, const std::vector<std::vector<NodeId>>& groups,
                           const DeviceProfile& profile) {
  PlanEstimate estimate;
  std::vector<char> grouped(static_cast<size_t>(graph.node_capacity()), 0);
  for (const std::vector<NodeId>& group : groups) {
    bool any_launch = false;
    for (NodeId id : group) {
      STITCH_CHECK(id >= 0 && id < graph.node_capacity() && grouped[static_cast<size_t>(id)] == 0)
          << "node " << id << " is in two plan groups or out of range";
      grouped[static_cast<size_t>(id)] = 1;
      any_launch = any_launch || launches_work(graph.node(id));
    }
    GroupCost cost = estimate_group(graph, group, profile);
    estimate.bytes_after += cost.bytes;
    estimate.time_after_us += cost.time.total_us;
    estimate.kernels_after += any_launch ? 1 : 0;
  }
  for (NodeId id : graph.node_ids()) {
    if (!launches_work(graph.node(id))) continue;
    GroupCost alone = estimate_group(graph, {id}, profile);
    estimate.bytes_before += alone.bytes;
    estimate.time_before_us += alone.time.total_us;
    ++estimate.kernels_before;
    if (grouped[static_cast<size_t>(id)] == 0) {
      estimate.bytes_after += alone.bytes;
      estimate.time_after_us += alone.time.total_us;
      ++estimate.kernels_after;
    }
  }
  return estimate;
}

}  // namespace stitch::cost_model
