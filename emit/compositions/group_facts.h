// What the composition planners share (internal to emit/): the facts every rule of
// build_schedule reads about a group, computed once (as XLA's HloFusionAnalysis is
// for its emitters), and the launch helpers. See emit/schedule.h for the algorithm.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cost_model/device_profile.h"
#include "emit/schedule.h"
#include "ir/core/graph.h"

namespace stitch::emit {

inline constexpr int kGlobalBlock = 256;  // threads per block of the grid-stride stages
inline constexpr int64_t kWorkspaceAlignment = 256;
// Split rows and sliced reductions: at least 2 elements per thread of a 512-thread slice.
inline constexpr int64_t kMinSliceElements = 1024;

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

inline int64_t align_to(int64_t bytes, int64_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

// Blocks of schedule.block threads resident at once on the device.
int64_t blocks_per_wave(const cost_model::DeviceProfile& profile, const GroupSchedule& schedule);

// Blocks of schedule.block threads for a grid-stride loop over `threads` items: enough
// to cover them, at most one wave.
int64_t wave_grid(int64_t threads, const cost_model::DeviceProfile& profile,
                  const GroupSchedule& schedule);

bool is_gemm(const ir::Node& node);

// A node as GroupSchedule::why names it: `name (OpType)`.
std::string node_label(const ir::Node& node);

// Reads of `operand` by `reader` at the reader's own flat index.
bool reads_at_same_index(const ir::Graph& graph, const ir::Node& reader, ir::ValueId operand);

// Where a written value goes: a group output to its output buffer, an intermediate to
// the next slot of the workspace (`*workspace`, the bytes used so far, advances).
void place_written_value(const ir::Graph& graph, ir::ValueId id, bool group_output,
                         ValueSchedule* value, int64_t* workspace);

// Threads a stage needs to write `value`.
int64_t stage_threads(const ir::Graph& graph, ir::ValueId id, const ValueSchedule& value);

// Whether every value depending on `source` is read at its reader's own flat index
// and every group output depends on it; with `moved`, outputs may also be reached
// through one Transpose (and views), each recorded in `moved`.
bool outputs_at_same_index(const ir::Graph& graph, const std::vector<ir::NodeId>& ordered,
                           const std::set<ir::ValueId>& outputs, ir::ValueId source,
                           std::map<ir::ValueId, ir::NodeId>* moved = nullptr);

}  // namespace stitch::emit
