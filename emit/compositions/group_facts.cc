// What the composition planners share: the group's facts and the launch helpers
// (see group_facts.h).
#include "emit/compositions/group_facts.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "emit/op_lowering.h"
#include "ir/core/gemm_shape.h"
#include "ir/core/op_registry.h"

namespace stitch::emit {

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

void place_written_value(const ir::Graph& graph, ir::ValueId id, bool group_output,
                         ValueSchedule* value, int64_t* workspace) {
  if (group_output) {
    value->storage = Storage::kOutput;
    return;
  }
  value->storage = Storage::kWorkspace;
  value->offset = *workspace;
  *workspace += align_to(graph.value(id).type.num_bytes(), kWorkspaceAlignment);
}

// Threads a stage needs to write `value`: one per element, 32 per warp work item, a
// block per column work item; a warp per output when it combines partials.
int64_t stage_threads(const ir::Graph& graph, ir::ValueId id, const ValueSchedule& value) {
  const int64_t outputs = elements_of(graph, id);
  if (value.lanes_over_k) return 32 * outputs;
  if (value.warp_mma) {  // 32 per 16 x 8 piece
    const std::optional<ir::GemmShape> gemm =
        ir::gemm_shape(graph, graph.node(graph.value(id).producer));
    if (gemm) return 32 * gemm->batch * ((gemm->m + 15) / 16) * ((gemm->n + 7) / 8);
  }
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
                           std::map<ir::ValueId, ir::NodeId>* moved) {
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
        } else if (moved != nullptr && permutes_axes(node) && i == 0 && through == ir::kNoId) {
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

}  // namespace stitch::emit
