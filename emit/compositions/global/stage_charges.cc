// The stages' loops (emit/compositions/charges.h), and the charges of the global,
// thread and packing compositions, whose stages they are.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <utility>

#include "emit/compositions/charges.h"
#include "emit/compositions/group_facts.h"
#include "ir/core/gemm_shape.h"
#include "ir/core/op_registry.h"

namespace stitch::emit {

// The dot products and reductions of the thread, packing and global compositions: in
// each stage a lane walks its share of the stage's loops (side by side over the grid),
// each term one read of every operand, an operand computed inline reading what its
// expression reads (a LayerNorm's normalized row read by the next GEMM: its input, the
// mean, the variance, the scale and the shift): k terms for a thread per GEMM output,
// k / 32 for a warp per output (lanes_over_k), k / 2 of A's and k / 4 of B's for a
// warp per tensor-core piece (warp_mma), the reduced elements for a thread per
// reduction output, their share for a warp's lane; at least one item's worth. The
// stages follow one another across the grid barriers, as the emulation's critical
// path sums them.
void charge_stage_loops(const ChargeContext& context, cost_model::KernelShape* shape) {
  const ir::Graph& graph = context.graph;
  const GroupSchedule& schedule = context.schedule;
  if (context.lanes <= 0) return;
  // 4c.: the stages of a last-block run stride over one block's threads.
  const GlobalPlan* plan = schedule.as<GlobalPlan>();
  auto lanes_of = [&](int level) {
    const bool on_last_block = plan != nullptr && plan->last_block_run() &&
                               level >= plan->last_block_first && level < plan->last_block_end;
    return on_last_block ? std::min<double>(context.lanes, schedule.block) : context.lanes;
  };
  std::map<int, std::pair<double, double>> stages;  // level -> (spread, one item)
  const StencilTile* tile = staged_tile(schedule);
  for (ir::NodeId id : schedule.boundary.ordered_nodes) {
    const ir::Node& node = graph.node(id);
    const ir::OpKind kind = ir::op_kind(node);
    if ((kind != ir::OpKind::kGemm && kind != ir::OpKind::kReduction) || node.outputs.empty() ||
        node.inputs.empty()) {
      continue;
    }
    if (tile != nullptr &&
        std::count(tile->plane_reductions.begin(), tile->plane_reductions.end(), node.outputs[0])) {
      continue;  // 4d.: summed from the registers of the stage that writes its input
    }
    const auto value = schedule.values.find(node.outputs[0]);
    if (value == schedule.values.end() || !value->second.materialized) continue;
    const ValueSchedule& v = value->second;
    double loads = 0;
    if (kind == ir::OpKind::kGemm) {
      const std::optional<ir::GemmShape> gemm = ir::gemm_shape(graph, node);
      if (!gemm || node.inputs.size() < 2) continue;
      const double a_reads = element_reads(context, node.inputs[0]);
      const double b_reads = element_reads(context, node.inputs[1]);
      if (v.warp_mma) {
        // Per k step a lane reads 4 elements of A and 2 of B (8 and 4 for the half
        // types' step of 16).
        const ir::DType type = graph.value(node.outputs[0]).type.dtype;
        const bool half = type == ir::DType::kFloat16 || type == ir::DType::kBFloat16;
        const double step = half ? 16.0 : 8.0;
        loads =
            std::ceil(static_cast<double>(gemm->k) / step) * (step / 2) * (a_reads + b_reads / 2);
      } else {
        const double terms = v.lanes_over_k ? std::ceil(static_cast<double>(gemm->k) / 32.0)
                                            : static_cast<double>(gemm->k);
        loads = terms * (a_reads + b_reads);
      }
    } else if (v.mapping == ReductionMapping::kThread || v.mapping == ReductionMapping::kWarp) {
      // (A thread-mapped reduction keeps v.reduced at 1: its elements per output.)
      const int64_t outputs = std::max<int64_t>(elements_of(graph, node.outputs[0]), 1);
      const double reduced =
          static_cast<double>(std::max<int64_t>(elements_of(graph, node.inputs[0]) / outputs, 1));
      const double terms = v.mapping == ReductionMapping::kThread
                               ? reduced
                               : std::ceil(reduced / 32.0 / static_cast<double>(v.slices));
      loads = terms * element_reads(context, node.inputs[0]);
    } else {
      continue;
    }
    const double threads = static_cast<double>(stage_threads(graph, node.outputs[0], v));
    auto& [spread, one_item] = stages[v.level];
    spread += threads * loads / lanes_of(v.level);
    one_item = std::max(one_item, loads);
  }
  for (const auto& [level, stage] : stages) {
    shape->gemm_load_chain += std::max(stage.first, stage.second);
  }
}

// A global composition: its GEMMs and its stages' loops, across grid barriers.
void Composition<GlobalPlan>::charge(const ChargeContext& context, const GlobalPlan& plan,
                                     Charges* shape) {
  shape->global = true;
  // 4c.: a run of stages on the last block leaves out the grid barriers before each of
  // them; its arrival count (every block's fence and atomic on one counter, no block
  // waiting for it) is left to the loads' latency, as the emulated profile finds it
  // (the sync term of EfficientNet's MBConv kernels: 3 barriers 4.2 us, 1 barrier and
  // the arrival 1.45).
  if (plan.last_block_run()) {
    shape->grid_barriers -= plan.last_block_end - plan.last_block_first;
  }
  charge_gemms(context, shape);
  charge_stage_loops(context, shape);
}

// The thread composition: its GEMMs, and the loops of its plain thread stage (a
// stage of warp or block reductions is charged by their own mapping; see ThreadPlan).
void Composition<ThreadPlan>::charge(const ChargeContext& context, const ThreadPlan& plan,
                                     Charges* shape) {
  charge_gemms(context, shape);
  if (plan.mapping == StageMapping::kThread) charge_stage_loops(context, shape);
}

// The packing composition: its parts' GEMMs and loops, side by side.
void Composition<PackingPlan>::charge(const ChargeContext& context, const PackingPlan& /*plan*/,
                                      Charges* shape) {
  charge_gemms(context, shape);
  charge_stage_loops(context, shape);
}

}  // namespace stitch::emit
