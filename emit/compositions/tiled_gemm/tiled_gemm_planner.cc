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

// The bytes of the A tile ([tile_m, k], or [tile_m, padded_k] in rows of a_stride on
// tensor cores) and of the B tile ([k, tile_n], or [padded_k] rows of b_stride).
// `k_step`: 0 on CUDA cores, else the tensor-core instruction's k.
int64_t tile_a_bytes(int64_t k, int64_t tile_m, int64_t tile_n, int64_t k_step) {
  return k_step > 0 ? tile_m * tensor_core_tiles(k, tile_n, k_step).a_stride * 4 : tile_m * k * 4;
}
int64_t tile_b_bytes(int64_t k, int64_t tile_n, int64_t k_step) {
  if (k_step == 0) return k * tile_n * 4;
  const TensorCoreTiles tiles = tensor_core_tiles(k, tile_n, k_step);
  return tiles.padded_k * tiles.b_stride * 4;
}

int64_t k_step_of(ir::Precision precision) {
  return precision == ir::Precision::kFloat32                                            ? 0
         : precision == ir::Precision::kFloat16 || precision == ir::Precision::kBFloat16 ? 16
                                                                                         : 8;
}

struct Tiles {
  int64_t m = 0, n = 0, count = 0;  // tile dims, tiles over the batch
};

// Tiles of at most 64 x 64 that fit the block's shared memory (halving the larger
// side), then M cut finer until the tiles fill the SMs (A rows are never recomputed
// across M tiles). Tensor cores take 16 x 8 pieces: tiles of whole pieces (rows and
// columns past m and n are zeros). nullopt when even the smallest tiles do not fit.
std::optional<Tiles> choose_tiles(const ir::GemmShape& shape,
                                  const cost_model::DeviceProfile& profile, int64_t k_step) {
  const bool tensor_cores = k_step > 0;
  const int64_t m = shape.m, n = shape.n, k = shape.k;
  const int64_t min_m = tensor_cores ? 16 : 8, min_n = 8;
  const auto round_up = [](int64_t x, int64_t to) { return (x + to - 1) / to * to; };
  const auto halve = [&](int64_t x, int64_t piece) {
    return tensor_cores ? round_up(x / 2, piece) : (x + 1) / 2;
  };
  Tiles tiles;
  tiles.n = std::min<int64_t>(tensor_cores ? round_up(n, 8) : n, 64);
  tiles.m = std::min<int64_t>(tensor_cores ? round_up(m, 16) : m, 64);
  auto bytes = [&](int64_t tm, int64_t tn) {
    return align_to(tile_a_bytes(k, tm, tn, k_step), kSharedAlignment) +
           align_to(tile_b_bytes(k, tn, k_step), kSharedAlignment);
  };
  const int64_t limit = profile.shared_memory_per_block;
  while (bytes(tiles.m, tiles.n) > limit && (tiles.m > min_m || tiles.n > min_n)) {
    if (tiles.m >= tiles.n && tiles.m > min_m) {
      tiles.m = halve(tiles.m, 16);
    } else {
      tiles.n = halve(tiles.n, 8);
    }
  }
  if (bytes(tiles.m, tiles.n) > limit) return std::nullopt;
  auto count = [&](int64_t tm) {
    return shape.batch * ((m + tm - 1) / tm) * ((n + tiles.n - 1) / tiles.n);
  };
  while (count(tiles.m) < profile.sm_count && tiles.m > (tensor_cores ? 16 : 4)) {
    tiles.m = halve(tiles.m, 16);
  }
  tiles.count = count(tiles.m);
  return tiles;
}

// Block composition of one fine-grained (batched) MatMul (see schedule.h). Applies
// when the group's only materialized values are the MatMul and reductions read only
// by it as an operand, every value depending on the MatMul is read at its reader's
// own flat index (a same-shape elementwise epilogue, views), every group output
// depends on the MatMul, and A/B tiles fit the per-block shared memory. Returns false
// (schedule untouched) otherwise.
bool plan_tiled_gemm(const ir::Graph& graph, const std::vector<ir::NodeId>& ordered,
                     const std::set<ir::ValueId>& outputs, const cost_model::DeviceProfile& profile,
                     ir::Precision precision, GroupSchedule* schedule, std::string* why_not) {
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
  const int64_t k = shape->k;
  // Zero-size: nothing to tile (k == 0 makes C zeros); the global composition writes it.
  if (elements_of(graph, c) == 0 || k == 0) {
    *why_not = label + " has no element to tile (or k = 0)";
    return false;
  }
  const int64_t k_step = k_step_of(precision);
  const std::optional<Tiles> tiles = choose_tiles(*shape, profile, k_step);
  if (!tiles) {
    *why_not = label + ": its tiles need more shared memory than a block has";
    return false;
  }
  const int64_t tile_m = tiles->m, tile_n = tiles->n;
  const int64_t limit = profile.shared_memory_per_block;

  // Shared-memory plan: the A and B tiles are live together (no reuse).
  const int position =
      static_cast<int>(std::find(ordered.begin(), ordered.end(), gemm) - ordered.begin());
  std::vector<SharedMemoryRequest> requests = {
      {graph.value(matmul.inputs[0]).name + " tile", position, position,
       tile_a_bytes(k, tile_m, tile_n, k_step)},
      {graph.value(matmul.inputs[1]).name + " tile", position, position,
       tile_b_bytes(k, tile_n, k_step)}};
  SharedMemoryPlan plan = plan_shared_memory(
      requests, [](size_t, size_t) { return false; }, limit);
  if (!plan.fallback.empty()) {
    *why_not = label + ": its tiles need more shared memory than a block has";
    return false;
  }

  TiledGemmPlan tiled{
      gemm, *shape, tile_m, tile_n, plan.allocations[0].offset, plan.allocations[1].offset};
  if (k_step > 0) {
    const TensorCoreTiles layout = tensor_core_tiles(k, tile_n, k_step);
    tiled.precision = precision;
    tiled.padded_k = layout.padded_k;
    tiled.a_stride = layout.a_stride;
    tiled.b_stride = layout.b_stride;
  }
  schedule->plan = tiled;
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
  schedule->grid = std::max<int64_t>(1, std::min(tiles->count, blocks_per_wave));
  return true;
}

}  // namespace

// a_stride = padded_k + 4 (4 mod 8 floats: rows group 0..7 of a fragment start 4 apart
// in different bank quads, so the 32 lanes' (group, quad) loads hit 32 banks); b_stride
// is tile_n, or tile_n + 8 when that is a multiple of 16 (8 mod 16: the fragment's rows
// quad 0..3 start 8 or 24 banks apart).
TensorCoreTiles tensor_core_tiles(int64_t k, int64_t tile_n, int64_t k_step) {
  const int64_t padded_k = (k + k_step - 1) / k_step * k_step;
  return {padded_k, padded_k + 4, tile_n % 16 == 8 ? tile_n : tile_n + 8};
}

ir::Precision tiled_gemm_precision(ir::DType dtype, ir::Precision precision) {
  if (dtype == ir::DType::kFloat32 && ir::uses_tensor_cores(precision)) return precision;
  if (ir::reduces_storage(precision)) {
    if (dtype == ir::DType::kFloat16) return ir::Precision::kFloat16;
    if (dtype == ir::DType::kBFloat16) return ir::Precision::kBFloat16;
  }
  return ir::Precision::kFloat32;
}

Result<RuleOutcome> try_tiled_gemm(PlanningContext& context, GroupSchedule* schedule) {
  const GroupFacts& group = context.group;
  const ir::Graph& graph = group.graph;
  std::string not_tiled;
  const ir::NodeId gemm = only_matmul(graph, group.ordered, &not_tiled);
  const ir::Precision precision =
      gemm == ir::kNoId ? ir::Precision::kFloat32
                        : tiled_gemm_precision(graph.value(graph.node(gemm).outputs[0]).type.dtype,
                                               context.options.precision);
  not_tiled.clear();
  if (!plan_tiled_gemm(graph, group.ordered, group.outputs, context.profile, precision, schedule,
                       &not_tiled)) {
    return RuleOutcome(Refusal{"a tiled MatMul", not_tiled});
  }
  const TiledGemmPlan& tiled = *schedule->as<TiledGemmPlan>();
  schedule->why = "one fine-grained MatMul " + node_label(graph.node(tiled.gemm)) +
                  " whose readers read it at their own index: A and B tiles in shared memory";
  if (tiled.tensor_cores()) {
    schedule->why += std::string(", ") + std::string(ir::precision_name(tiled.precision)) +
                     " products on tensor cores (mma.sync " +
                     (tiled.half_precision() ? "m16n8k16)" : "m16n8k8)");
  }
  return RuleOutcome();
}

}  // namespace stitch::emit
