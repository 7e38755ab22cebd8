// The attention composition's planner (emit/schedule.h, 1b.).
#include "emit/compositions/attention/attention_planner.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "emit/compositions/group_facts.h"
#include "emit/op_lowering.h"
#include "emit/shared_memory_plan.h"
#include "fusion/fusion_policy.h"
#include "ir/core/gemm_shape.h"
#include "ir/core/op_registry.h"

namespace stitch::emit {
namespace {

// The group's one attention core held whole, else nullopt (none, or two: each is its
// own kernel).
std::optional<ir::AttentionCore> whole_core(const ir::Graph& graph,
                                            const std::vector<ir::NodeId>& ordered) {
  const std::set<ir::NodeId> inside(ordered.begin(), ordered.end());
  std::optional<ir::AttentionCore> found;
  for (ir::NodeId id : ordered) {
    if (gemm_form(graph.node(id)) != GemmForm::kMatMul) continue;
    std::optional<ir::AttentionCore> core = fusion::match_fused_attention(graph, id);
    if (!core) continue;
    const std::vector<ir::NodeId> nodes = core->nodes();
    if (!std::all_of(nodes.begin(), nodes.end(),
                     [&](ir::NodeId node) { return inside.count(node) > 0; })) {
      continue;
    }
    if (found) return std::nullopt;
    found = std::move(core);
  }
  return found;
}

// Whether the values materialized outside the core (a GEMM, a value several prologue
// nodes read) can be inlined into the tile loads, recomputed per read: no reduction,
// no group output, and fine-grained GEMMs only (their recomputation is what
// kernel_shape charges); `recomputed` gets those GEMMs' values.
bool prologue_inlines(const ir::Graph& graph, const ir::AttentionCore& core,
                      const std::set<ir::ValueId>& outputs, const GroupSchedule& schedule,
                      std::set<ir::ValueId>* recomputed) {
  const std::set<ir::ValueId> core_materialized = {core.scores,
                                                   core.logits,
                                                   graph.node(core.max).outputs[0],
                                                   graph.node(core.exp).outputs[0],
                                                   graph.node(core.sum).outputs[0],
                                                   core.output};
  for (const auto& [id, value] : schedule.values) {
    if (!value.materialized || core_materialized.count(id)) continue;
    const ir::Node& producer = graph.node(graph.value(id).producer);
    if (outputs.count(id) || ir::op_kind(producer) == ir::OpKind::kReduction) return false;
    if (ir::op_kind(producer) != ir::OpKind::kGemm) continue;
    const std::optional<ir::GemmShape> shape = ir::gemm_shape(graph, producer);
    if (!shape || shape->m * shape->n * shape->k > cost_model::kMaxFusedGemmMultiplyAdds)
      return false;
    recomputed->insert(id);
  }
  return true;
}

// The products of a core's two GEMMs on tensor cores: a float16/bfloat16 core's own
// type whatever --precision (the half variant predates it), a float32 core's TF32 or
// 3xTF32 under tf32/fp32x3; kFloat32 (CUDA cores) otherwise.
ir::Precision attention_products(ir::DType dtype, ir::Precision precision) {
  if (dtype == ir::DType::kFloat16) return ir::Precision::kFloat16;
  if (dtype == ir::DType::kBFloat16) return ir::Precision::kBFloat16;
  if (dtype == ir::DType::kFloat32 && ir::uses_tensor_cores(precision)) return precision;
  return ir::Precision::kFloat32;
}

// 1b. The attention composition (see schedule.h). Applies when the group holds one
// attention core whole, every other materialized value is none (the prologue and
// epilogue are index functions), every group output is the core's output or read
// from it at the same flat index, and the tiles fit the per-block shared memory.
// Returns false (schedule untouched) otherwise.
bool plan_attention(const ir::Graph& graph, const std::vector<ir::NodeId>& ordered,
                    const std::set<ir::ValueId>& outputs, const cost_model::DeviceProfile& profile,
                    ir::Precision precision, GroupSchedule* schedule) {
  const std::optional<ir::AttentionCore> found = whole_core(graph, ordered);
  if (!found) return false;
  const ir::AttentionCore& core = *found;
  std::set<ir::ValueId> recomputed;
  if (!prologue_inlines(graph, core, outputs, *schedule, &recomputed)) return false;
  std::map<ir::ValueId, ir::NodeId> moved_outputs;
  if (!outputs_at_same_index(graph, ordered, outputs, core.output, &moved_outputs)) return false;
  // The tensor-core variant when the products are the tensor cores' (a float16 or
  // bfloat16 core, or a float32 one under --precision tf32/fp32x3) and the head dims
  // fit the fragments (d a multiple of the mma's k step, dv of 8, dv <= 128: its
  // accumulators are dv / 2 registers per lane): a warp per 16 query rows, up to 4
  // warps, tiles in the core's type with padded rows (AttentionPlan::row_pad).
  const ir::Precision products = attention_products(core.dtype, precision);
  AttentionPlan attention;
  attention.products = products;
  const int64_t elem = core.dtype == ir::DType::kFloat32 ? 4 : 2;
  const int64_t pad = attention.row_pad();
  const int64_t tc_warps = std::min<int64_t>(kAttentionWarps, (core.lq + 15) / 16);
  const int64_t tc_q_bytes = align_to(16 * tc_warps * (core.d + pad) * elem, kSharedAlignment);
  const int64_t tc_k_bytes = align_to(kAttentionTileKeys * (core.d + pad) * elem, kSharedAlignment);
  const int64_t tc_v_bytes =
      align_to(kAttentionTileKeys * (core.dv + pad) * elem, kSharedAlignment);
  const bool tensor_cores =
      products != ir::Precision::kFloat32 && core.d % attention.k_step() == 0 && core.dv % 8 == 0 &&
      core.dv <= 128 && tc_q_bytes + tc_k_bytes + tc_v_bytes <= profile.shared_memory_per_block;
  if (!tensor_cores) attention.products = ir::Precision::kFloat32;
  // CUDA cores: rows per warp R, the most (up to 8) that still give every SM a block,
  // no more than the query rows need; float tiles (K rows padded to d + 1).
  const int64_t sm_count = std::max(1, profile.sm_count);
  auto tiles = [&](int64_t rows_per_warp) {
    const int64_t tile_q = rows_per_warp * kAttentionWarps;
    return core.batch * ((core.lq + tile_q - 1) / tile_q);
  };
  auto bytes = [&](int64_t rows_per_warp) {
    return align_to(rows_per_warp * kAttentionWarps * core.d * 4, kSharedAlignment) +
           align_to(kAttentionTileKeys * (core.d + 1) * 4, kSharedAlignment) +
           align_to(kAttentionTileKeys * core.dv * 4, kSharedAlignment);
  };
  int rows_per_warp = 1;
  while (!tensor_cores && rows_per_warp < 8 && tiles(rows_per_warp * 2) >= sm_count &&
         (rows_per_warp * 2 - 1) * kAttentionWarps < core.lq &&
         bytes(rows_per_warp * 2) <= profile.shared_memory_per_block) {
    rows_per_warp *= 2;
  }
  if (!tensor_cores && bytes(rows_per_warp) > profile.shared_memory_per_block) return false;

  attention.core = core;
  attention.tensor_cores = tensor_cores;
  attention.moved_outputs = std::move(moved_outputs);
  if (tensor_cores) {
    attention.warps = static_cast<int>(tc_warps);
    attention.rows_per_warp = 16;
    attention.k_offset = tc_q_bytes;
    attention.v_offset = tc_q_bytes + tc_k_bytes;
    schedule->shared_bytes = tc_q_bytes + tc_k_bytes + tc_v_bytes;
  } else {
    attention.warps = kAttentionWarps;
    attention.rows_per_warp = rows_per_warp;
    attention.k_offset = align_to(attention.tile_q() * core.d * 4, kSharedAlignment);
    attention.v_offset =
        attention.k_offset + align_to(kAttentionTileKeys * (core.d + 1) * 4, kSharedAlignment);
    schedule->shared_bytes = bytes(rows_per_warp);
  }
  schedule->shared_bytes_requested = schedule->shared_bytes;
  // The scores, the row max and sum and the output live in registers; the softmax's
  // other values are never formed (x is the score chain inlined at each score).
  schedule->materialized.clear();
  for (ir::NodeId id : ordered) {
    for (ir::ValueId output : graph.node(id).outputs) {
      if (output == ir::kNoId) continue;
      ValueSchedule& value = schedule->values[output];
      const bool kept =
          output == core.scores || output == core.output || id == core.max || id == core.sum;
      value.materialized = kept;
      value.storage = Storage::kRegister;
      if (kept) schedule->materialized.push_back(output);
    }
  }
  schedule->block = attention.warps * 32;
  const int64_t tile_q = attention.tile_q();
  const int64_t q_tiles = (core.lq + tile_q - 1) / tile_q;
  int64_t blocks_per_wave_now = static_cast<int64_t>(profile.sm_count) *
                                std::max(1, profile.max_threads_per_sm / schedule->block);
  schedule->grid = std::max<int64_t>(1, std::min(core.batch * q_tiles, blocks_per_wave_now));
  attention.recompute = recomputed.empty() ? 1 : q_tiles;
  schedule->cooperative = false;
  schedule->workspace_bytes = 0;
  schedule->plan = std::move(attention);
  return true;
}

}  // namespace

Result<RuleOutcome> try_attention(PlanningContext& context, GroupSchedule* schedule) {
  const GroupFacts& group = context.group;
  const ir::Graph& graph = group.graph;
  if (!plan_attention(graph, group.ordered, group.outputs, context.profile,
                      context.options.precision, schedule)) {
    return RuleOutcome(Refusal{"attention", ""});
  }
  const ir::AttentionCore& core = schedule->as<AttentionPlan>()->core;
  schedule->why = "it holds the attention core " + node_label(graph.node(core.scores_gemm)) +
                  " .. " + node_label(graph.node(core.output_gemm)) +
                  " whole: its scores never leave the chip";
  const AttentionPlan& attention = *schedule->as<AttentionPlan>();
  if (attention.tensor_cores) {
    schedule->why += std::string(", ") + std::string(ir::precision_name(attention.products)) +
                     " products on tensor cores";
  }
  return RuleOutcome();
}

}  // namespace stitch::emit
