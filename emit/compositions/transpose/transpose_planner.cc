// The transpose composition's planner (emit/schedule.h, 1c.).
#include "emit/compositions/transpose/transpose_planner.h"

#include <algorithm>
#include <vector>

#include "emit/compositions/group_facts.h"
#include "emit/cuda_text.h"
#include "emit/op_lowering.h"

namespace stitch::emit {
namespace {

// 1c. The transpose composition (see schedule.h): a group of one Transpose reading
// from outside the group. Its dims collapse (size-1 dims dropped, input axes that stay
// adjacent in the output merged) to a batched swap of the last two; both swapped dims
// of at least kTransposeTileMin elements (narrower ones read or write in short runs
// either way).
constexpr int64_t kTransposeTile = 32;
constexpr int64_t kTransposeTileMin = 8;

bool plan_transpose(const ir::Graph& graph, const std::vector<ir::NodeId>& ordered,
                    const cost_model::DeviceProfile& profile, GroupSchedule* schedule) {
  if (ordered.size() != 1) return false;
  const ir::Node& node = graph.node(ordered[0]);
  if (!permutes_axes(node) || node.inputs.size() != 1) return false;
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

Result<RuleOutcome> try_transpose(PlanningContext& context, GroupSchedule* schedule) {
  const GroupFacts& group = context.group;
  if (!plan_transpose(group.graph, group.ordered, context.profile, schedule)) {
    return RuleOutcome(Refusal{"transpose", ""});
  }
  const TransposePlan& transpose = *schedule->as<TransposePlan>();
  schedule->why = "a Transpose that moves its input's last axis ([" + num(transpose.batch) + ", " +
                  num(transpose.rows) + ", " + num(transpose.cols) +
                  "] -> [.., cols, rows]): 32 x 32 tiles through shared memory keep both the "
                  "reads and the writes coalesced";
  return RuleOutcome();
}

}  // namespace stitch::emit
