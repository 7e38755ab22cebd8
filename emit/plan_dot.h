// out/plan.dot: the fusion plan as a Graphviz picture. Each fused group is a
// coloured cluster labelled with its kernel; library calls (large GEMM, Conv) are
// boxes; other unfused ops are plain ellipses; graph inputs and outputs are
// diamonds. Edges are the data dependencies (initializers are left out: they would
// swamp the picture).
#pragma once

#include <string>
#include <vector>

#include "fusion/planner.h"
#include "ir/core/graph.h"

namespace stitch::emit {

// `kernel_names` has one entry per planned group.
std::string render_plan_dot(const ir::Graph& graph, const fusion::PlannerResult& plan,
                            const std::vector<std::string>& kernel_names);

}  // namespace stitch::emit
