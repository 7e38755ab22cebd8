// The staged stencil's planner: the stencil composition and the global
// composition's staged stage (emit/schedule.h, 3c., 4b.).
#include "emit/compositions/stencil/stencil_planner.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "emit/compositions/group_facts.h"
#include "emit/cuda_text.h"
#include "ir/core/op_registry.h"
#include "ir/core/reduction_axes.h"
#include "ir/core/tensor.h"
#include "ir/core/window.h"

namespace stitch::emit {
namespace {

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

// The arena after staging the filters of `tile`'s Conv beside what it already holds
// (`arena` bytes): when the weights come from outside the group, only the stencil reads
// them, and the arena still fits a block and its co-resident neighbours (the stencil
// composition keeps its occupancy). `arena` unchanged, and no filters staged, otherwise.
// Only the stencil composition (3c.) stages filters: in a global kernel's stencil stage
// (4b.) the emulated profile estimates them slower (EfficientNet-B0 197 -> 219 us,
// RegNetY-400MF 333 -> 373), the analytic estimate faster, and the difference is the
// emulated latency term's kernel-wide share of waited loads: the weight loads it
// removes were the well-overlapped ones, so the critical warp's other loads (the
// squeeze-excitation stages') are charged as waited. A GPU decides that one
// (docs/benchmarks.md, "Spatial means from registers, last-block runs from stage 1,
// staged filters").
int64_t stage_filters(const GroupFacts& group, const cost_model::DeviceProfile& profile, int block,
                      int64_t arena, StencilTile* tile) {
  const ir::Graph& graph = group.graph;
  const ir::Node& node = graph.node(tile->stencil);
  if (node.op_type != "Conv" || node.inputs.size() < 2 || node.inputs[1] == ir::kNoId) {
    return arena;
  }
  const ir::ValueId weights = node.inputs[1];
  const ir::Value& value = graph.value(weights);
  if (group.inside.count(value.producer) || is_baked_scalar(value) ||
      !ir::dtype_is_float(value.type.dtype)) {
    return arena;
  }
  for (const ir::Use& use : value.users) {
    if (group.inside.count(use.node) && use.node != tile->stencil) return arena;
  }
  const std::vector<int64_t>& dims = dims_of(graph, weights);
  if (dims.empty() || dims[0] <= 0) return arena;
  const int64_t row = ir::dims_product(dims) / dims[0];
  const int64_t element_bytes = std::max<int64_t>(4, ir::dtype_size(value.type.dtype));
  const int64_t offset = align_to(arena, 16);
  const int64_t staged = offset + tile->planes * row * element_bytes;
  const int64_t resident = std::max(1, profile.max_threads_per_sm / std::max(block, 1));
  if (staged > profile.shared_memory_per_block ||
      staged * resident > profile.shared_memory_per_sm) {
    return arena;
  }
  tile->filter_offset = offset;
  tile->filter_row = row;
  return staged;
}

}  // namespace

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
  schedule->shared_bytes = stage_filters(group, profile, schedule->block, tile->bytes, &*tile);
  schedule->shared_bytes_requested = schedule->shared_bytes;
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
  // The filters stay in global memory here (stage_filters says why).
  schedule->shared_bytes = arena;
  schedule->shared_bytes_requested = align_to(schedule->shared_bytes_requested, 16) + tile->bytes;
  std::get<GlobalPlan>(schedule->plan).stencil = tile;
  return true;
}

namespace {

// Whether `node` is a ReduceMean or ReduceSum of exactly `staged`'s spatial axes (every
// axis after N and C), float32 in and out, written whole by its own stage.
bool reduces_planes(const GroupFacts& group, const GroupSchedule& schedule, const ir::Node& node,
                    ir::ValueId staged) {
  const ir::Graph& graph = group.graph;
  if (!node.domain.empty() || (node.op_type != "ReduceMean" && node.op_type != "ReduceSum") ||
      node.inputs.empty() || node.inputs[0] != staged || node.outputs.empty()) {
    return false;
  }
  const ir::ValueId out = node.outputs[0];
  if (graph.value(staged).type.dtype != ir::DType::kFloat32 ||
      graph.value(out).type.dtype != ir::DType::kFloat32) {
    return false;
  }
  const auto found = schedule.values.find(out);
  if (found == schedule.values.end()) return false;
  const ValueSchedule& value = found->second;
  if ((!value.materialized && !group.outputs.count(out)) || value.slices >= 2 ||
      value.epilogue_of != ir::kNoId || value.accumulator_bytes != 4) {
    return false;
  }
  bool noop = false;
  Result<std::vector<int64_t>> axes = ir::reduction_axes(graph, node, &noop);
  const size_t rank = dims_of(graph, staged).size();
  if (!axes.is_ok() || noop || rank < 3 || axes->size() != rank - 2) return false;
  for (size_t a = 0; a < axes->size(); ++a) {
    if ((*axes)[a] != static_cast<int64_t>(a + 2)) return false;
  }
  return true;
}

// Drops the levels no value is computed in (nor a sliced reduction's partials written
// in), renumbering the others and `stage_work` in order.
void drop_empty_levels(const GroupFacts& group, GroupSchedule* schedule,
                       std::map<int, int64_t>* stage_work) {
  std::vector<char> used(static_cast<size_t>(schedule->levels), 0);
  for (const auto& [id, value] : schedule->values) {
    if (value.level < 0 || value.level >= schedule->levels) continue;
    if (!value.materialized && !group.outputs.count(id)) continue;  // inlined: no stage
    used[static_cast<size_t>(value.level)] = 1;
    if (value.slices >= 2 && value.level > 0) used[static_cast<size_t>(value.level - 1)] = 1;
  }
  used[0] = 1;
  std::vector<int> renumbered(used.size(), 0);
  int next = 0;
  for (size_t level = 0; level < used.size(); ++level) {
    renumbered[level] = used[level] ? next++ : std::max(next - 1, 0);
  }
  if (next == schedule->levels) return;
  for (auto& [id, value] : schedule->values) {
    if ((value.materialized || group.outputs.count(id)) && value.level > 0 &&
        value.level < schedule->levels) {
      value.level = renumbered[static_cast<size_t>(value.level)];
    }
  }
  std::map<int, int64_t> work;
  for (const auto& [level, threads] : *stage_work) {
    if (level < 0 || level >= schedule->levels) continue;
    int64_t& slot = work[renumbered[static_cast<size_t>(level)]];
    slot = std::max(slot, threads);
  }
  *stage_work = std::move(work);
  schedule->levels = next;
}

}  // namespace

int fold_plane_reductions(const GroupFacts& group, const cost_model::DeviceProfile& profile,
                          GroupSchedule* schedule, std::map<int, int64_t>* stage_work) {
  const ir::Graph& graph = group.graph;
  GlobalPlan* plan = schedule->as<GlobalPlan>();
  if (plan == nullptr || !plan->stencil) return 0;
  StencilTile& tile = *plan->stencil;
  const ir::ValueId staged = tile.staged_value;
  if (dims_of(graph, staged) != dims_of(graph, graph.node(tile.stencil).outputs[0])) return 0;
  std::vector<ir::ValueId> folded;
  for (const ir::Use& use : graph.value(staged).users) {
    if (!group.inside.count(use.node)) continue;
    const ir::Node& node = graph.node(use.node);
    if (reduces_planes(group, *schedule, node, staged)) folded.push_back(node.outputs[0]);
  }
  if (folded.empty()) return 0;
  // A tile's part of a plane of more than a warp, or of a size that does not divide
  // one, is summed through [block] floats of the arena; the co-resident blocks must
  // still fit.
  const int64_t part = tile.tile_h * tile.tile_w;
  int64_t arena = schedule->shared_bytes;
  int64_t sum_offset = -1;
  if (part > 32 || 32 % part != 0) {
    sum_offset = align_to(arena, 16);
    arena = sum_offset + schedule->block * 4;
    const int64_t resident = std::max(1, profile.max_threads_per_sm / schedule->block);
    if (arena > profile.shared_memory_per_block ||
        arena * resident > profile.shared_memory_per_sm) {
      return 0;
    }
  }
  tile.plane_reductions = folded;
  tile.sum_offset = sum_offset;
  if (sum_offset >= 0) {
    schedule->shared_bytes_requested += arena - schedule->shared_bytes;
    schedule->shared_bytes = arena;
  }
  if (!tile.whole_planes()) {
    // The reductions keep their stage, a thread per plane adding its parts.
    const std::vector<int64_t>& dims = dims_of(graph, staged);
    const int64_t planes = dims[0] * dims[1];
    tile.partials_offset = align_to(schedule->workspace_bytes, kWorkspaceAlignment);
    schedule->workspace_bytes =
        tile.partials_offset +
        align_to(planes * tile.tiles_h * tile.tiles_w * 4, kWorkspaceAlignment);
    for (ir::ValueId id : folded) {
      const ValueSchedule& value = schedule->values.at(id);
      int64_t& work = (*stage_work)[value.level];
      work = std::max<int64_t>(work - stage_threads(graph, id, value), 0) + elements_of(graph, id);
    }
    return static_cast<int>(folded.size());
  }
  const int staged_level = schedule->values.at(staged).level;
  for (ir::ValueId id : folded) schedule->values.at(id).level = staged_level;
  drop_empty_levels(group, schedule, stage_work);
  return static_cast<int>(folded.size());
}

}  // namespace stitch::emit
