// The staged stencil's planners (emit/schedule.h, 3c. and 4b.), used by the staged
// rule (global/stage_planner.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "emit/compositions/group_facts.h"

namespace stitch::emit {

// 3c.: the thread composition's one stencil staged in tiles, when its window reuses
// enough; the plan becomes a StencilPlan. False, schedule untouched, otherwise.
bool plan_stencil_tile(const GroupFacts& group, const cost_model::DeviceProfile& profile,
                       GroupSchedule* schedule);

// 4b.: the global composition's one stencil staged by the one stage that evaluates it;
// the GlobalPlan gets the tile. False, schedule untouched, otherwise.
bool plan_global_stencil_tile(const GroupFacts& group, const cost_model::DeviceProfile& profile,
                              GroupSchedule* schedule);

// 4d.: after 4b., the ReduceMean and ReduceSum nodes that reduce the staged value over
// its spatial axes are computed in its stage when every tile covers whole planes
// (StencilTile::plane_reductions); the levels left empty are dropped, and
// `stage_work` (threads by level) follows the new numbering. Returns how many.
int fold_plane_reductions(const GroupFacts& group, const cost_model::DeviceProfile& profile,
                          GroupSchedule* schedule, std::map<int, int64_t>* stage_work);

// "[planes, tile_h, tile_w]" of a staged tile ("[planes, tile_w]" for a 1-D window).
std::string stencil_tile_text(const ir::Graph& graph, const StencilTile& tile);

}  // namespace stitch::emit
