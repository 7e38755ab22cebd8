// The stencils' charges (emit/compositions/charges.h).
#include <algorithm>
#include <cmath>
#include <optional>

#include "emit/compositions/charges.h"
#include "ir/core/op_registry.h"
#include "ir/core/window.h"

namespace stitch::emit {

// A lane evaluates its share of each stencil's elements (at least one), each walking
// every tap: one read of what the input reads inline, and the weight. A staged
// stencil (3c., 4b.) instead costs, per tile, a lane's share of the input tile (each
// element one read of what the input reads inline) and its taps' weights (the taps
// read shared memory), or with staged filters its share of the tile's filters.
void charge_stencils(const ChargeContext& context, cost_model::KernelShape* shape) {
  const ir::Graph& graph = context.graph;
  const GroupSchedule& schedule = context.schedule;
  const StencilTile* tile = staged_tile(schedule);
  for (ir::NodeId id : schedule.boundary.ordered_nodes) {
    const ir::Node& node = graph.node(id);
    if (ir::op_kind(node) != ir::OpKind::kStencil || context.lanes <= 0) continue;
    const std::optional<ir::Stencil> stencil = ir::stencil_of(graph, node);
    if (!stencil) continue;
    const double evaluations =
        std::max(1.0, std::ceil(static_cast<double>(elements_of(graph, node.outputs[0])) /
                                evaluating_lanes(context, node.outputs[0])));
    const double reads = element_reads(context, node.inputs[0]);
    const double weight = stencil->weighted ? 1.0 : 0.0;
    if (tile && id == tile->stencil) {
      const double tiles = std::ceil(static_cast<double>(tile->tiles) /
                                     static_cast<double>(std::max<int64_t>(schedule.grid, 1)));
      const double staged =
          std::ceil(static_cast<double>(tile->in_planes * tile->tile_in_h * tile->tile_in_w) /
                    static_cast<double>(schedule.block));
      // Staged filters: a lane's share of the tile's filters instead of a weight per tap.
      const double weights = tile->filter_offset >= 0
                                 ? std::ceil(static_cast<double>(tile->planes * tile->filter_row) /
                                             static_cast<double>(schedule.block))
                                 : static_cast<double>(stencil->taps) * weight;
      shape->stencil_load_chain += tiles * (staged * reads + weights);
      continue;
    }
    shape->stencil_load_chain +=
        evaluations * static_cast<double>(stencil->taps) * (reads + weight);
  }
}

}  // namespace stitch::emit
