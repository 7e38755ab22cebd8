// The tiled MatMul composition's planner (emit/schedule.h, 2b.).
#include "emit/compositions/tiled_gemm/tiled_gemm_planner.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "emit/compositions/group_facts.h"
#include "emit/op_lowering.h"
#include "emit/shared_memory_plan.h"
#include "ir/core/gemm_shape.h"
#include "ir/core/op_registry.h"

namespace stitch::emit {
namespace {

// The group's one GEMM when it is a MatMul, else kNoId (with `why_not` said when it
// holds GEMMs).
ir::NodeId only_matmul(const ir::Graph& graph, const std::vector<ir::NodeId>& ordered,
                       std::string* why_not) {
  ir::NodeId gemm = ir::kNoId;
  for (ir::NodeId id : ordered) {
    if (!is_gemm(graph.node(id))) continue;
    if (gemm != ir::kNoId) {
      *why_not = "it holds two GEMMs (" + node_label(graph.node(gemm)) + ", " +
                 node_label(graph.node(id)) + ")";
      return ir::kNoId;
    }
    if (gemm_form(graph.node(id)) != GemmForm::kMatMul) {
      *why_not = node_label(graph.node(id)) + " is a Gemm, not a MatMul";
      return ir::kNoId;
    }
    gemm = id;
  }
  return gemm;
}

// Block composition of one fine-grained (batched) MatMul (see schedule.h). Applies
// when the group's only materialized values are the MatMul and reductions read only
// by it as an operand, every value depending on the MatMul is read at its reader's
// own flat index (a same-shape elementwise epilogue, views), every group output
// depends on the MatMul, and A/B tiles fit the per-block shared memory. Returns false
// (schedule untouched) otherwise.
bool plan_tiled_gemm(const ir::Graph& graph, const std::vector<ir::NodeId>& ordered,
                     const std::set<ir::ValueId>& outputs, const cost_model::DeviceProfile& profile,
                     GroupSchedule* schedule, std::string* why_not) {
  const ir::NodeId gemm = only_matmul(graph, ordered, why_not);
  if (gemm == ir::kNoId) return false;
  const std::string label = "MatMul " + node_label(graph.node(gemm));
  const ir::Node& matmul = graph.node(gemm);
  const ir::ValueId c = matmul.outputs[0];
  const std::vector<int64_t>& a_dims = dims_of(graph, matmul.inputs[0]);
  const std::vector<int64_t>& b_dims = dims_of(graph, matmul.inputs[1]);
  if (a_dims.size() < 2 || b_dims.size() < 2 || !ir::dtype_is_float(graph.value(c).type.dtype)) {
    *why_not = label + " multiplies a vector or integers";
    return false;
  }
  for (const auto& [id, value] : schedule->values) {
    if (!value.materialized || id == c) continue;
    const ir::Node& producer = graph.node(graph.value(id).producer);
    bool fed_to_gemm = ir::op_kind(producer) == ir::OpKind::kReduction && !outputs.count(id);
    for (const ir::Use& use : graph.value(id).users) fed_to_gemm = fed_to_gemm && use.node == gemm;
    if (!fed_to_gemm) {
      *why_not = label + " is not the only value to materialize (" + graph.value(id).name + ")";
      return false;
    }
  }
  if (!outputs_at_same_index(graph, ordered, outputs, c)) {
    *why_not = label +
               " is read at another index than its own (by a reduction, a broadcast or a "
               "transpose)";
    return false;
  }
  const std::optional<ir::GemmShape> shape = ir::gemm_shape(graph, matmul);
  if (!shape) {
    *why_not = label + " has no static m, n, k";
    return false;
  }
  const int64_t m = shape->m;
  const int64_t k = shape->k;
  const int64_t n = shape->n;
  // Zero-size: nothing to tile (k == 0 makes C zeros); the global composition writes it.
  if (elements_of(graph, c) == 0 || k == 0) {
    *why_not = label + " has no element to tile (or k = 0)";
    return false;
  }
  const int64_t batch = shape->batch;
  int64_t tile_n = std::min<int64_t>(n, 64);
  int64_t tile_m = std::min<int64_t>(m, 64);
  auto bytes = [&](int64_t tm, int64_t tn) {
    return align_to(tm * k * 4, kSharedAlignment) + align_to(k * tn * 4, kSharedAlignment);
  };
  const int64_t limit = profile.shared_memory_per_block;
  while (bytes(tile_m, tile_n) > limit && (tile_m > 8 || tile_n > 8)) {
    if (tile_m >= tile_n) {
      tile_m = (tile_m + 1) / 2;
    } else {
      tile_n = (tile_n + 1) / 2;
    }
  }
  if (bytes(tile_m, tile_n) > limit) {
    *why_not = label + ": its tiles need more shared memory than a block has";
    return false;
  }
  auto tiles = [&](int64_t tm) {
    return batch * ((m + tm - 1) / tm) * ((n + tile_n - 1) / tile_n);
  };
  // Fill the SMs by cutting M finer (A rows are never recomputed across M tiles).
  while (tiles(tile_m) < profile.sm_count && tile_m > 4) tile_m = (tile_m + 1) / 2;

  // Shared-memory plan: the A and B tiles are live together (no reuse).
  const int position =
      static_cast<int>(std::find(ordered.begin(), ordered.end(), gemm) - ordered.begin());
  std::vector<SharedMemoryRequest> requests = {
      {graph.value(matmul.inputs[0]).name + " tile", position, position, tile_m * k * 4},
      {graph.value(matmul.inputs[1]).name + " tile", position, position, k * tile_n * 4}};
  SharedMemoryPlan plan = plan_shared_memory(
      requests, [](size_t, size_t) { return false; }, limit);
  if (!plan.fallback.empty()) {
    *why_not = label + ": its tiles need more shared memory than a block has";
    return false;
  }

  schedule->plan = TiledGemmPlan{
      gemm, *shape, tile_m, tile_n, plan.allocations[0].offset, plan.allocations[1].offset};
  schedule->shared_bytes = plan.allocated_bytes;
  schedule->shared_bytes_requested = plan.requested_bytes;
  for (auto& [id, value] : schedule->values) {
    if (!value.materialized) continue;
    value.storage = id == c ? Storage::kRegister : Storage::kShared;
    if (id != c) schedule->materialized.push_back(id);
  }
  schedule->materialized.push_back(c);
  schedule->block = kGlobalBlock;
  int64_t blocks_per_wave = static_cast<int64_t>(profile.sm_count) *
                            std::max(1, profile.max_threads_per_sm / schedule->block);
  schedule->grid = std::max<int64_t>(1, std::min(tiles(tile_m), blocks_per_wave));
  return true;
}

}  // namespace

Result<RuleOutcome> try_tiled_gemm(PlanningContext& context, GroupSchedule* schedule) {
  const GroupFacts& group = context.group;
  const ir::Graph& graph = group.graph;
  std::string not_tiled;
  if (!plan_tiled_gemm(graph, group.ordered, group.outputs, context.profile, schedule,
                       &not_tiled)) {
    return RuleOutcome(Refusal{"a tiled MatMul", not_tiled});
  }
  schedule->why = "one fine-grained MatMul " +
                  node_label(graph.node(schedule->as<TiledGemmPlan>()->gemm)) +
                  " whose readers read it at their own index: A and B tiles in shared memory";
  return RuleOutcome();
}

}  // namespace stitch::emit
