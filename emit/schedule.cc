// Schedules of fused groups (see schedule.h).
#include "emit/schedule.h"

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "emit/compositions/composition_rule.h"
#include "emit/compositions/group_facts.h"
#include "ir/core/op_registry.h"
#include "ir/core/reduction_axes.h"

namespace stitch::emit {
namespace {

Status check_static(const ir::Graph& graph, const ir::Node& node) {
  for (const std::vector<ir::ValueId>* list : {&node.inputs, &node.outputs}) {
    for (ir::ValueId id : *list) {
      if (id == ir::kNoId) continue;
      const ir::TensorType& type = graph.value(id).type;
      if (!type.is_static()) {
        return Status::invalid_input("node " + node.display_name() + ": value \"" +
                                     graph.value(id).name + "\" has type " + ir::to_string(type) +
                                     "; the CUDA emitter needs static shapes (pass --input-shape)");
      }
    }
  }
  return Status::ok();
}

// 1. Materialization: reductions (not no-ops) and GEMMs always; a non-View value read
// by two or more nodes of the group, one of them not at its own index; a stencil's
// operand that inlines another stencil.
Status materialize(GroupFacts& group, GroupSchedule* schedule) {
  const ir::Graph& graph = group.graph;
  for (ir::NodeId id : group.ordered) {
    const ir::Node& node = graph.node(id);
    if (is_gemm(node)) group.has_gemm = true;
    if (ir::op_kind(node) == ir::OpKind::kReduction) group.reductions.push_back(id);
    for (ir::ValueId output : node.outputs) {
      if (output == ir::kNoId) continue;
      ValueSchedule value;
      value.value = output;
      bool noop = false;
      bool heavy = is_gemm(node);
      if (ir::op_kind(node) == ir::OpKind::kReduction) {
        STITCH_ASSIGN_OR_RETURN(std::vector<int64_t> axes, ir::reduction_axes(graph, node, &noop));
        heavy = !noop;
      }
      int reads = 0;
      bool one_to_many = false;
      for (const ir::Use& use : graph.value(output).users) {
        if (!group.inside.count(use.node)) continue;
        ++reads;
        if (!reads_at_same_index(graph, graph.node(use.node), output)) one_to_many = true;
      }
      bool view = ir::op_kind(node) == ir::OpKind::kView;
      value.materialized = heavy || (!view && reads >= 2 && one_to_many);
      schedule->values[output] = value;
    }
  }
  // A stencil reads its operand at every tap of its window: an operand that inlines
  // another stencil would walk that window again per tap (a 3x3 after a 3x3: 81
  // reads per output), so it is computed once, a stage before.
  std::set<ir::ValueId> inlines_stencil;
  for (ir::NodeId id : group.ordered) {
    const ir::Node& node = graph.node(id);
    const bool stencil = ir::op_kind(node) == ir::OpKind::kStencil;
    bool holds = stencil;
    for (ir::ValueId input : node.inputs) {
      auto it = input == ir::kNoId ? schedule->values.end() : schedule->values.find(input);
      if (it == schedule->values.end() || it->second.materialized || !inlines_stencil.count(input))
        continue;
      if (stencil) {
        it->second.materialized = true;
      } else {
        holds = true;
      }
    }
    if (!holds) continue;
    for (ir::ValueId output : node.outputs) {
      if (output != ir::kNoId) inlines_stencil.insert(output);
    }
  }
  return Status::ok();
}

}  // namespace

std::vector<int64_t> transpose_perm(const ir::Node& node, size_t rank) {
  std::vector<int64_t> perm = node.ints_attribute("perm", {});
  if (perm.empty()) {
    for (size_t d = rank; d-- > 0;) perm.push_back(static_cast<int64_t>(d));
  }
  return perm;
}

const std::vector<int64_t>& dims_of(const ir::Graph& graph, ir::ValueId value) {
  return graph.value(value).type.dims;
}

int64_t elements_of(const ir::Graph& graph, ir::ValueId value) {
  return graph.value(value).type.num_elements();
}

bool staged_stencil_is_1d(const ir::Graph& graph, const StencilTile& tile) {
  return dims_of(graph, graph.node(tile.stencil).outputs[0]).size() == 3;
}

const StencilTile* staged_tile(const GroupSchedule& schedule) {
  return visit_composition(schedule.plan,
                           [](auto c, const auto& plan) { return c.staged_tile(plan); });
}

const VectorAccess* vector_access(const GroupSchedule& schedule) {
  return visit_composition(schedule.plan,
                           [](auto c, const auto& plan) { return c.vector_access(plan); });
}

Result<GroupSchedule> build_schedule(const ir::Graph& graph, const GroupBoundary& boundary,
                                     const cost_model::DeviceProfile& profile,
                                     const ScheduleOptions& options) {
  GroupSchedule schedule;
  schedule.boundary = boundary;
  schedule.products = options.precision;
  GroupFacts group(graph, schedule.boundary);
  for (ir::NodeId id : group.ordered) {
    STITCH_RETURN_IF_ERROR(check_static(graph, graph.node(id)));
  }
  STITCH_RETURN_IF_ERROR(materialize(group, &schedule));
  PlanningContext context{group, profile, options, {}};
  for (CompositionRule rule : composition_rules()) {
    STITCH_ASSIGN_OR_RETURN(RuleOutcome outcome, rule(context, &schedule));
    if (!outcome) return schedule;
    context.refusals.push_back(std::move(*outcome));
  }
  return Status::internal("no composition rule planned the group (the staged rule always does)");
}

KernelShapeOracle kernel_shape_oracle(const cost_model::DeviceProfile& profile,
                                      const ScheduleOptions& options) {
  struct Cache {
    const ir::Graph* graph = nullptr;
    std::vector<int32_t> positions;
  };
  auto cache = std::make_shared<Cache>();
  return [profile, options, cache](
             const ir::Graph& graph,
             const std::vector<ir::NodeId>& nodes) -> std::optional<cost_model::KernelShape> {
    if (cache->graph != &graph) {
      Result<std::vector<int32_t>> positions = topological_positions(graph);
      if (!positions.is_ok()) return std::nullopt;
      cache->graph = &graph;
      cache->positions = std::move(positions).value();
    }
    Result<GroupSchedule> schedule =
        build_schedule(graph, group_boundary(graph, nodes, cache->positions), profile, options);
    if (!schedule.is_ok()) return std::nullopt;
    return kernel_shape(graph, *schedule);
  };
}

}  // namespace stitch::emit
