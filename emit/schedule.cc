// Schedules of fused groups (see schedule.h).
#include "emit/schedule.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <set>

#include "emit/cuda_text.h"
#include "emit/op_lowering.h"
#include "emit/shared_memory_plan.h"
#include "ir/core/analysis.h"
#include "ir/core/gemm_shape.h"
#include "ir/core/op_registry.h"
#include "ir/core/window.h"

namespace stitch::emit {
namespace {

constexpr int kGlobalBlock = 256;
constexpr int kWarpsPerBlock = 8;             // warp composition: at most, when rows allow
constexpr int kElementsPerLane = 4;           // short rows: lanes per row so that each reads 4
constexpr int64_t kFewRowsLaneElements = 16;  // few rows: a block each past this per lane
constexpr int64_t kWarpRowLimit = 1024;       // longer rows get a block each
constexpr int64_t kWorkspaceAlignment = 256;
constexpr int64_t kMinSliceElements = 1024;  // split rows: at least 2 elements per thread

int64_t align_to(int64_t bytes, int64_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t result = 1;
  for (size_t d = begin; d < end; ++d) result *= dims[d];
  return result;
}

// Blocks of schedule.block threads resident at once on the device.
int64_t blocks_per_wave(const cost_model::DeviceProfile& profile, const GroupSchedule& schedule) {
  return static_cast<int64_t>(profile.sm_count) *
         std::max(1, profile.max_threads_per_sm / schedule.block);
}

// Blocks of schedule.block threads for a grid-stride loop over `threads` items: enough
// to cover them, at most one wave.
int64_t wave_grid(int64_t threads, const cost_model::DeviceProfile& profile,
                  const GroupSchedule& schedule) {
  return std::max<int64_t>(1, std::min((threads + schedule.block - 1) / schedule.block,
                                       blocks_per_wave(profile, schedule)));
}

bool is_gemm(const ir::Node& node) { return ir::op_kind(node) == ir::OpKind::kGemm; }

// A node as GroupSchedule::why names it: `name (OpType)`, without the quotes of
// display_name() (the .cu header escapes quotes).
std::string node_label(const ir::Node& node) {
  return (node.name.empty() ? std::string("<unnamed>") : node.name) + " (" + node.op_type + ")";
}

// Reads of `operand` by `reader` at the reader's own flat index: a View op, or an
// elementwise op whose operand has the output's shape (no broadcast).
bool reads_at_same_index(const ir::Graph& graph, const ir::Node& reader, ir::ValueId operand) {
  ir::OpKind kind = ir::op_kind(reader);
  if (kind == ir::OpKind::kView) return reader.inputs[0] == operand;
  if (kind != ir::OpKind::kElementwise || reader.outputs.empty()) return false;
  return dims_of(graph, reader.outputs[0]) == dims_of(graph, operand);
}

// The split position q with prod(dims[:q]) == rows, or -1.
int split_at_rows(const std::vector<int64_t>& dims, int64_t rows) {
  int64_t running = 1;
  if (rows == 1) return 0;
  for (size_t q = 0; q < dims.size(); ++q) {
    running *= dims[q];
    if (running == rows) return static_cast<int>(q + 1);
    if (running > rows) return -1;
  }
  return -1;
}

// Row-locality of a read of a row-varying `operand` by `reader` (see schedule.h).
bool read_is_row_local(const ir::Graph& graph, const ir::Node& reader, ir::ValueId operand,
                       int64_t rows) {
  ir::OpKind kind = ir::op_kind(reader);
  if (kind == ir::OpKind::kView) return true;
  if (kind == ir::OpKind::kReduction) return true;  // same rows checked by the caller
  if (kind != ir::OpKind::kElementwise && kind != ir::OpKind::kBroadcast) return false;
  if (reads_later_operands_as_scalars(reader) && reader.inputs[0] != operand) return false;
  const std::vector<int64_t>& out = dims_of(graph, reader.outputs[0]);
  const std::vector<int64_t>& in = dims_of(graph, operand);
  int q = split_at_rows(out, rows);
  if (q < 0 || in.size() > out.size()) return false;
  size_t pad = out.size() - in.size();
  for (size_t d = 0; d < static_cast<size_t>(q); ++d) {
    int64_t in_dim = d < pad ? 1 : in[d - pad];
    if (in_dim != out[d]) return false;
  }
  return true;
}

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

// Split rows need every row-sized value written by the group to span the whole row
// (row_elements == row_length), and every read of a row-varying value to be either a
// per-row scalar (a reduction result) or at the reader's own flat index, so a block
// only reads the slice it wrote; other row-local groups keep a block per row.
bool split_rows_allowed(const ir::Graph& graph, const std::vector<ir::NodeId>& ordered,
                        const std::set<ir::ValueId>& outputs, const GroupSchedule& schedule) {
  const RowPlan& row = std::get<RowPlan>(schedule.plan);
  for (ir::NodeId id : ordered) {
    const ir::Node& node = graph.node(id);
    bool reduction = ir::op_kind(node) == ir::OpKind::kReduction;
    if (reduction && elements_of(graph, node.inputs[0]) != row.rows * row.row_length) return false;
    for (ir::ValueId output : node.outputs) {
      if (output == ir::kNoId) continue;
      const ValueSchedule& value = schedule.values.at(output);
      bool written = value.materialized || outputs.count(output) > 0;
      if (written && !reduction && value.row_elements != row.row_length) return false;
    }
    for (ir::ValueId input : node.inputs) {
      if (input == ir::kNoId) continue;
      auto it = schedule.values.find(input);
      if (it == schedule.values.end() || !it->second.row_varying) continue;
      if (it->second.row_elements == 1 || reduction) continue;
      if (!reads_at_same_index(graph, node, input)) return false;
    }
  }
  return true;
}

// Phases and workspace of a split-rows schedule: a value is written in the phase in
// which all it reads is available; a reduction's partials are written in that phase
// and its combined result is available one phase (one grid barrier) later. The
// workspace holds the barrier counter, each reduction's [rows, blocks_per_row]
// partials and the materialized row-sized values (read across barriers, so global).
void plan_split_rows(const ir::Graph& graph, const std::vector<ir::NodeId>& ordered,
                     const std::set<ir::ValueId>& outputs, GroupSchedule* schedule) {
  const RowPlan& row = std::get<RowPlan>(schedule->plan);
  std::map<ir::ValueId, int> available;
  int phases = 1;
  for (ir::NodeId id : ordered) {
    const ir::Node& node = graph.node(id);
    int phase = 0;
    for (ir::ValueId input : node.inputs) {
      auto it = available.find(input);
      if (input != ir::kNoId && it != available.end()) phase = std::max(phase, it->second);
    }
    bool reduction = ir::op_kind(node) == ir::OpKind::kReduction;
    for (ir::ValueId output : node.outputs) {
      if (output == ir::kNoId) continue;
      ValueSchedule& value = schedule->values[output];
      value.level = phase;
      available[output] = reduction ? phase + 1 : phase;
      if (value.materialized || outputs.count(output)) {
        phases = std::max(phases, available[output] + 1);
      }
    }
  }
  schedule->levels = phases;
  schedule->barrier_offset = 0;
  int64_t workspace = kWorkspaceAlignment;
  for (ir::NodeId id : ordered) {
    const ir::Node& node = graph.node(id);
    bool reduction = ir::op_kind(node) == ir::OpKind::kReduction;
    for (ir::ValueId output : node.outputs) {
      if (output == ir::kNoId) continue;
      ValueSchedule& value = schedule->values[output];
      if (!value.materialized) continue;
      if (reduction) {
        value.storage = Storage::kRegister;
        value.partial_offset = workspace;
        workspace += align_to(row.rows * row.blocks_per_row * 4, kWorkspaceAlignment);
      } else if (outputs.count(output)) {
        value.storage = Storage::kOutput;
      } else {
        value.storage = Storage::kWorkspace;
        value.offset = workspace;
        workspace += align_to(graph.value(output).type.num_bytes(), kWorkspaceAlignment);
      }
    }
  }
  schedule->workspace_bytes = workspace;
  schedule->block = static_cast<int>(std::min<int64_t>(schedule->block, align_to(row.slice, 32)));
  schedule->grid = row.rows * row.blocks_per_row;
  schedule->cooperative = true;
  schedule->shared_bytes = kBlockScratchBytes;
  schedule->shared_bytes_requested = kBlockScratchBytes;
}

// Thread mapping of a materialized reduction in the thread, packing and global
// compositions (schedule.h, 5.). Float inputs and the sum/mean/max/min/prod family
// only; the rest keeps a thread per output.
Status plan_reduction_mapping(const ir::Graph& graph, const ir::Node& node,
                              const cost_model::DeviceProfile& profile, ValueSchedule* value) {
  bool noop = false;
  STITCH_ASSIGN_OR_RETURN(std::vector<int64_t> axes, reduction_axes(graph, node, &noop));
  const ir::DType in_type = graph.value(node.inputs[0]).type.dtype;
  const bool float_input = in_type == ir::DType::kFloat32 || in_type == ir::DType::kFloat16 ||
                           in_type == ir::DType::kBFloat16;
  if (noop || !float_input || reduces_per_thread_only(node)) return Status::ok();
  const std::vector<int64_t>& in = dims_of(graph, node.inputs[0]);
  int64_t reduced = 1;
  for (int64_t axis : axes) reduced *= in[static_cast<size_t>(axis)];
  int64_t inner = 1;
  for (size_t d = axes.empty() ? 0 : static_cast<size_t>(axes.back()) + 1; d < in.size(); ++d)
    inner *= in[d];
  const int64_t outputs = elements_of(graph, node.outputs[0]);
  // Zero-size: no output, or an empty set whose result is the identity; neither reads
  // an element, so there is nothing to spread over lanes.
  if (outputs == 0 || reduced == 0) return Status::ok();
  auto ceil_div = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  int64_t items = 0;      // work items without slices
  int64_t units = 0;      // co-resident warps or blocks
  int64_t min_slice = 0;  // reduced elements (rows) a slice keeps at least
  if (inner == 1) {
    if (reduced <= 32) return Status::ok();
    value->mapping = ReductionMapping::kWarp;
    items = outputs;
    units = static_cast<int64_t>(profile.sm_count) * profile.max_threads_per_sm / 32;
    min_slice = kMinSliceElements;
  } else {
    if (reduced <= 1) return Status::ok();
    value->mapping = ReductionMapping::kColumn;
    int columns = 1;
    while (columns < 32 && columns < inner) columns *= 2;
    value->columns = columns;
    value->inner = inner;
    items = outputs / inner * ceil_div(inner, columns);
    units = static_cast<int64_t>(profile.sm_count) *
            std::max(1, profile.max_threads_per_sm / kGlobalBlock);
    // 16 rows per thread keep the partials under ~2% of the input.
    min_slice = 16 * (kGlobalBlock / columns);
  }
  value->reduced = reduced;
  int64_t slices = std::min(units / std::max<int64_t>(items, 1), ceil_div(reduced, min_slice));
  slices = std::max<int64_t>(slices, 1);
  value->slice = ceil_div(reduced, slices);
  // A warp's slice of whole 128-byte lines: one starting inside a sector costs every
  // access of the warp one sector more.
  if (value->mapping == ReductionMapping::kWarp && slices >= 2)
    value->slice = align_to(value->slice, 32);
  value->slices = ceil_div(reduced, value->slice);
  value->items = items * value->slices;
  value->accumulator_bytes = reduction_accumulator_bytes(graph, node);
  return Status::ok();
}

// Threads a stage needs to write `value`: one per element, 32 per warp work item, a
// block per column work item; a warp per output when it combines partials.
int64_t stage_threads(const ir::Graph& graph, ir::ValueId id, const ValueSchedule& value) {
  const int64_t outputs = elements_of(graph, id);
  if (value.lanes_over_k) return 32 * outputs;
  switch (value.mapping) {
    case ReductionMapping::kThread:
      return outputs;
    case ReductionMapping::kWarp:
      return 32 * std::max(value.items, value.warp_combine() ? outputs : 0);
    case ReductionMapping::kColumn:
      return std::max(kGlobalBlock * value.items, value.warp_combine() ? 32 * outputs : 0);
  }
  return outputs;
}

// Whether every value depending on `source` (a value computed in registers, one
// element per thread) is read at its reader's own flat index (a same-shape
// elementwise epilogue, views) and every group output depends on it: the outputs can
// be written where `source`'s element is. With `moved` (the attention kernel's
// output), a group output may also be reached through one Transpose and views after
// it, which keep the flat index (the heads merged back after PV); `moved` gets each
// such output's Transpose.
bool outputs_at_same_index(const ir::Graph& graph, const std::vector<ir::NodeId>& ordered,
                           const std::set<ir::ValueId>& outputs, ir::ValueId source,
                           std::map<ir::ValueId, ir::NodeId>* moved = nullptr) {
  std::set<ir::ValueId> after{source};
  std::map<ir::ValueId, ir::NodeId> moved_values;  // value -> the Transpose it came through
  for (ir::NodeId id : ordered) {
    const ir::Node& node = graph.node(id);
    bool depends = false;
    ir::NodeId through = ir::kNoId;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const ir::ValueId input = node.inputs[i];
      if (input == ir::kNoId) continue;
      if (after.count(input)) {
        if (reads_at_same_index(graph, node, input)) {
          depends = true;
        } else if (moved != nullptr && node.op_type == "Transpose" && node.domain.empty() &&
                   i == 0 && through == ir::kNoId) {
          through = id;
        } else {
          return false;
        }
      } else if (auto m = moved_values.find(input); m != moved_values.end()) {
        if (ir::op_kind(node) != ir::OpKind::kView || i != 0 || through != ir::kNoId) return false;
        through = m->second;
      }
    }
    if (depends && through != ir::kNoId) return false;
    for (ir::ValueId output : node.outputs) {
      if (output == ir::kNoId) continue;
      if (depends) after.insert(output);
      if (through != ir::kNoId) moved_values[output] = through;
    }
  }
  if (moved != nullptr) moved->clear();
  for (ir::ValueId output : outputs) {
    if (after.count(output)) continue;
    auto m = moved_values.find(output);
    if (m == moved_values.end()) return false;
    (*moved)[output] = m->second;  // moved_values is empty without `moved`
  }
  return true;
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
  ir::NodeId gemm = ir::kNoId;
  for (ir::NodeId id : ordered) {
    if (!is_gemm(graph.node(id))) continue;
    if (gemm != ir::kNoId) {
      *why_not = "it holds two GEMMs (" + node_label(graph.node(gemm)) + ", " +
                 node_label(graph.node(id)) + ")";
      return false;
    }
    if (gemm_form(graph.node(id)) != GemmForm::kMatMul) {
      *why_not = node_label(graph.node(id)) + " is a Gemm, not a MatMul";
      return false;
    }
    gemm = id;
  }
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
      gemm, batch, m, n, k, tile_m, tile_n, plan.allocations[0].offset, plan.allocations[1].offset};
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

// 1b. The attention composition (see schedule.h). Applies when the group holds one
// attention core whole, every other materialized value is none (the prologue and
// epilogue are index functions), every group output is the core's output or read
// from it at the same flat index, and the tiles fit the per-block shared memory.
// Returns false (schedule untouched) otherwise.
bool plan_attention(const ir::Graph& graph, const std::vector<ir::NodeId>& ordered,
                    const std::set<ir::ValueId>& outputs, const cost_model::DeviceProfile& profile,
                    GroupSchedule* schedule) {
  const std::set<ir::NodeId> inside(ordered.begin(), ordered.end());
  std::optional<ir::AttentionCore> found;
  for (ir::NodeId id : ordered) {
    if (graph.node(id).op_type != "MatMul") continue;
    std::optional<ir::AttentionCore> core = ir::match_attention(graph, id);
    if (!core) continue;
    const std::vector<ir::NodeId> nodes = core->nodes();
    if (!std::all_of(nodes.begin(), nodes.end(),
                     [&](ir::NodeId node) { return inside.count(node) > 0; })) {
      continue;
    }
    if (found) return false;  // two cores: each is its own kernel
    found = std::move(core);
  }
  if (!found) return false;
  const ir::AttentionCore& core = *found;
  const std::set<ir::ValueId> core_materialized = {core.scores,
                                                   core.logits,
                                                   graph.node(core.max).outputs[0],
                                                   graph.node(core.exp).outputs[0],
                                                   graph.node(core.sum).outputs[0],
                                                   core.output};
  // Other materialized values (a GEMM, a value several prologue nodes read): inlined
  // into the tile loads, recomputed per read; a fine-grained GEMM's recomputation is
  // what kernel_shape charges. No reduction, no group output.
  std::set<ir::ValueId> recomputed;
  for (const auto& [id, value] : schedule->values) {
    if (!value.materialized || core_materialized.count(id)) continue;
    const ir::Node& producer = graph.node(graph.value(id).producer);
    if (outputs.count(id) || ir::op_kind(producer) == ir::OpKind::kReduction) return false;
    if (ir::op_kind(producer) != ir::OpKind::kGemm) continue;
    const std::optional<ir::GemmShape> shape = ir::gemm_shape(graph, producer);
    if (!shape || shape->m * shape->n * shape->k > cost_model::kMaxFusedGemmMultiplyAdds)
      return false;
    recomputed.insert(id);
  }
  std::map<ir::ValueId, ir::NodeId> moved_outputs;
  if (!outputs_at_same_index(graph, ordered, outputs, core.output, &moved_outputs)) return false;
  // float16/bfloat16: the tensor-core variant when the head dims fit the m16n8k16
  // fragments (d a multiple of 16, dv of 8, dv <= 128: its accumulators are dv / 2
  // registers per lane): a warp per 16 query rows, up to 4 warps, 16-bit tiles.
  const int64_t tc_warps = std::min<int64_t>(kAttentionWarps, (core.lq + 15) / 16);
  const int64_t tc_q_bytes = align_to(16 * tc_warps * (core.d + 8) * 2, kSharedAlignment);
  const int64_t tc_k_bytes = align_to(kAttentionTileKeys * (core.d + 8) * 2, kSharedAlignment);
  const int64_t tc_v_bytes = align_to(kAttentionTileKeys * (core.dv + 8) * 2, kSharedAlignment);
  const bool tensor_cores = core.dtype != ir::DType::kFloat32 && core.d % 16 == 0 &&
                            core.dv % 8 == 0 && core.dv <= 128 &&
                            tc_q_bytes + tc_k_bytes + tc_v_bytes <= profile.shared_memory_per_block;
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

  AttentionPlan attention;
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

Result<std::vector<int64_t>> reduction_axes(const ir::Graph& graph, const ir::Node& node,
                                            bool* noop) {
  *noop = false;
  const int64_t rank = graph.value(node.inputs[0]).type.rank();
  std::vector<int64_t> axes;
  const ReductionLowering* lowering = find_reduction_lowering(node);
  // Reductions without a lowering take their axes as the Reduce* ops of their opset.
  const int64_t axes_input_from = lowering != nullptr ? lowering->axes_input_opset : 18;
  if (axes_input_from == 0) {
    axes.push_back(node.int_attribute("axis", 0));
  } else {
    if (node.opset >= axes_input_from) {
      if (node.inputs.size() > 1 && node.inputs[1] != ir::kNoId) {
        const ir::Value& given = graph.value(node.inputs[1]);
        if (given.constant == nullptr) {
          return Status::invalid_input("node " + node.display_name() +
                                       ": the axes input is not a constant; the CUDA emitter "
                                       "needs constant axes (fold the axes computation)");
        }
        axes = given.constant->to_int64_vector();
      }
      if (axes.empty() && node.int_attribute("noop_with_empty_axes", 0) != 0) {
        *noop = true;
        return axes;
      }
    } else {
      axes = node.ints_attribute("axes", {});
    }
    if (axes.empty()) {
      for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
    }
  }
  for (int64_t& axis : axes) {
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) {
      return Status::invalid_input("node " + node.display_name() + ": axis out of range for rank " +
                                   std::to_string(rank) + "; fix the axes");
    }
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return axes;
}

namespace {

// What every step of build_schedule reads about the group.
struct GroupFacts {
  const ir::Graph& graph;
  const std::vector<ir::NodeId>& ordered;  // topological
  std::set<ir::NodeId> inside;
  std::set<ir::ValueId> outputs;
  std::map<ir::NodeId, int> position_of_node;  // in `ordered`
  std::vector<ir::NodeId> reductions;
  bool has_gemm = false;

  GroupFacts(const ir::Graph& graph, const GroupBoundary& boundary)
      : graph(graph),
        ordered(boundary.ordered_nodes),
        inside(ordered.begin(), ordered.end()),
        outputs(boundary.outputs.begin(), boundary.outputs.end()) {
    for (size_t i = 0; i < ordered.size(); ++i) position_of_node[ordered[i]] = static_cast<int>(i);
  }
  bool row_varying_input(const std::map<ir::ValueId, ValueSchedule>& values,
                         ir::ValueId input) const {
    auto it = input == ir::kNoId ? values.end() : values.find(input);
    return it != values.end() && it->second.row_varying;
  }
};

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
        STITCH_ASSIGN_OR_RETURN(std::vector<int64_t> axes, reduction_axes(graph, node, &noop));
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

// Row-varying values: depend on a materialized value through inlined ops.
void mark_row_varying(const GroupFacts& group, GroupSchedule* schedule) {
  for (ir::NodeId id : group.ordered) {
    const ir::Node& node = group.graph.node(id);
    bool varying = false;
    for (ir::ValueId input : node.inputs) {
      auto it = input == ir::kNoId ? schedule->values.end() : schedule->values.find(input);
      if (it != schedule->values.end() && (it->second.materialized || it->second.row_varying)) {
        varying = true;
      }
    }
    for (ir::ValueId output : node.outputs) {
      if (output == ir::kNoId) continue;
      ValueSchedule& value = schedule->values[output];
      value.row_varying = value.materialized || varying;
    }
  }
}

// 2. (first part) The rows R every reduction reduces a trailing suffix over, or -1
// when the reductions disagree or one cannot be row-local.
Result<int64_t> reduction_rows(const GroupFacts& group, std::string* why_not) {
  const ir::Graph& graph = group.graph;
  if (group.reductions.empty()) {
    *why_not = "no reduction gives it rows";
    return -1;
  }
  if (group.has_gemm) {
    for (ir::NodeId id : group.ordered) {
      if (is_gemm(graph.node(id))) {
        *why_not = "it holds the GEMM " + node_label(graph.node(id)) + ", which no row owns";
        break;
      }
    }
    return -1;
  }
  int64_t rows = -1;
  for (ir::NodeId id : group.reductions) {
    const ir::Node& node = graph.node(id);
    bool noop = false;
    STITCH_ASSIGN_OR_RETURN(std::vector<int64_t> axes, reduction_axes(graph, node, &noop));
    ir::DType in_type = graph.value(node.inputs[0]).type.dtype;
    bool float_input = in_type == ir::DType::kFloat32 || in_type == ir::DType::kFloat16 ||
                       in_type == ir::DType::kBFloat16;
    // Zero-size (no rows, or empty rows whose results are the identity): nothing to
    // map to warps, and rows_per_block would be 0; the global composition writes them.
    if (noop || !float_input || reduces_per_thread_only(node) ||
        elements_of(graph, node.inputs[0]) == 0) {
      *why_not = "reduction " + node_label(node) +
                 " keeps a thread per output (not a float sum/mean/max/min/prod, or empty)";
      return -1;
    }
    const std::vector<int64_t>& in = dims_of(graph, node.inputs[0]);
    auto p = static_cast<int64_t>(in.size()) - static_cast<int64_t>(axes.size());
    bool suffix = true;
    for (size_t k = 0; k < axes.size(); ++k) {
      if (axes[k] != p + static_cast<int64_t>(k)) suffix = false;
    }
    int64_t node_rows = product(in, 0, static_cast<size_t>(std::max<int64_t>(p, 0)));
    if (!suffix) {
      *why_not = "reduction " + node_label(node) + " does not reduce the last axes";
      return -1;
    }
    if (rows < 0) rows = node_rows;
    if (rows != node_rows) {
      *why_not = "its reductions reduce different rows (" + num(rows) + " and " + num(node_rows) +
                 ", " + node_label(node) + ")";
      return -1;
    }
  }
  return rows;
}

// A Transpose of a row-varying `operand` that moves whole rows (the axes after the
// rows' stay in place at the end), writing a group output that nothing else in the
// group reads: each row is written where it lands (issue 16 part 2), not read back
// from another row. PyTorch's sequence-first layers ([S, B, E] <-> [B, S, E]).
bool moves_whole_rows(const GroupFacts& group, const ir::Node& reader, ir::ValueId operand,
                      int64_t rows) {
  if (reader.op_type != "Transpose" || !reader.domain.empty() || reader.inputs.size() != 1) {
    return false;
  }
  const ir::ValueId out = reader.outputs[0];
  if (!group.outputs.count(out)) return false;
  for (const ir::Use& use : group.graph.value(out).users) {
    if (group.inside.count(use.node)) return false;
  }
  const std::vector<int64_t>& in = dims_of(group.graph, operand);
  const int q = split_at_rows(in, rows);
  const std::vector<int64_t> perm = transpose_perm(reader, in.size());
  if (q < 0 || perm.size() != in.size()) return false;
  for (size_t d = static_cast<size_t>(q); d < in.size(); ++d) {
    if (perm[d] != static_cast<int64_t>(d)) return false;
  }
  return true;
}

// 2. (second part) Materialized values and outputs must split as [rows, k]; an
// invariant candidate that does not split is recomputed instead (inlined). Every read
// of a row-varying value must stay inside its row.
bool rows_split_values(const GroupFacts& group, int64_t rows, GroupSchedule* schedule,
                       std::string* why_not) {
  const ir::Graph& graph = group.graph;
  bool row_local = true;
  // Every value is visited even after a failure: the demotions of invariant values
  // stand for the global composition too.
  for (ir::NodeId id : group.ordered) {
    for (ir::ValueId output : graph.node(id).outputs) {
      if (output == ir::kNoId) continue;
      ValueSchedule& value = schedule->values[output];
      bool needs_split = value.materialized || group.outputs.count(output) > 0;
      if (!needs_split) continue;
      // A written value without elements would get an empty row buffer (no arena).
      if (elements_of(graph, output) == 0) row_local = false;
      if (split_at_rows(dims_of(graph, output), rows) >= 0) continue;
      bool reduction = ir::op_kind(graph.node(id)) == ir::OpKind::kReduction;
      bool depends = false;
      for (ir::ValueId input : graph.node(id).inputs) {
        if (group.row_varying_input(schedule->values, input)) depends = true;
      }
      if (!reduction && !depends && !group.outputs.count(output)) {
        value.materialized = false;
        value.row_varying = false;
      } else {
        if (row_local) {
          *why_not = graph.value(output).name + " (" + ir::to_string(graph.value(output).type) +
                     ") does not split into its " + num(rows) + " rows";
        }
        row_local = false;
      }
    }
  }
  if (!row_local) return false;
  for (ir::NodeId id : group.ordered) {
    const ir::Node& node = graph.node(id);
    for (ir::ValueId input : node.inputs) {
      if (!group.row_varying_input(schedule->values, input)) continue;
      if (!read_is_row_local(graph, node, input, rows)) {
        if (moves_whole_rows(group, node, input, rows)) {
          schedule->values[node.outputs[0]].rows_moved = true;
          continue;
        }
        *why_not = node_label(node) + " reads " + graph.value(input).name + " across its rows";
        return false;
      }
    }
  }
  return true;
}

// 2. Row-local launch: a warp per row (short rows, several rows per block) or a block
// per row, and for few long rows the split across blocks.
// Returns what the why line says of the choice when it is not the plain one.
std::string plan_row_launch(const GroupFacts& group, int64_t rows,
                            const cost_model::DeviceProfile& profile, GroupSchedule* schedule) {
  const ir::Graph& graph = group.graph;
  RowPlan& row = schedule->plan.emplace<RowPlan>();
  row.rows = rows;
  for (auto& [id, value] : schedule->values) {
    value.row_elements = elements_of(graph, id) / std::max<int64_t>(rows, 1);
    if (elements_of(graph, id) % std::max<int64_t>(rows, 1) == 0) {
      row.row_length = std::max(row.row_length, value.row_elements);
    }
  }
  for (ir::NodeId id : group.reductions) {
    row.row_length = std::max(
        row.row_length, elements_of(graph, graph.node(id).inputs[0]) / std::max<int64_t>(rows, 1));
  }
  // A warp per row for short rows; a block per row (split across blocks when few) for
  // long ones, and for rows too few to give two warps per SM when each lane would walk
  // more than kFewRowsLaneElements elements: vae's 32 rows of 784, a warp each, left
  // 100 of 132 SMs idle and took 19 us on an H100 (docs/benchmarks.md).
  const bool few_rows = rows < 2 * static_cast<int64_t>(profile.sm_count) &&
                        row.row_length > 32 * kFewRowsLaneElements;
  bool warp = row.row_length <= kWarpRowLimit && !few_rows;
  row.warp = warp;
  std::string note;
  if (few_rows && row.row_length <= kWarpRowLimit) {
    note = "; a block per row: " + num(rows) + " rows of " + num(row.row_length) +
           " are too few for a warp each";
  }
  row.rows_per_block = 1;
  if (warp) {
    // Short rows share a warp (OneFlow's warp softmax/LayerNorm: a thread group per
    // row): per-row work (index math, shuffles, the result's store) is spread over
    // 32 / lanes rows, and the rows' elements stay contiguous across the warp.
    int lanes = 1;
    while (lanes < 32 && lanes * kElementsPerLane < row.row_length) lanes *= 2;
    row.lanes_per_row = lanes;
    const int64_t rows_per_warp = 32 / lanes;
    const int64_t warps = (rows + rows_per_warp - 1) / rows_per_warp;
    // Warps per block: the most (up to 8) that still give two blocks per SM, so that
    // small row counts spread over the SMs instead of filling a few.
    int per_block = kWarpsPerBlock;
    while (per_block > 1 && warps < 2 * static_cast<int64_t>(profile.sm_count) * per_block) {
      per_block /= 2;
    }
    per_block = static_cast<int>(std::min<int64_t>(per_block, warps));
    row.rows_per_block = static_cast<int>(per_block * rows_per_warp);
    schedule->block = 32 * per_block;
  } else {
    int64_t threads = std::min<int64_t>(512, align_to(row.row_length, 32));
    schedule->block = static_cast<int>(std::min<int64_t>(threads, profile.max_threads_per_block));
  }
  const int64_t wave = blocks_per_wave(profile, *schedule);
  int64_t needed = (rows + row.rows_per_block - 1) / row.rows_per_block;
  schedule->grid = std::max<int64_t>(1, std::min(needed, wave));
  if (!warp && rows < wave && split_rows_allowed(graph, group.ordered, group.outputs, *schedule)) {
    // Few long rows: split each row across blocks so rows * blocks_per_row fills the
    // co-resident blocks (SMs x blocks per SM), slices of >= kMinSliceElements.
    const int64_t length = row.row_length;
    int64_t split = std::min(wave / std::max<int64_t>(rows, 1),
                             (length + kMinSliceElements - 1) / kMinSliceElements);
    if (split >= 2) {
      // Slices of whole 128-byte lines (32 elements of 4 bytes): a slice starting
      // inside a sector makes every warp access of the block touch one sector more.
      row.slice = align_to((length + split - 1) / split, 32);
      row.blocks_per_row = static_cast<int>((length + row.slice - 1) / row.slice);
    }
  }
  return note;
}

// 2. Row-local storage: row buffers of materialized non-reduction values in the shared
// arena (FS Alg. 4: a buffer is reused by a value whose producer post-dominates the
// earlier one's), the rest in the workspace; reduction results in registers.
Status plan_row_storage(const GroupFacts& group, const cost_model::DeviceProfile& profile,
                        GroupSchedule* schedule) {
  const ir::Graph& graph = group.graph;
  std::vector<SharedMemoryRequest> requests;
  std::vector<ir::ValueId> request_values;
  for (ir::NodeId id : group.ordered) {
    const ir::Node& node = graph.node(id);
    if (ir::op_kind(node) == ir::OpKind::kReduction) continue;
    for (ir::ValueId output : node.outputs) {
      if (output == ir::kNoId) continue;
      ValueSchedule& value = schedule->values[output];
      if (!value.materialized) continue;
      if (group.outputs.count(output)) {
        value.storage = Storage::kOutput;
        continue;
      }
      const int first_use = group.position_of_node.at(id);
      int last_use = first_use;
      for (const ir::Use& use : graph.value(output).users) {
        if (group.inside.count(use.node)) {
          last_use = std::max(last_use, group.position_of_node.at(use.node));
        }
      }
      requests.push_back(
          SharedMemoryRequest{graph.value(output).name, first_use, last_use,
                              value.row_elements * ir::dtype_size(graph.value(output).type.dtype)});
      request_values.push_back(output);
    }
  }
  STITCH_ASSIGN_OR_RETURN(ir::DominatorTree post_dominance,
                          ir::DominatorTree::post_dominators(graph, group.ordered, group.outputs));
  const RowPlan& row = std::get<RowPlan>(schedule->plan);
  const bool warp = row.warp;
  int64_t scratch = warp ? 0 : kBlockScratchBytes;
  int64_t limit = (profile.shared_memory_per_block - scratch) / row.rows_per_block;
  SharedMemoryPlan plan = plan_shared_memory(
      requests,
      [&](size_t later, size_t earlier) {
        return post_dominance.dominates(graph.value(request_values[later]).producer,
                                        graph.value(request_values[earlier]).producer);
      },
      limit);
  int64_t workspace = 0;
  for (size_t r = 0; r < requests.size(); ++r) {
    ValueSchedule& value = schedule->values[request_values[r]];
    if (plan.allocations[r].in_shared) {
      value.storage = Storage::kShared;
      value.offset = plan.allocations[r].offset;
    } else {
      value.storage = Storage::kWorkspace;
      value.offset = workspace;
      workspace += align_to(row.rows * requests[r].bytes, kWorkspaceAlignment);
    }
  }
  for (ir::NodeId id : group.reductions) {
    schedule->values[graph.node(id).outputs[0]].storage = Storage::kRegister;
  }
  schedule->shared_bytes_requested = plan.requested_bytes * row.rows_per_block + scratch;
  schedule->shared_bytes = plan.allocated_bytes * row.rows_per_block + scratch;
  schedule->shared_memory_fallback = plan.fallback;
  schedule->workspace_bytes = workspace;
  return Status::ok();
}

// Which reduction mappings a global-composition group uses (5.).
struct MappingUse {
  bool warp = false;    // a warp per output: shuffles
  bool column = false;  // a block per column tile: shuffles and shared memory
};

// Whether a MatMul the stages write is computed a warp per output element
// (ValueSchedule::lanes_over_k): k of at least 32 (every lane has a term) and outputs
// that one wave of warps holds.
bool lanes_over_k(const ir::Graph& graph, const ir::Node& node,
                  const cost_model::DeviceProfile& profile) {
  if (node.op_type != "MatMul" || node.inputs.size() < 2 || node.outputs.empty()) return false;
  const ir::TensorType& a = graph.value(node.inputs[0]).type;
  const ir::TensorType& out = graph.value(node.outputs[0]).type;
  if (!a.is_static() || !out.is_static() || a.dims.empty()) return false;
  const int64_t outputs = out.num_elements();
  return a.dims.back() >= 32 && outputs > 0 &&
         outputs * 32 <= static_cast<int64_t>(profile.sm_count) * profile.max_threads_per_sm;
}

// 3./4. Levels of the global composition; 5. reduction mappings (a reduction cut into
// slices writes its partials one level before its result).
Result<MappingUse> plan_levels(const GroupFacts& group, const cost_model::DeviceProfile& profile,
                               GroupSchedule* schedule) {
  MappingUse use;
  std::map<ir::ValueId, int> reach;  // deepest materialized level a value depends on
  // Same-index epilogues (ValueSchedule::epilogue_of): the lanes-over-k MatMul a value
  // reads at its own index through same-index reads only, and the deepest level of
  // everything else it depends on (below the MatMul's: materialized earlier).
  struct Epilogue {
    ir::ValueId gemm;
    int others;
  };
  std::map<ir::ValueId, Epilogue> epilogue_source;
  // Not in a group holding an attention core's P x V product: with one barrier less,
  // gpt2_block's planner took a global kernel of P x V, the output projection and the
  // residual over its attention kernel, which the emulated profile estimates slower
  // (144.9 against 141.7 us for the model): the analytic charge of such global kernels
  // is low, and the issue asks for attention kernels without grid barriers. Looked up
  // once, on the first value that would fold (the planner's schedule oracle builds a
  // schedule for every candidate).
  std::optional<bool> splits_attention;
  auto may_fold = [&] {
    if (!splits_attention) {
      splits_attention =
          std::any_of(group.ordered.begin(), group.ordered.end(), [&](ir::NodeId id) {
            return is_gemm(group.graph.node(id)) &&
                   ir::match_attention(group.graph, id).has_value();
          });
    }
    return !*splits_attention;
  };
  int max_level = -1;
  for (ir::NodeId id : group.ordered) {
    const ir::Node& node = group.graph.node(id);
    int depends = -1;
    ir::ValueId source = ir::kNoId;
    bool single_source = true;
    int other = -1;
    for (ir::ValueId input : node.inputs) {
      auto it = input == ir::kNoId ? schedule->values.end() : schedule->values.find(input);
      if (it == schedule->values.end()) continue;
      const ValueSchedule& in = it->second;
      int beside = in.materialized ? in.level : reach[input];
      depends = std::max(depends, beside);
      ir::ValueId from = ir::kNoId;
      if (reads_at_same_index(group.graph, node, input)) {
        auto folded = epilogue_source.find(input);
        if (in.materialized && in.lanes_over_k) {
          from = input;
          beside = -1;
        } else if (!in.materialized && folded != epilogue_source.end()) {
          from = folded->second.gemm;
          beside = folded->second.others;
        }
      }
      if (from != ir::kNoId) {
        if (source != ir::kNoId && source != from) single_source = false;
        source = from;
      }
      other = std::max(other, beside);
    }
    if (source != ir::kNoId && single_source && other < schedule->values[source].level &&
        may_fold()) {
      for (ir::ValueId output : node.outputs) {
        if (output != ir::kNoId) epilogue_source[output] = {source, other};
      }
    } else {
      source = ir::kNoId;
    }
    for (ir::ValueId output : node.outputs) {
      if (output == ir::kNoId) continue;
      ValueSchedule& value = schedule->values[output];
      reach[output] = depends;
      if (value.materialized && ir::op_kind(node) == ir::OpKind::kReduction) {
        STITCH_RETURN_IF_ERROR(plan_reduction_mapping(group.graph, node, profile, &value));
        if (value.mapping == ReductionMapping::kWarp) use.warp = true;
        if (value.mapping == ReductionMapping::kColumn) use.column = true;
      }
      if (value.materialized || group.outputs.count(output)) {
        if (lanes_over_k(group.graph, node, profile)) {
          value.lanes_over_k = true;
          use.warp = true;
        }
        value.level = depends + (value.slices >= 2 ? 2 : 1);
        if (source != ir::kNoId) {
          // Written by the thread or lane that computes the GEMM's element: one stage
          // (and one grid barrier) less.
          value.epilogue_of = source;
          value.level = schedule->values[source].level;
        }
        max_level = std::max(max_level, value.level);
      }
    }
  }
  schedule->levels = max_level + 1;
  return use;
}

constexpr int64_t kSideBySideBlocksPerSm = 2;

// 4. Workspace of the global composition (barrier counter, partials, materialized
// values), the block and the grid.
void plan_global_launch(const GroupFacts& group, const cost_model::DeviceProfile& profile,
                        GroupSchedule* schedule) {
  const ir::Graph& graph = group.graph;
  // Threads: the largest value's, or the busiest stage's, whose loops run side by side
  // (each starts where the stage's previous one ended, KernelWriter::stage_code), up to
  // kSideBySideBlocksPerSm blocks per SM: more blocks make every grid barrier slower
  // (each block's arrival is an atomic on one counter).
  int64_t work = 1;
  std::map<int, int64_t> stage_work;
  int64_t side_by_side = 1;
  int64_t workspace = 0;
  if (schedule->levels > 1) {
    schedule->barrier_offset = 0;
    workspace = kWorkspaceAlignment;
  }
  for (ir::NodeId id : group.ordered) {
    for (ir::ValueId output : graph.node(id).outputs) {
      if (output == ir::kNoId) continue;
      ValueSchedule& value = schedule->values[output];
      if (value.materialized || group.outputs.count(output)) {
        const int64_t threads = stage_threads(graph, output, value);
        work = std::max(work, threads);
        stage_work[value.level] += threads;
        side_by_side = std::max(side_by_side, stage_work[value.level]);
      }
      if (!value.materialized) continue;
      schedule->materialized.push_back(output);
      if (value.slices >= 2) {
        value.partial_offset = workspace;
        workspace += align_to(elements_of(graph, output) * value.slices * value.accumulator_bytes,
                              kWorkspaceAlignment);
      }
      if (group.outputs.count(output)) {
        value.storage = Storage::kOutput;
      } else {
        value.storage = Storage::kWorkspace;
        value.offset = workspace;
        workspace += align_to(graph.value(output).type.num_bytes(), kWorkspaceAlignment);
      }
    }
  }
  schedule->workspace_bytes = workspace;
  work = std::max(work, std::min<int64_t>(side_by_side, kSideBySideBlocksPerSm * profile.sm_count *
                                                            kGlobalBlock));
  schedule->block = static_cast<int>(std::min<int64_t>(kGlobalBlock, align_to(work, 32)));
  // Column reductions combine their warps' columns through shared memory.
  for (const auto& [id, value] : schedule->values) {
    if (value.mapping != ReductionMapping::kColumn) continue;
    schedule->shared_bytes = std::max<int64_t>(
        schedule->shared_bytes, schedule->block / 32 * value.columns * value.accumulator_bytes);
  }
  schedule->shared_bytes_requested = schedule->shared_bytes;
  schedule->grid = wave_grid(work, profile, *schedule);
  schedule->cooperative = schedule->levels > 1;
}

// 3. Independent parts (weakly connected components of the group's data flow) that
// write an output, in order of their first node.
std::vector<std::vector<ir::NodeId>> independent_parts(const GroupFacts& group) {
  std::map<ir::NodeId, ir::NodeId> parent;
  for (ir::NodeId id : group.ordered) parent[id] = id;
  auto find = [&](ir::NodeId x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  for (ir::NodeId id : group.ordered) {
    for (ir::ValueId input : group.graph.node(id).inputs) {
      if (input == ir::kNoId) continue;
      ir::NodeId producer = group.graph.value(input).producer;
      if (producer != ir::kNoId && group.inside.count(producer)) {
        ir::NodeId a = find(id);
        ir::NodeId b = find(producer);
        if (a != b) parent[std::max(a, b)] = std::min(a, b);
      }
    }
  }
  std::map<ir::NodeId, std::vector<ir::NodeId>> components;
  std::vector<ir::NodeId> roots;
  for (ir::NodeId id : group.ordered) {
    ir::NodeId root = find(id);
    if (!components.count(root)) roots.push_back(root);
    components[root].push_back(id);
  }
  // A part without an output (only views feeding nothing) is dropped from packing.
  std::vector<std::vector<ir::NodeId>> parts;
  for (ir::NodeId root : roots) {
    bool writes = false;
    for (ir::NodeId id : components[root]) {
      for (ir::ValueId output : group.graph.node(id).outputs) {
        if (output != ir::kNoId && group.outputs.count(output)) writes = true;
      }
    }
    if (writes) parts.push_back(components[root]);
  }
  return parts;
}

// 3a. Cheap producers recomputed (issue 16 part 2). In the global composition a
// materialized elementwise value costs a stage (a grid barrier) and a round trip
// through the workspace; inlined, every read evaluates its expression again (up to
// materialized values and the group's inputs). It is inlined when that expression is
// small and the profile's estimate of the extra evaluations (their flops at the fp32
// peak, their operand reads at L2 bandwidth) is below one grid barrier plus the round
// trip: an unrolled GRU's new hidden state, read by the next step's three GEMMs.
constexpr int kRecomputeMaxOps = 32;
constexpr int kRecomputeMaxLeaves = 16;

// The ops and the operand reads of one evaluation of `id`'s producer, through the
// values it inlines; false past the limits.
bool expression_cost(const GroupFacts& group, const GroupSchedule& schedule, ir::ValueId id,
                     int* ops, int* leaves) {
  const ir::Node& node = group.graph.node(group.graph.value(id).producer);
  const ir::OpKind kind = ir::op_kind(node);
  if (kind != ir::OpKind::kElementwise && kind != ir::OpKind::kBroadcast &&
      kind != ir::OpKind::kView && kind != ir::OpKind::kInjective) {
    return false;
  }
  *ops += kind == ir::OpKind::kElementwise || kind == ir::OpKind::kBroadcast ? 1 : 0;
  for (ir::ValueId input : node.inputs) {
    if (input == ir::kNoId) continue;
    const ir::Value& value = group.graph.value(input);
    auto it = schedule.values.find(input);
    if (value.producer == ir::kNoId || !group.inside.count(value.producer) ||
        it == schedule.values.end() || it->second.materialized) {
      if (!value.is_initializer() || value.type.num_elements() != 1)
        ++*leaves;  // literals are free
    } else if (!expression_cost(group, schedule, input, ops, leaves)) {
      return false;
    }
    if (*ops > kRecomputeMaxOps || *leaves > kRecomputeMaxLeaves) return false;
  }
  return true;
}

// Returns the producers it inlined, for GroupSchedule::why.
std::vector<std::string> recompute_cheap_producers(const GroupFacts& group,
                                                   const cost_model::DeviceProfile& profile,
                                                   GroupSchedule* schedule) {
  const ir::Graph& graph = group.graph;
  std::vector<std::string> recomputed;
  // A whole attention core keeps its softmax staged here: the attention composition is
  // what it should get (no grid barrier), and a cheaper-looking global kernel holding
  // one would take its place in the plan.
  // Looked up once, and only for groups with a value to recompute (the planner's
  // schedule oracle builds schedules for every candidate).
  std::optional<std::set<ir::NodeId>> attention;
  auto in_attention = [&](ir::NodeId id) {
    if (!attention) {
      attention.emplace();
      for (ir::NodeId gemm : group.ordered) {
        if (!is_gemm(graph.node(gemm))) continue;
        if (std::optional<ir::AttentionCore> core = ir::match_attention(graph, gemm)) {
          for (ir::NodeId member : core->nodes()) attention->insert(member);
        }
      }
    }
    return attention->count(id) > 0;
  };
  for (ir::NodeId id : group.ordered) {  // producers first: their decisions stand
    const ir::Node& node = graph.node(id);
    const ir::OpKind kind = ir::op_kind(node);
    if (kind != ir::OpKind::kElementwise && kind != ir::OpKind::kBroadcast) continue;
    for (ir::ValueId output : node.outputs) {
      if (output == ir::kNoId) continue;
      ValueSchedule& value = schedule->values[output];
      if (!value.materialized) continue;
      int ops = 0, leaves = 0;
      if (!expression_cost(group, *schedule, output, &ops, &leaves) || in_attention(id)) continue;
      const double elements = static_cast<double>(elements_of(graph, output));
      double reads = 0;
      for (const ir::Use& use : graph.value(output).users) {
        if (!group.inside.count(use.node)) continue;
        const ir::Node& reader = graph.node(use.node);
        if (is_gemm(reader)) {
          const std::optional<ir::GemmShape> gemm = ir::gemm_shape(graph, reader);
          if (!gemm) continue;
          reads += static_cast<double>(gemm->batch * gemm->m * gemm->n * gemm->k);
        } else {
          reads += std::max(elements, static_cast<double>(elements_of(graph, reader.outputs[0])));
        }
      }
      const double bytes = elements * ir::dtype_size(graph.value(output).type.dtype);
      const double recompute_us =
          (reads - elements) *
          (ops / profile.fp32_flops_per_second + leaves * 4.0 / profile.l2_bytes_per_second) * 1e6;
      const double materialize_us =
          profile.grid_barrier_us + 2 * bytes / profile.l2_bytes_per_second * 1e6;
      if (recompute_us < materialize_us) {
        value.materialized = false;
        recomputed.push_back(node_label(node));
      }
    }
  }
  return recomputed;
}

// 3. A single-stage group: packing when it has independent parts (each over its own
// blocks), else block (column reductions), warp (warp reductions) or thread.
void plan_single_stage(const GroupFacts& group, const MappingUse& use,
                       const cost_model::DeviceProfile& profile, GroupSchedule* schedule) {
  std::vector<std::vector<ir::NodeId>> parts = independent_parts(group);
  if (parts.size() < 2) {
    ThreadPlan thread;
    thread.mapping = use.column ? StageMapping::kColumn
                     : use.warp ? StageMapping::kWarp
                                : StageMapping::kThread;
    schedule->plan = thread;
    return;
  }
  PackingPlan& packing = schedule->plan.emplace<PackingPlan>();
  packing.parts = std::move(parts);
  schedule->grid = 0;
  for (const std::vector<ir::NodeId>& part : packing.parts) {
    int64_t part_work = 1;
    for (ir::NodeId id : part) {
      for (ir::ValueId output : group.graph.node(id).outputs) {
        if (output != ir::kNoId && group.outputs.count(output)) {
          part_work =
              std::max(part_work, stage_threads(group.graph, output, schedule->values[output]));
        }
      }
    }
    const int64_t part_grid = wave_grid(part_work, profile, *schedule);
    packing.part_grids.push_back(part_grid);
    schedule->grid += part_grid;
  }
}

// 3b. 128-bit accesses of the thread composition (GroupSchedule::vector_width): how
// a value is read while an output is written in aligned runs of kVectorWidth
// consecutive elements. kRuns: at aligned runs of as many consecutive indices, through
// one index map (the broadcasts on the way), so one 16-byte window per run holds
// every element the run reads; kUniform: at one index per run (a per-row scale, a
// scalar bound); kOther: anything else (a transpose, a gather, a slice, two maps).
constexpr int64_t kVectorWidth = 4;
enum class RunRead { kRuns, kUniform, kOther };

struct RunAccess {
  RunRead read = RunRead::kRuns;
  BroadcastSteps steps;  // the value's index from the output's (when `mapped`)
  bool mapped = true;    // false: a kUniform read at another index (a scalar bound)
};

// Two reads of one value: the same kind through the same map stay; two kUniform reads
// through different maps (or at another index) stay kUniform without a map; anything
// else is kOther.
RunAccess meet(const RunAccess& a, const RunAccess& b) {
  const bool same_map = a.mapped && b.mapped && a.steps == b.steps;
  if (a.read != b.read || (a.read == RunRead::kRuns && !same_map)) {
    return {RunRead::kOther, {}, false};
  }
  return same_map ? a : RunAccess{a.read, {}, false};
}

// How `operand` is read by a broadcasting elementwise read into `out` read as `reads`.
RunAccess broadcast_access(const std::vector<int64_t>& operand, const std::vector<int64_t>& out,
                           const RunAccess& reads) {
  if (reads.read == RunRead::kOther || operand == out) return reads;
  RunAccess access = reads;
  access.steps.emplace_back(operand, out);
  if (reads.read == RunRead::kUniform) return access;
  const int64_t last = out.empty() ? 0 : out.back();
  if (last % kVectorWidth != 0) return {RunRead::kOther, {}, false};  // runs would cross rows
  if (!operand.empty() && operand.back() == last) return access;
  if (operand.empty() || operand.back() == 1) {
    access.read = RunRead::kUniform;
    return access;
  }
  return {RunRead::kOther, {}, false};
}

// How every value `output` depends on is read while `output` is written in runs; the
// group's index-function ops only (nullopt when the group holds a reduction or a GEMM).
std::optional<std::map<ir::ValueId, RunAccess>> run_accesses(const GroupFacts& group,
                                                             ir::ValueId output) {
  const ir::Graph& graph = group.graph;
  std::map<ir::ValueId, RunAccess> reads;
  auto merge = [&](ir::ValueId id, const RunAccess& access) {
    auto [it, fresh] = reads.emplace(id, access);
    if (!fresh) it->second = meet(it->second, access);
  };
  merge(output, {});
  for (auto n = group.ordered.rbegin(); n != group.ordered.rend(); ++n) {
    const ir::Node& node = graph.node(*n);
    const ir::OpKind kind = ir::op_kind(node);
    if (kind == ir::OpKind::kReduction || kind == ir::OpKind::kGemm) return std::nullopt;
    std::optional<RunAccess> out_access;
    for (ir::ValueId id : node.outputs) {
      auto it = id == ir::kNoId ? reads.end() : reads.find(id);
      if (it == reads.end()) continue;
      out_access = out_access ? meet(*out_access, it->second) : it->second;
    }
    if (!out_access) continue;  // not read on the way to `output`
    const OpLowering* lowering = find_op_lowering(node);
    const std::vector<int64_t>& out = dims_of(graph, node.outputs[0]);
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const ir::ValueId input = node.inputs[k];
      if (input == ir::kNoId) continue;
      RunAccess operand{RunRead::kOther, {}, false};
      if (kind == ir::OpKind::kView || (lowering != nullptr && lowering->passes_through)) {
        if (k != 0) continue;   // a shape operand: never read
        operand = *out_access;  // the same flat index
      } else if (kind == ir::OpKind::kElementwise) {
        operand = k > 0 && lowering != nullptr && lowering->later_operands_scalar
                      ? RunAccess{RunRead::kUniform, {}, false}
                      : broadcast_access(dims_of(graph, input), out, *out_access);
      } else if (kind == ir::OpKind::kBroadcast) {
        if (k != 0) continue;
        operand = broadcast_access(dims_of(graph, input), out, *out_access);
      }
      merge(input, operand);
    }
  }
  return reads;
}

void plan_vector_access(const GroupFacts& group, const cost_model::DeviceProfile& profile,
                        GroupSchedule* schedule) {
  const ir::Graph& graph = group.graph;
  auto float_runs = [&](ir::ValueId id) {
    const ir::TensorType& type = graph.value(id).type;
    const int64_t elements = type.num_elements();
    return type.dtype == ir::DType::kFloat32 && elements > 0 && elements % kVectorWidth == 0;
  };
  int64_t work = 0;
  std::map<ir::ValueId, std::map<ir::ValueId, BroadcastSteps>> maps;
  std::map<ir::ValueId, RunRead> input_reads;  // over every output
  std::set<ir::ValueId> unmapped;              // kUniform inputs read at another index
  for (ir::ValueId output : schedule->boundary.outputs) {
    if (!float_runs(output)) return;
    work = std::max(work, elements_of(graph, output) / kVectorWidth);
    const std::optional<std::map<ir::ValueId, RunAccess>> reads = run_accesses(group, output);
    if (!reads) return;
    for (ir::ValueId input : schedule->boundary.inputs) {
      auto it = reads->find(input);
      if (it == reads->end() || is_baked_scalar(graph.value(input))) continue;
      RunRead read = it->second.read;
      if (read == RunRead::kRuns && !float_runs(input)) read = RunRead::kOther;
      auto [seen, fresh] = input_reads.emplace(input, read);
      // One accessor serves every output: the same kind of read from each.
      if (read == RunRead::kOther || (!fresh && seen->second != read)) return;
      if (!it->second.mapped) unmapped.insert(input);
      maps[output][input] = it->second.steps;
    }
  }
  PackingPlan* packing = schedule->as<PackingPlan>();
  VectorAccess& vector = packing ? packing->vector : std::get<ThreadPlan>(schedule->plan).vector;
  vector.width = static_cast<int>(kVectorWidth);
  for (const auto& [input, read] : input_reads) {
    if (read == RunRead::kRuns) {
      vector.inputs.insert(input);
    } else if (!unmapped.count(input)) {
      vector.uniform_inputs.insert(input);
    }
  }
  for (const auto& [output, inputs] : maps) {
    for (const auto& [input, steps] : inputs) {
      if (vector.inputs.count(input) || vector.uniform_inputs.count(input)) {
        vector.maps[output][input] = steps;
      }
    }
  }
  if (packing) {
    // Each part over its own blocks, a quarter of the threads it had.
    schedule->grid = 0;
    for (size_t p = 0; p < packing->parts.size(); ++p) {
      const std::set<ir::NodeId> part(packing->parts[p].begin(), packing->parts[p].end());
      int64_t part_work = 1;
      for (ir::ValueId output : schedule->boundary.outputs) {
        if (part.count(graph.value(output).producer)) {
          part_work = std::max(part_work, elements_of(graph, output) / kVectorWidth);
        }
      }
      packing->part_grids[p] = wave_grid(part_work, profile, *schedule);
      schedule->grid += packing->part_grids[p];
    }
  } else {
    schedule->block = static_cast<int>(std::min<int64_t>(kGlobalBlock, align_to(work, 32)));
    schedule->grid = wave_grid(work, profile, *schedule);
  }
  schedule->why +=
      "; 4 elements per thread, 128-bit loads and stores (scalar when a pointer is not "
      "16-byte aligned)";
}

// 1c. The transpose composition (see schedule.h): a group of one Transpose reading
// from outside the group. Its dims collapse (size-1 dims dropped, input axes that stay
// adjacent in the output merged) to a batched swap of the last two; both swapped dims
// of at least kTransposeTileMin elements (narrower ones read or write in short runs
// either way).
constexpr int64_t kTransposeTile = 32;
constexpr int64_t kTransposeTileMin = 8;

// 3c. The stencil composition (schedule.h): applies to a thread-composition group
// holding exactly one stencil over two spatial axes whose input plane is its output
// plane (a pool, or a Conv with one input channel per group and one filter per
// channel: depthwise), whose every output is written at the stencil's own index (or
// through a Transpose of it), when each staged element is read by at least
// kStencilTileMinReuse taps and the tile fits the per-block shared memory. Tiles:
// tile_w the output row (up to 32, whole rows for coalesced staging), tile_h rows up
// to the block's outputs, and small planes several to a block. 4b. does the same for
// the one stage of a global composition that evaluates the stencil.
constexpr int64_t kStencilTileOutputs = 256;
constexpr int64_t kStencilTileMaxWidth = 32;

// The group's one stencil node, or kNoId (none, or several).
ir::NodeId only_stencil(const GroupFacts& group) {
  ir::NodeId stencil_id = ir::kNoId;
  for (ir::NodeId id : group.ordered) {
    if (ir::op_kind(group.graph.node(id)) != ir::OpKind::kStencil) continue;
    if (stencil_id != ir::kNoId) return ir::kNoId;
    stencil_id = id;
  }
  return stencil_id;
}

// The tiles of `stencil_id` for blocks of at most `max_outputs` threads (each one
// output): the stencil, planes, tiles, reuse and bytes (not the offset, not the
// launch); nullopt when it cannot be staged or its window does not reuse enough. A tile covers
// whole groups (n, g) of a grouped Conv: the filters_per_group output planes of a group read its
// channels_per_group input planes, so each staged element is read by every filter of its group
// (ResNeXt's and RegNet's 3x3 grouped convs; a depthwise conv or a pool has one of each).
std::optional<StencilTile> plan_stencil_geometry(const ir::Graph& graph, ir::NodeId stencil_id,
                                                 int64_t max_outputs,
                                                 const cost_model::DeviceProfile& profile) {
  const ir::Node& node = graph.node(stencil_id);
  const std::optional<ir::Stencil> stencil = ir::stencil_of(graph, node);
  const size_t axes = stencil ? stencil->window.input.size() : 0;
  if (axes != 1 && axes != 2) return std::nullopt;
  const ir::ValueId input = node.inputs[0], output = node.outputs[0];
  const std::vector<int64_t>& in = dims_of(graph, input);
  const std::vector<int64_t>& out = dims_of(graph, output);
  const int64_t cg = stencil->channels_per_group, mg = stencil->filters_per_group;
  if (in.size() != axes + 2 || out.size() != axes + 2 || in[0] != out[0] || cg <= 0 || mg <= 0 ||
      in[1] % cg != 0 || out[1] != in[1] / cg * mg) {
    return std::nullopt;
  }
  if (!ir::dtype_is_float(graph.value(input).type.dtype)) return std::nullopt;
  const ir::Window w = ir::planar_window(stencil->window);  // a 1-D window: one row
  const int64_t groups = out[0] * (in[1] / cg);             // (n, g): mg output planes each
  const int64_t out_h = w.output[0], out_w = w.output[1];
  const int64_t per_group = max_outputs / mg;  // outputs of one plane per tile
  if (groups <= 0 || out_h <= 0 || out_w <= 0 || per_group <= 0) return std::nullopt;
  // A row of a 2-D plane is cut into 32 columns, so that a tile's halo stays small
  // beside its outputs; a 1-D plane has no rows to stack, so its tiles run longer.
  const int64_t max_width = axes == 1 ? per_group : kStencilTileMaxWidth;
  const int64_t tile_w = std::min({out_w, max_width, per_group});
  const int64_t tile_h = std::min(out_h, std::max<int64_t>(1, per_group / tile_w));
  const int64_t tile_groups =
      tile_h == out_h && tile_w == out_w
          ? std::min(groups, std::max<int64_t>(1, per_group / (tile_h * tile_w)))
          : 1;
  auto extent = [&](int64_t tile, size_t d) {
    return (tile - 1) * w.strides[d] + (w.kernel[d] - 1) * w.dilations[d] + 1;
  };
  const int64_t in_h = extent(tile_h, 0), in_w = extent(tile_w, 1);
  const int64_t element_bytes =
      std::max<int64_t>(4, ir::dtype_size(graph.value(input).type.dtype));  // compute type
  const int64_t bytes = tile_groups * cg * in_h * in_w * element_bytes;
  if (bytes > profile.shared_memory_per_block) return std::nullopt;
  // Each staged element of a group's input plane is read by the taps of its mg filters.
  const double reuse = static_cast<double>(mg * tile_h * tile_w * w.kernel[0] * w.kernel[1]) /
                       static_cast<double>(in_h * in_w);
  if (reuse < kStencilTileMinReuse) return std::nullopt;
  StencilTile tile;
  tile.stencil = stencil_id;
  tile.planes = tile_groups * mg;
  tile.in_planes = tile_groups * cg;
  tile.tile_h = tile_h;
  tile.tile_w = tile_w;
  tile.tile_in_h = in_h;
  tile.tile_in_w = in_w;
  tile.tiles_h = (out_h + tile_h - 1) / tile_h;
  tile.tiles_w = (out_w + tile_w - 1) / tile_w;
  tile.tiles = (groups + tile_groups - 1) / tile_groups * tile.tiles_h * tile.tiles_w;
  tile.reuse = reuse;
  tile.bytes = bytes;
  return tile;
}

}  // namespace

bool staged_stencil_is_1d(const ir::Graph& graph, const StencilTile& tile) {
  return dims_of(graph, graph.node(tile.stencil).outputs[0]).size() == 3;
}

const StencilTile* staged_tile(const GroupSchedule& schedule) {
  if (const StencilPlan* stencil = schedule.as<StencilPlan>()) return &stencil->tile;
  const GlobalPlan* global = schedule.as<GlobalPlan>();
  return global && global->stencil ? &*global->stencil : nullptr;
}

const VectorAccess* vector_access(const GroupSchedule& schedule) {
  if (const ThreadPlan* thread = schedule.as<ThreadPlan>()) return &thread->vector;
  const PackingPlan* packing = schedule.as<PackingPlan>();
  return packing ? &packing->vector : nullptr;
}

namespace {

// "[planes, tile_h, tile_w]" of a staged stencil's tile ("[planes, tile_w]" for a 1-D
// window), for the schedule's "why".
std::string stencil_tile_text(const ir::Graph& graph, const StencilTile& tile) {
  const bool one_row = staged_stencil_is_1d(graph, tile);
  return "[" + num(tile.planes) + ", " + (one_row ? std::string() : num(tile.tile_h) + ", ") +
         num(tile.tile_w) + "]";
}

bool plan_stencil_tile(const GroupFacts& group, const cost_model::DeviceProfile& profile,
                       GroupSchedule* schedule) {
  const ir::NodeId stencil_id = only_stencil(group);
  if (stencil_id == ir::kNoId) return false;
  std::map<ir::ValueId, ir::NodeId> moved;
  if (!outputs_at_same_index(group.graph, group.ordered, group.outputs,
                             group.graph.node(stencil_id).outputs[0], &moved)) {
    return false;
  }
  std::optional<StencilTile> tile =
      plan_stencil_geometry(group.graph, stencil_id, kStencilTileOutputs, profile);
  if (!tile) return false;
  schedule->block = static_cast<int>((tile->planes * tile->tile_h * tile->tile_w + 31) / 32 * 32);
  schedule->shared_bytes = tile->bytes;
  schedule->shared_bytes_requested = tile->bytes;
  schedule->grid = std::max<int64_t>(1, std::min(tile->tiles, blocks_per_wave(profile, *schedule)));
  schedule->cooperative = false;
  schedule->plan = StencilPlan{*tile, std::move(moved)};
  return true;
}

// 4b. A global composition's one stencil, evaluated by exactly one stage: the stage of
// the one materialized value (or group output no node of the group reads, which
// would compute it again inline) V that reads it, through values
// computed inline, each at its reader's own index (EfficientNet's MBConv: the SiLU
// after the depthwise conv, materialized for the squeeze-excitation mean and the gated
// product). V's stage then walks the stencil's tiles (KernelWriter::global_stages):
// the staged input tile sits after the arena's other allocations. Not when V is a
// reduction, a GEMM or written a warp per element, or when the co-resident blocks the
// cooperative launch counts on would not fit the SMs' shared memory.
bool plan_global_stencil_tile(const GroupFacts& group, const cost_model::DeviceProfile& profile,
                              GroupSchedule* schedule) {
  const ir::Graph& graph = group.graph;
  const ir::NodeId stencil_id = only_stencil(group);
  if (stencil_id == ir::kNoId) return false;
  // From the stencil's value along inlined values read at their readers' own index, to
  // the one value whose stage evaluates it.
  ir::ValueId staged = ir::kNoId;
  std::vector<ir::ValueId> frontier = {graph.node(stencil_id).outputs[0]};
  std::set<ir::ValueId> seen(frontier.begin(), frontier.end());
  while (!frontier.empty()) {
    const ir::ValueId value = frontier.back();
    frontier.pop_back();
    const ValueSchedule& schedule_of = schedule->values.at(value);
    if (schedule_of.materialized || group.outputs.count(value)) {
      // Only V's stage may evaluate the stencil: a group output that is not
      // materialized is computed again inline by its readers in the group.
      const bool read_inside =
          std::any_of(graph.value(value).users.begin(), graph.value(value).users.end(),
                      [&](const ir::Use& use) { return group.inside.count(use.node) > 0; });
      if (!schedule_of.materialized && read_inside) return false;
      if (staged != ir::kNoId && staged != value) return false;
      staged = value;
      continue;
    }
    for (const ir::Use& use : graph.value(value).users) {
      if (!group.inside.count(use.node)) return false;
      const ir::Node& reader = graph.node(use.node);
      if (!reads_at_same_index(graph, reader, value)) return false;
      for (ir::ValueId output : reader.outputs) {
        if (output != ir::kNoId && seen.insert(output).second) frontier.push_back(output);
      }
    }
  }
  if (staged == ir::kNoId) return false;
  const ValueSchedule& target = schedule->values.at(staged);
  const ir::OpKind kind = ir::op_kind(graph.node(graph.value(staged).producer));
  if (kind == ir::OpKind::kReduction || kind == ir::OpKind::kGemm ||
      target.mapping != ReductionMapping::kThread || target.lanes_over_k ||
      target.epilogue_of != ir::kNoId) {
    return false;
  }
  std::optional<StencilTile> tile =
      plan_stencil_geometry(graph, stencil_id, schedule->block, profile);
  if (!tile) return false;
  const int64_t offset = align_to(schedule->shared_bytes, 16);
  const int64_t arena = offset + tile->bytes;
  const int64_t resident = std::max(1, profile.max_threads_per_sm / schedule->block);
  if (arena > profile.shared_memory_per_block || arena * resident > profile.shared_memory_per_sm) {
    return false;
  }
  tile->staged_value = staged;
  tile->offset = offset;
  schedule->shared_bytes = arena;
  schedule->shared_bytes_requested = align_to(schedule->shared_bytes_requested, 16) + tile->bytes;
  std::get<GlobalPlan>(schedule->plan).stencil = std::move(tile);
  return true;
}

bool plan_transpose(const ir::Graph& graph, const std::vector<ir::NodeId>& ordered,
                    const cost_model::DeviceProfile& profile, GroupSchedule* schedule) {
  if (ordered.size() != 1) return false;
  const ir::Node& node = graph.node(ordered[0]);
  if (node.op_type != "Transpose" || !node.domain.empty() || node.inputs.size() != 1) return false;
  const std::vector<int64_t>& in = dims_of(graph, node.inputs[0]);
  const std::vector<int64_t> perm = transpose_perm(node, in.size());
  if (perm.size() != in.size()) return false;
  // Output positions of the input axes of size > 1, merged where consecutive input
  // axes stay consecutive in the output.
  std::vector<std::pair<int64_t, int64_t>> runs;  // (first output position, elements)
  std::vector<int64_t> output_position(in.size());
  for (size_t o = 0; o < perm.size(); ++o) {
    if (perm[o] < 0 || perm[o] >= static_cast<int64_t>(in.size())) return false;
    output_position[static_cast<size_t>(perm[o])] = static_cast<int64_t>(o);
  }
  int64_t previous = -2;
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] == 1) continue;
    if (!runs.empty() && output_position[d] == previous + 1) {
      runs.back().second *= in[d];
    } else {
      runs.emplace_back(output_position[d], in[d]);
    }
    previous = output_position[d];
  }
  // Batched swap: the runs' output order is 0, 1, ..., k-1, k+1, k. Leading runs that
  // stay in order merge into one batch.
  const size_t n = runs.size();
  if (n < 2) return false;
  for (size_t r = 0; r + 2 < n; ++r) {
    if (runs[r].first > runs[r + 1].first) return false;
  }
  if (n >= 3 && runs[n - 3].first > runs[n - 1].first) return false;
  if (runs[n - 2].first < runs[n - 1].first) return false;
  const int64_t rows = runs[n - 2].second, cols = runs[n - 1].second;
  if (rows < kTransposeTileMin || cols < kTransposeTileMin) return false;
  int64_t batch = 1;
  for (size_t r = 0; r + 2 < n; ++r) batch *= runs[r].second;
  schedule->plan = TransposePlan{batch, rows, cols};
  schedule->block = 256;
  const int64_t tile_bytes =
      kTransposeTile * (kTransposeTile + 1) *
      std::max<int64_t>(4, ir::dtype_size(graph.value(node.inputs[0]).type.dtype));
  schedule->shared_bytes = tile_bytes;
  schedule->shared_bytes_requested = tile_bytes;
  const int64_t tiles = batch * ((rows + kTransposeTile - 1) / kTransposeTile) *
                        ((cols + kTransposeTile - 1) / kTransposeTile);
  schedule->grid = std::max<int64_t>(1, std::min(tiles, blocks_per_wave(profile, *schedule)));
  schedule->cooperative = false;
  schedule->workspace_bytes = 0;
  return true;
}

}  // namespace

Result<GroupSchedule> build_schedule(const ir::Graph& graph, const GroupBoundary& boundary,
                                     const cost_model::DeviceProfile& profile,
                                     const ScheduleOptions& options) {
  GroupSchedule schedule;
  schedule.boundary = boundary;
  GroupFacts group(graph, schedule.boundary);
  for (ir::NodeId id : group.ordered) {
    STITCH_RETURN_IF_ERROR(check_static(graph, graph.node(id)));
  }
  STITCH_RETURN_IF_ERROR(materialize(group, &schedule));
  if (plan_attention(graph, group.ordered, group.outputs, profile, &schedule)) {
    schedule.why = "it holds the attention core " +
                   node_label(graph.node(schedule.as<AttentionPlan>()->core.scores_gemm)) + " .. " +
                   node_label(graph.node(schedule.as<AttentionPlan>()->core.output_gemm)) +
                   " whole: its scores never leave the chip";
    return schedule;
  }
  if (plan_transpose(graph, group.ordered, profile, &schedule)) {
    const TransposePlan& transpose = *schedule.as<TransposePlan>();
    schedule.why = "a Transpose that moves its input's last axis ([" + num(transpose.batch) + ", " +
                   num(transpose.rows) + ", " + num(transpose.cols) +
                   "] -> [.., cols, rows]): 32 x 32 tiles through shared memory keep both the "
                   "reads and the writes coalesced";
    return schedule;
  }
  mark_row_varying(group, &schedule);

  std::string not_row_local;
  STITCH_ASSIGN_OR_RETURN(int64_t rows, reduction_rows(group, &not_row_local));
  if (rows >= 0 && rows_split_values(group, rows, &schedule, &not_row_local)) {
    STITCH_CHECK(rows > 0) << "a row-local group without rows";
    const std::string launch_note = plan_row_launch(group, rows, profile, &schedule);
    schedule.why = "every reduction reduces the last axes of the same " + num(rows) +
                   " rows and every read stays in its row" + launch_note;
    for (const auto& [id, value] : schedule.values) {
      if (!value.rows_moved) continue;
      schedule.why += "; " + node_label(graph.node(graph.value(id).producer)) +
                      " moves whole rows, so each row is written where it lands";
    }
    if (const RowPlan& row = *schedule.as<RowPlan>(); row.split()) {
      schedule.why +=
          "; the rows fill too few blocks, so each is split across " + num(row.blocks_per_row);
      plan_split_rows(graph, group.ordered, group.outputs, &schedule);
      return schedule;
    }
    STITCH_RETURN_IF_ERROR(plan_row_storage(group, profile, &schedule));
    return schedule;
  }
  std::string not_tiled;
  if (plan_tiled_gemm(graph, group.ordered, group.outputs, profile, &schedule, &not_tiled)) {
    schedule.why = "one fine-grained MatMul " +
                   node_label(graph.node(schedule.as<TiledGemmPlan>()->gemm)) +
                   " whose readers read it at their own index: A and B tiles in shared memory";
    return schedule;
  }
  const std::vector<std::string> recomputed = recompute_cheap_producers(group, profile, &schedule);
  STITCH_ASSIGN_OR_RETURN(MappingUse use, plan_levels(group, profile, &schedule));
  plan_global_launch(group, profile, &schedule);
  if (schedule.cooperative) {
    schedule.why = "not row-local: " + not_row_local;
    if (!not_tiled.empty()) schedule.why += "; not a tiled MatMul: " + not_tiled;
    schedule.why += "; so " + num(schedule.levels) + " stages separated by grid barriers";
    if (options.stencil_tiles && plan_global_stencil_tile(group, profile, &schedule)) {
      const StencilTile& tile = *staged_tile(schedule);
      schedule.why +=
          "; the stage of " + node_label(graph.node(graph.value(tile.staged_value).producer)) +
          " walks the stencil " + node_label(graph.node(tile.stencil)) + " in tiles of " +
          stencil_tile_text(graph, tile) + " outputs, its input tile staged in shared memory";
    }
  } else {
    plan_single_stage(group, use, profile, &schedule);
    const PackingPlan* packing = schedule.as<PackingPlan>();
    const ThreadPlan* thread = schedule.as<ThreadPlan>();
    schedule.why = packing ? num(static_cast<int64_t>(packing->parts.size())) +
                                 " independent parts, each over its own blocks"
                           : "one stage: every value is computed where it is read, or by its own "
                             "thread mapping";
    if (thread && thread->mapping == StageMapping::kThread && options.stencil_tiles &&
        plan_stencil_tile(group, profile, &schedule)) {
      const StencilTile& tile = *staged_tile(schedule);
      const ir::Node& stencil = graph.node(tile.stencil);
      char reuse[32];
      std::snprintf(reuse, sizeof(reuse), "%.1f", tile.reuse);
      schedule.why = "one stencil " + node_label(stencil) +
                     " whose readers read it at their own index, and its window reads each "
                     "input element " +
                     reuse + " times: the input tile of each " + stencil_tile_text(graph, tile) +
                     " outputs is staged in shared memory";
    }
    if ((schedule.as<ThreadPlan>() &&
         schedule.as<ThreadPlan>()->mapping == StageMapping::kThread) ||
        schedule.as<PackingPlan>()) {
      plan_vector_access(group, profile, &schedule);
    }
  }
  if (!recomputed.empty()) {
    // The first few by name: an unrolled RNN inlines one per step.
    std::string names;
    for (size_t r = 0; r < recomputed.size() && r < 3; ++r) {
      names += (r ? ", " : "") + recomputed[r];
    }
    if (recomputed.size() > 3) {
      names += " and " + num(static_cast<int64_t>(recomputed.size() - 3)) + " more";
    }
    schedule.why +=
        "; recomputed at each read rather than materialized behind a grid barrier "
        "(estimated cheaper): " +
        names;
  }
  return schedule;
}

}  // namespace stitch::emit

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

double element_reads(const ir::Graph& graph, const GroupSchedule& schedule,
                     const std::set<ir::NodeId>& inside, ir::ValueId id) {
  std::set<ir::ValueId> leaves, visited;
  element_leaves(graph, schedule, inside, id, &leaves, &visited);
  return static_cast<double>(leaves.size());
}

// The lanes that evaluate the elements of the inlined value `id`: all `lanes`, unless a
// reduction reads it (through values computed inline) in a thread or warp mapping of
// the thread, packing, global or tiled-MatMul compositions, whose threads (a thread
// or a warp of slices per output) then evaluate it: a pool averaged into the 32
// elements of a classifier's A tile is walked by 32 threads, not by the block.
double evaluating_lanes(const ir::Graph& graph, const GroupSchedule& schedule,
                        const std::set<ir::NodeId>& inside, ir::ValueId id, double lanes) {
  if (schedule.as<RowPlan>() || schedule.as<AttentionPlan>()) return lanes;
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

}  // namespace

cost_model::KernelShape kernel_shape(const ir::Graph& graph, const GroupSchedule& schedule) {
  cost_model::KernelShape shape;
  shape.global = schedule.as<GlobalPlan>() != nullptr;
  const AttentionPlan* attention = schedule.as<AttentionPlan>();
  const TiledGemmPlan* tiled = schedule.as<TiledGemmPlan>();
  const ir::NodeId tiled_gemm = tiled ? tiled->gemm : ir::kNoId;
  const StencilTile* tile = staged_tile(schedule);
  shape.grid_barriers = schedule.cooperative ? std::max(schedule.levels - 1, 0) : 0;
  shape.workspace_bytes = schedule.workspace_bytes;
  double recomputed_macs = 0;  // the attention prologue's, over the launch
  for (ir::NodeId id : schedule.boundary.ordered_nodes) {
    const ir::Node& node = graph.node(id);
    if (ir::op_kind(node) != ir::OpKind::kGemm) continue;
    const std::optional<ir::GemmShape> gemm = ir::gemm_shape(graph, node);
    if (!gemm) continue;
    const double macs = static_cast<double>(gemm->batch) * static_cast<double>(gemm->m) *
                        static_cast<double>(gemm->n) * static_cast<double>(gemm->k);
    if (attention) {
      // The core's GEMMs from shared tiles; the prologue's recomputed per read.
      const bool core = id == attention->core.scores_gemm || id == attention->core.output_gemm;
      if (!core) {
        recomputed_macs += macs * static_cast<double>(attention->recompute);
      } else if (!attention->tensor_cores) {
        shape.attention_macs += macs;
      }
      continue;
    }
    (id == tiled_gemm ? shape.tiled_gemm_macs : shape.thread_gemm_macs) += macs;
  }
  // Recomputed per read, one output per thread; each lane walks its share of those dot
  // products one load after another, two loads per multiply-add.
  shape.thread_gemm_macs += recomputed_macs;
  const double lanes = static_cast<double>(schedule.grid) * static_cast<double>(schedule.block);
  if (recomputed_macs > 0 && lanes > 0) shape.load_chain = 2 * recomputed_macs / lanes;
  const std::set<ir::NodeId> inside(schedule.boundary.ordered_nodes.begin(),
                                    schedule.boundary.ordered_nodes.end());
  // Stencils: a lane evaluates its share of each stencil's elements (at least one),
  // each walking every tap: one read of what the input reads inline, and the weight.
  for (ir::NodeId id : schedule.boundary.ordered_nodes) {
    const ir::Node& node = graph.node(id);
    if (ir::op_kind(node) != ir::OpKind::kStencil || lanes <= 0) continue;
    const std::optional<ir::Stencil> stencil = ir::stencil_of(graph, node);
    if (!stencil) continue;
    const double evaluations =
        std::max(1.0, std::ceil(static_cast<double>(elements_of(graph, node.outputs[0])) /
                                evaluating_lanes(graph, schedule, inside, node.outputs[0], lanes)));
    const double reads = element_reads(graph, schedule, inside, node.inputs[0]);
    const double weight = node.op_type == "Conv" ? 1.0 : 0.0;
    if (tile && id == tile->stencil) {
      // Staged (3c.): per tile, a lane loads its share of the input tile (each element
      // one read of what the input reads inline), then walks its taps in shared memory
      // (only the weight from global memory).
      const double tiles = std::ceil(static_cast<double>(tile->tiles) /
                                     static_cast<double>(std::max<int64_t>(schedule.grid, 1)));
      const double staged =
          std::ceil(static_cast<double>(tile->in_planes * tile->tile_in_h * tile->tile_in_w) /
                    static_cast<double>(schedule.block));
      shape.stencil_load_chain +=
          tiles * (staged * reads + static_cast<double>(stencil->taps) * weight);
      continue;
    }
    shape.stencil_load_chain += evaluations * static_cast<double>(stencil->taps) * (reads + weight);
  }
  // The dot products and reductions of the thread, packing and global compositions: in
  // each stage a lane walks its share of the stage's loops (side by side over the grid),
  // each term one read of every operand, an operand computed inline reading what its
  // expression reads (a LayerNorm's normalized row read by the next GEMM: its input, the
  // mean, the variance, the scale and the shift): k terms for a thread per GEMM output,
  // k / 32 for a warp per output (lanes_over_k), the reduced elements for a thread per
  // reduction output, their share for a warp's lane; at least one item's worth. The
  // stages follow one another across the grid barriers, as the emulation's critical
  // path sums them.
  const ThreadPlan* thread = schedule.as<ThreadPlan>();
  const bool stage_loops = (thread && thread->mapping == StageMapping::kThread) ||
                           schedule.as<PackingPlan>() || schedule.as<GlobalPlan>();
  if (stage_loops && lanes > 0) {
    std::map<int, std::pair<double, double>> stages;  // level -> (spread, one item)
    for (ir::NodeId id : schedule.boundary.ordered_nodes) {
      const ir::Node& node = graph.node(id);
      const ir::OpKind kind = ir::op_kind(node);
      if ((kind != ir::OpKind::kGemm && kind != ir::OpKind::kReduction) || id == tiled_gemm ||
          node.outputs.empty() || node.inputs.empty()) {
        continue;
      }
      const auto value = schedule.values.find(node.outputs[0]);
      if (value == schedule.values.end() || !value->second.materialized) continue;
      const ValueSchedule& v = value->second;
      double loads = 0;
      if (kind == ir::OpKind::kGemm) {
        const std::optional<ir::GemmShape> gemm = ir::gemm_shape(graph, node);
        if (!gemm || node.inputs.size() < 2) continue;
        const double terms = v.lanes_over_k ? std::ceil(static_cast<double>(gemm->k) / 32.0)
                                            : static_cast<double>(gemm->k);
        loads = terms * (element_reads(graph, schedule, inside, node.inputs[0]) +
                         element_reads(graph, schedule, inside, node.inputs[1]));
      } else if (v.mapping == ReductionMapping::kThread || v.mapping == ReductionMapping::kWarp) {
        // (A thread-mapped reduction keeps v.reduced at 1: its elements per output.)
        const int64_t outputs = std::max<int64_t>(elements_of(graph, node.outputs[0]), 1);
        const double reduced =
            static_cast<double>(std::max<int64_t>(elements_of(graph, node.inputs[0]) / outputs, 1));
        const double terms = v.mapping == ReductionMapping::kThread
                                 ? reduced
                                 : std::ceil(reduced / 32.0 / static_cast<double>(v.slices));
        loads = terms * element_reads(graph, schedule, inside, node.inputs[0]);
      } else {
        continue;
      }
      const double threads = static_cast<double>(stage_threads(graph, node.outputs[0], v));
      auto& [spread, one_item] = stages[v.level];
      spread += threads * loads / lanes;
      one_item = std::max(one_item, loads);
    }
    for (const auto& [level, stage] : stages) {
      shape.gemm_load_chain += std::max(stage.first, stage.second);
    }
  }
  return shape;
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
