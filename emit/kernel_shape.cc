// emit::kernel_shape (schedule.h): the common charges and the dispatch to each
// composition's (emit/compositions/charges.h), and the element reads they share.
#include "emit/compositions/charges.h"

#include <algorithm>
#include <optional>
#include <set>
#include <variant>
#include <vector>

#include "ir/core/gemm_shape.h"
#include "ir/core/op_registry.h"

namespace stitch::emit {
namespace {

// Global reads one evaluation of `id`'s element costs in a kernel of `schedule`: the
// distinct values in memory it reads (materialized, or the group's inputs), through the
// values computed inline (a value read twice in one expression, x * x, is one load
// after nvcc's common subexpressions); a one-element initializer is a literal (none).
// At most kMaxElementReads.
void element_leaves(const ir::Graph& graph, const GroupSchedule& schedule,
                    const std::set<ir::NodeId>& inside, ir::ValueId id,
                    std::set<ir::ValueId>* leaves, std::set<ir::ValueId>* visited) {
  constexpr size_t kMaxElementReads = 64;
  if (id == ir::kNoId || leaves->size() >= kMaxElementReads || !visited->insert(id).second) return;
  const ir::Value& value = graph.value(id);
  if (value.is_initializer() && value.type.num_elements() == 1) return;
  const auto it = schedule.values.find(id);
  if (value.producer == ir::kNoId || !inside.count(value.producer) || it == schedule.values.end() ||
      it->second.materialized) {
    leaves->insert(id);
    return;
  }
  for (ir::ValueId input : graph.node(value.producer).inputs) {
    element_leaves(graph, schedule, inside, input, leaves, visited);
  }
}

}  // namespace

double element_reads(const ChargeContext& context, ir::ValueId id) {
  std::set<ir::ValueId> leaves, visited;
  element_leaves(context.graph, context.schedule, context.inside, id, &leaves, &visited);
  return static_cast<double>(leaves.size());
}

// The lanes that evaluate the elements of the inlined value `id`: all `lanes`, unless a
// reduction reads it (through values computed inline) in a thread or warp mapping of
// the thread, packing, global or tiled-MatMul compositions, whose threads (a thread
// or a warp of slices per output) then evaluate it: a pool averaged into the 32
// elements of a classifier's A tile is walked by 32 threads, not by the block.
double evaluating_lanes(const ChargeContext& context, ir::ValueId id) {
  const ir::Graph& graph = context.graph;
  const GroupSchedule& schedule = context.schedule;
  const std::set<ir::NodeId>& inside = context.inside;
  const double lanes = context.lanes;
  const bool follow = visit_composition(
      schedule.plan, [](auto c, const auto& plan) { return c.lanes_follow_reductions(plan); });
  if (!follow) return lanes;
  std::vector<ir::ValueId> frontier = {id};
  std::set<ir::ValueId> visited = {id};
  while (!frontier.empty()) {
    const ir::ValueId value = frontier.back();
    frontier.pop_back();
    for (const ir::Use& use : graph.value(value).users) {
      if (!inside.count(use.node)) continue;
      const ir::Node& reader = graph.node(use.node);
      if (ir::op_kind(reader) == ir::OpKind::kReduction) {
        const auto it = schedule.values.find(reader.outputs[0]);
        if (it == schedule.values.end() || it->second.mapping == ReductionMapping::kColumn) {
          continue;
        }
        const ValueSchedule& r = it->second;
        const double outputs = static_cast<double>(elements_of(graph, reader.outputs[0]));
        const double per_output =
            r.mapping == ReductionMapping::kWarp ? 32.0 * static_cast<double>(r.slices) : 1.0;
        return std::max(1.0, std::min(lanes, outputs * per_output));
      }
      for (ir::ValueId output : reader.outputs) {
        const auto it = output == ir::kNoId ? schedule.values.end() : schedule.values.find(output);
        if (it != schedule.values.end() && !it->second.materialized &&
            visited.insert(output).second) {
          frontier.push_back(output);
        }
      }
    }
  }
  return lanes;
}

// The default charges (every composition's but attention's): the tiled MatMul's from
// shared tiles, the others one output per thread (or warp).
void charge_gemms(const ChargeContext& context, cost_model::KernelShape* shape) {
  const ir::NodeId tiled = visit_composition(
      context.schedule.plan, [](auto c, const auto& plan) { return c.tiled_gemm(plan); });
  for (ir::NodeId id : context.schedule.boundary.ordered_nodes) {
    const std::optional<double> macs = gemm_macs(context.graph, id);
    if (!macs) continue;
    // A stage's tensor-core pieces (warp_mma) issue the tiled loop's mma per k step.
    const ir::Node& node = context.graph.node(id);
    const auto value = node.outputs.empty() ? context.schedule.values.end()
                                            : context.schedule.values.find(node.outputs[0]);
    const bool pieces = value != context.schedule.values.end() && value->second.warp_mma;
    (id == tiled || pieces ? shape->tiled_gemm_macs : shape->thread_gemm_macs) += *macs;
  }
}

std::optional<double> gemm_macs(const ir::Graph& graph, ir::NodeId id) {
  const ir::Node& node = graph.node(id);
  if (ir::op_kind(node) != ir::OpKind::kGemm) return std::nullopt;
  const std::optional<ir::GemmShape> gemm = ir::gemm_shape(graph, node);
  if (!gemm) return std::nullopt;
  return static_cast<double>(gemm->batch) * static_cast<double>(gemm->m) *
         static_cast<double>(gemm->n) * static_cast<double>(gemm->k);
}

// The common part (grid barriers, workspace), then each composition's charges: its
// GEMMs, its stencils' load chains, its stages' loops.
cost_model::KernelShape kernel_shape(const ir::Graph& graph, const GroupSchedule& schedule) {
  cost_model::KernelShape shape;
  shape.grid_barriers = schedule.cooperative ? std::max(schedule.levels - 1, 0) : 0;
  shape.grid_blocks = shape.grid_barriers > 0 ? schedule.grid : 0;
  shape.workspace_bytes = schedule.workspace_bytes;
  const ChargeContext context{
      graph, schedule,
      std::set<ir::NodeId>(schedule.boundary.ordered_nodes.begin(),
                           schedule.boundary.ordered_nodes.end()),
      static_cast<double>(schedule.grid) * static_cast<double>(schedule.block)};
  visit_composition(schedule.plan,
                    [&](auto c, const auto& plan) { c.charge(context, plan, &shape); });
  charge_stencils(context, &shape);
  return shape;
}

}  // namespace stitch::emit
