// The row-local compositions' planner (emit/schedule.h, 2.; row_planner.h).
#include "emit/compositions/rows/row_planner.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "emit/compositions/group_facts.h"
#include "emit/cuda_text.h"
#include "emit/op_lowering.h"
#include "emit/shared_memory_plan.h"
#include "ir/core/analysis.h"
#include "ir/core/op_registry.h"
#include "ir/core/reduction_axes.h"

namespace stitch::emit {
namespace {

constexpr int kWarpsPerBlock = 8;             // warp composition: at most, when rows allow
constexpr int kElementsPerLane = 4;           // short rows: lanes per row so that each reads 4
constexpr int64_t kFewRowsLaneElements = 16;  // few rows: a block each past this per lane
constexpr int64_t kWarpRowLimit = 1024;       // longer rows get a block each

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

int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t result = 1;
  for (size_t d = begin; d < end; ++d) result *= dims[d];
  return result;
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

// A Transpose of a row-varying `operand` that moves whole rows (the axes after the
// rows' stay in place at the end), writing a group output that nothing else in the
// group reads: each row is written where it lands (issue 16 part 2), not read back
// from another row. PyTorch's sequence-first layers ([S, B, E] <-> [B, S, E]).
bool moves_whole_rows(const GroupFacts& group, const ir::Node& reader, ir::ValueId operand,
                      int64_t rows) {
  if (!permutes_axes(reader) || reader.inputs.size() != 1) {
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

// Phases and workspace of a split-rows schedule: a value is written in the phase in
// which all it reads is available; a reduction's partials are written in that phase
// and its combined result is available one phase (one grid barrier) later. The
// workspace holds the barrier counter, each reduction's [rows, blocks_per_row]
// partials and the materialized row-sized values (read across barriers, so global).
void plan_split_rows(const ir::Graph& graph, const std::vector<ir::NodeId>& ordered,
                     const std::set<ir::ValueId>& outputs, GroupSchedule* schedule) {
  RowPlan& row = std::get<RowPlan>(schedule->plan);
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
  // The last phase computes nothing when every value it waits for is a reduction
  // output (combined there only to be written); from 3 phases on, the reductions' own
  // phase follows a barrier, behind which their arrivals can be counted.
  bool computes_in_last = false;
  for (ir::NodeId id : ordered) {
    for (ir::ValueId output : graph.node(id).outputs) {
      if (output != ir::kNoId && schedule->values[output].level == phases - 1)
        computes_in_last = true;
    }
  }
  row.last_block_done = phases >= 3 && !computes_in_last;
  if (row.last_block_done) --phases;
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
      } else {
        place_written_value(graph, output, outputs.count(output) > 0, &value, &workspace);
      }
    }
  }
  if (row.last_block_done) {
    row.done_offset = workspace;
    workspace += align_to(row.rows * 4, kWorkspaceAlignment);
  }
  schedule->workspace_bytes = workspace;
  schedule->block = static_cast<int>(std::min<int64_t>(schedule->block, align_to(row.slice, 32)));
  schedule->grid = row.rows * row.blocks_per_row;
  schedule->cooperative = true;
  schedule->shared_bytes = kBlockScratchBytes;
  schedule->shared_bytes_requested = kBlockScratchBytes;
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
    STITCH_ASSIGN_OR_RETURN(std::vector<int64_t> axes, ir::reduction_axes(graph, node, &noop));
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

// Whether splitting each row across `split` blocks pays for what the split adds: a
// grid barrier per reduction (each phase waits for every block's partials) against the
// time a block-per-row kernel spends on its row beyond what `split` blocks would. A
// block is charged its SM's share of the DRAM bandwidth for the row's bytes (the
// row-varying values it reads from outside the group and writes for outside): at
// word2vec's 64 rows of 2000 floats that is 1.1 us, less than two grid barriers, and
// the split kernel was 1.46x slower in the emulated profile (10.8 against 7.4 us).
bool row_split_pays(const GroupFacts& group, const GroupSchedule& schedule, int64_t split,
                    const cost_model::DeviceProfile& profile) {
  const ir::Graph& graph = group.graph;
  const int64_t rows = std::max<int64_t>(std::get<RowPlan>(schedule.plan).rows, 1);
  std::set<ir::ValueId> moved(group.outputs.begin(), group.outputs.end());
  for (ir::NodeId id : group.ordered) {
    for (ir::ValueId input : graph.node(id).inputs) {
      if (input == ir::kNoId) continue;
      const ir::NodeId producer = graph.value(input).producer;
      if (producer == ir::kNoId || group.inside.count(producer) == 0) moved.insert(input);
    }
  }
  double row_bytes = 0;
  for (ir::ValueId id : moved) {
    const int64_t row_elements = elements_of(graph, id) / rows;
    if (row_elements <= 1) continue;  // per-row scalars and broadcast operands
    row_bytes += static_cast<double>(row_elements) *
                 static_cast<double>(ir::dtype_size(graph.value(id).type.dtype));
  }
  const double sm_bandwidth = profile.peak_dram_bytes_per_second / std::max(1, profile.sm_count);
  const double row_us = row_bytes / sm_bandwidth * 1e6;
  const double saved_us = row_us * (1.0 - 1.0 / static_cast<double>(split));
  const double barriers_us =
      static_cast<double>(std::max<size_t>(group.reductions.size(), 1)) * profile.grid_barrier_us;
  return saved_us > barriers_us;
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
    if (split >= 2 && row_split_pays(group, *schedule, split, profile)) {
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

// Whether every op of the group keeps a run's consecutive elements consecutive (or
// equal) on the way to what the group stores or reduces along its rows: elementwise
// ops, broadcasts, views and row reductions. A Gather, Slice or Transpose reads its
// operand at indices a run's window does not hold: an embedding table read through its
// ids would reload the window and the ids at every element, and the runs would make
// its scalar reads stride 16 bytes per lane.
bool reads_in_runs(const GroupFacts& group) {
  for (ir::NodeId id : group.ordered) {
    const ir::Node& node = group.graph.node(id);
    const ir::OpKind kind = ir::op_kind(node);
    const OpLowering* lowering = find_op_lowering(node);
    if (kind != ir::OpKind::kElementwise && kind != ir::OpKind::kBroadcast &&
        kind != ir::OpKind::kView && kind != ir::OpKind::kReduction &&
        !(lowering && lowering->passes_through)) {
      return false;
    }
  }
  return true;
}

// 2. 128-bit row accesses (issue 40, lean inner loops): each lane walks its row in runs
// of 4 consecutive elements, the float32 inputs along the rows read through 16-byte
// windows and the float32 row outputs stored a run at a time (OneFlow's LayerNorm and
// softmax load packs of 4 the same way). Only for rows every lane still has a run of,
// and for groups whose values live in registers or the outputs: the runs would make
// a row buffer's shared reads 4-way bank conflicts and a workspace row's reads
// stride 16 bytes per lane. Nor for groups with a Gather, Slice or Transpose
// (reads_in_runs).
void plan_row_vectors(const GroupFacts& group, GroupSchedule* schedule) {
  const ir::Graph& graph = group.graph;
  RowPlan& row = std::get<RowPlan>(schedule->plan);
  const int64_t lanes = row.warp ? row.lanes_per_row : schedule->block;
  if (row.split() || row.row_length % 4 != 0 || 4 * lanes > row.row_length ||
      !reads_in_runs(group)) {
    return;
  }
  for (const auto& [id, value] : schedule->values) {
    if (value.rows_moved || value.storage == Storage::kShared ||
        value.storage == Storage::kWorkspace) {
      return;
    }
  }
  VectorAccess vector;
  auto runs = [&](ir::ValueId id) {
    const ir::TensorType& type = graph.value(id).type;
    return type.dtype == ir::DType::kFloat32 && !type.dims.empty() && type.dims.back() % 4 == 0 &&
           type.num_elements() % 4 == 0;
  };
  for (ir::ValueId id : schedule->boundary.inputs) {
    if (runs(id) && !is_baked_scalar(graph.value(id))) vector.inputs.insert(id);
  }
  bool stores = false;
  for (ir::ValueId id : schedule->boundary.outputs) {
    const int64_t row_elements = schedule->values.at(id).row_elements;
    if (!runs(id) || row_elements < 4 || row_elements % 4 != 0 ||
        ir::op_kind(graph.node(graph.value(id).producer)) == ir::OpKind::kReduction) {
      continue;
    }
    stores = true;
    // An output the group reads back after storing it: through windows too.
    if (schedule->values.at(id).materialized) vector.inputs.insert(id);
  }
  if (vector.inputs.empty() && !stores) return;
  vector.width = 4;
  vector.windows_follow_reads = true;
  row.vector = std::move(vector);
  schedule->why +=
      "; each lane walks runs of 4 elements with 128-bit loads and stores (element by "
      "element when a pointer is not 16-byte aligned)";
}

}  // namespace

Result<RuleOutcome> try_rows(PlanningContext& context, GroupSchedule* schedule) {
  const GroupFacts& group = context.group;
  const ir::Graph& graph = group.graph;
  mark_row_varying(group, schedule);
  std::string not_row_local;
  STITCH_ASSIGN_OR_RETURN(int64_t rows, reduction_rows(group, &not_row_local));
  if (rows < 0 || !rows_split_values(group, rows, schedule, &not_row_local)) {
    return RuleOutcome(Refusal{"row-local", not_row_local});
  }
  STITCH_CHECK(rows > 0) << "a row-local group without rows";
  const std::string launch_note = plan_row_launch(group, rows, context.profile, schedule);
  schedule->why = "every reduction reduces the last axes of the same " + num(rows) +
                  " rows and every read stays in its row" + launch_note;
  for (const auto& [id, value] : schedule->values) {
    if (!value.rows_moved) continue;
    schedule->why += "; " + node_label(graph.node(graph.value(id).producer)) +
                     " moves whole rows, so each row is written where it lands";
  }
  if (const RowPlan& row = *schedule->as<RowPlan>(); row.split()) {
    schedule->why +=
        "; the rows fill too few blocks, so each is split across " + num(row.blocks_per_row);
    plan_split_rows(graph, group.ordered, group.outputs, schedule);
    return RuleOutcome();
  }
  STITCH_RETURN_IF_ERROR(plan_row_storage(group, context.profile, schedule));
  plan_row_vectors(group, schedule);
  return RuleOutcome();
}

}  // namespace stitch::emit
